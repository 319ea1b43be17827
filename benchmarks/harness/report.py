"""From results.json to a Markdown table (medians, kbroker/Kafka ratios) and PNG charts.

    python -m benchmarks.harness.report benchmarks/results/full/results.json

Ratio = kbroker median / Kafka median for every scenario. Whether a ratio is good depends on
the metric: throughput wants ≥ 1, times and memory want ≤ 1. Scenarios with a target from
the issues (throughput ≥ 1 for 1 KiB records, p50 and p99 latency ≤ 1, start-up ≤ 0.05, idle
RSS ≤ 0.2) are marked ✅ / ❌; a latency row shows its p50 ratio beside the p99 one and is ✅
only when both meet the target.
"""
from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

BROKERS = ("kbroker", "kafka")
COLORS = {"kbroker": "#2b8cbe", "kafka": "#636363"}
GROUP_ORDER = ["produce", "consume", "latency", "startup", "memory", "metadata", "scale", "http"]


def _median(values) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(data: dict) -> list[dict]:
    rows = []
    for s in data["scenarios"]:
        med = {b: _median(s["values"].get(b, [])) for b in BROKERS}
        sec = {b: _median(s["secondary"].get(b, [])) for b in BROKERS}
        ratio = med["kbroker"] / med["kafka"] if med["kafka"] and not math.isnan(med["kafka"]) \
            else float("nan")
        target = s.get("target")
        ok = None
        if target is not None and not math.isnan(ratio):
            ok = ratio >= target if s["better"] == "higher" else ratio <= target
        # a latency row's target holds for its p50 as for its p99 (issue 32: "p50 and p99
        # latency <= 1.0"); a p50 of 0 on both sides (EndToEndLatency's whole milliseconds)
        # has no ratio and is not judged
        p50_ratio = float("nan")
        if (s.get("secondary_unit") or "").endswith("p50") and sec["kafka"] \
                and not math.isnan(sec["kafka"]) and not math.isnan(sec["kbroker"]):
            p50_ratio = sec["kbroker"] / sec["kafka"]
            if target is not None and ok is not None:
                ok = ok and p50_ratio <= target
        rows.append({**s, "median": med, "secondary_median": sec, "ratio": ratio, "ok": ok,
                     "p50_ratio": p50_ratio,
                     "n": {b: len(s["values"].get(b, [])) for b in BROKERS}})
    rows.sort(key=lambda r: GROUP_ORDER.index(r["group"]) if r["group"] in GROUP_ORDER else 99)
    return rows


def _fmt(v: float, unit: str) -> str:
    if v is None or math.isnan(v):
        return "—"
    if unit in ("records/s",):
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if abs(v) >= 0.1 else f"{v:.3f}"


def _startups(meta: dict) -> str:
    n = meta.get("startup_reps")
    return f" (start-up rows {n})" if n and n != meta["reps"] else ""


def markdown(data: dict) -> str:
    meta = data["meta"]
    rows = summarize(data)
    out = [f"Run: {meta['date']} · {meta['machine']} · Kafka {meta['kafka_version']} · "
           f"{meta['python']} · plan `{meta['plan']}`, median of {meta['reps']} "
           f"repetition(s){_startups(meta)} · whole run {meta.get('duration_s', 0) / 60:.1f} min · 1-min load "
           f"average {meta.get('loadavg_start', float('nan')):.1f} at start, "
           f"{meta.get('loadavg_end', float('nan')):.1f} at end", ""]
    out.append("| scenario | unit | kbroker | Kafka | kbroker/Kafka | better | target |")
    out.append("|---|---|---:|---:|---:|:-:|:-:|")
    for r in rows:
        unit = r["unit"]
        k, j = r["median"]["kbroker"], r["median"]["kafka"]
        cell_k, cell_j = _fmt(k, unit), _fmt(j, unit)
        if r.get("secondary_unit"):
            su = r["secondary_unit"]
            cell_k += f" ({_fmt(r['secondary_median']['kbroker'], su)} {su})"
            cell_j += f" ({_fmt(r['secondary_median']['kafka'], su)} {su})"
            unit_cell = unit
        else:
            unit_cell = unit
        ratio = "—" if math.isnan(r["ratio"]) else f"{r['ratio']:.2f}"
        p50 = r.get("p50_ratio", float("nan"))
        ratio = f"**{ratio}**" + ("" if math.isnan(p50) else f" (p50 {p50:.2f})")
        arrow = "↑" if r["better"] == "higher" else "↓"
        if r["target"] is None:
            target = ""
        else:
            sign = "≥" if r["better"] == "higher" else "≤"
            target = f"{sign} {r['target']:g} " + ("✅" if r["ok"] else "❌" if r["ok"] is False else "")
        out.append(f"| {r['title']} | {unit_cell} | {cell_k} | {cell_j} | {ratio} | {arrow} | "
                   f"{target} |")
    for note in meta.get("notes", []):
        out.append(f"\n_{note}_")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------- charts

def charts(data: dict, outdir: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summarize(data)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    meta = data["meta"]
    subtitle = f"{meta['date'][:10]} · {meta['machine']} · median of {meta['reps']}"

    # 1. the overview: one bar per scenario, ratio on a log axis, green when kbroker is better
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(rows) + 1.6))
    labels, values, colors = [], [], []
    for r in rows:
        if math.isnan(r["ratio"]) or r["ratio"] <= 0:
            continue
        # express every ratio as "how many times better" (>1 = kbroker better)
        good = r["ratio"] if r["better"] == "higher" else 1 / r["ratio"]
        labels.append(r["title"])
        values.append(good)
        colors.append("#31a354" if good >= 1 else "#de2d26")
    y = range(len(values))
    ax.barh(list(y), values, color=colors)
    ax.set_xscale("log")
    ax.axvline(1, color="black", lw=1)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.2f}×" if v >= 1 else f" 1/{1 / v:.1f}", va="center", fontsize=8)
    ax.set_xlabel("kbroker advantage (× better than Kafka; < 1 = Kafka better), log scale")
    ax.set_title(f"kbroker vs Apache Kafka\n{subtitle}", fontsize=10)
    lo, hi = min(values + [0.5]), max(values + [2])
    ax.set_xlim(lo / 1.5, hi * 3)
    fig.tight_layout()
    written.append(_save(fig, outdir / "overview.png"))

    # 2. per group: side-by-side absolute values
    for group, unit_label in (("produce", "MB/s"), ("consume", "MB/s"), ("latency", "ms"),
                              ("startup", "seconds"), ("memory", "MiB"), ("metadata", "seconds")):
        grows = [r for r in rows if r["group"] == group]
        if not grows:
            continue
        fig, ax = plt.subplots(figsize=(10, 0.55 * len(grows) + 1.6))
        n = len(grows)
        h = 0.38
        for k, b in enumerate(BROKERS):
            vals = [r["median"][b] for r in grows]
            pos = [i + (k - 0.5) * h for i in range(n)]
            ax.barh(pos, [0 if math.isnan(v) else v for v in vals], height=h, color=COLORS[b],
                    label="kbroker" if b == "kbroker" else "Apache Kafka")
            for p, v in zip(pos, vals):
                if not math.isnan(v):
                    ax.text(v, p, f" {_fmt(v, unit_label)}", va="center", fontsize=7)
        if group == "latency":
            # p50 as a marker on the p99 bars
            for k, b in enumerate(BROKERS):
                p50 = [r["secondary_median"][b] for r in grows]
                pos = [i + (k - 0.5) * h for i in range(n)]
                ax.scatter(p50, pos, marker="|", color="black", s=80, zorder=3,
                           label="p50" if k == 0 else None)
            unit_label = "ms (bar: p99, tick: p50)"
        ax.set_yticks(range(n))
        ax.set_yticklabels([r["title"] for r in grows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(unit_label)
        better = "higher is better" if grows[0]["better"] == "higher" else "lower is better"
        ax.set_title(f"{group} ({better})\n{subtitle}", fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
        xmax = max((v for r in grows for v in r["median"].values() if not math.isnan(v)),
                   default=1)
        ax.set_xlim(0, xmax * 1.25)
        fig.tight_layout()
        written.append(_save(fig, outdir / f"{group}.png"))
    return written


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def write_all(results_path: Path, outdir: Path) -> tuple[Path, list[Path]]:
    data = json.loads(results_path.read_text())
    md = outdir / "results.md"
    md.write_text(markdown(data))
    return md, charts(data, outdir)


if __name__ == "__main__":
    path = Path(sys.argv[1])
    md, pngs = write_all(path, path.parent)
    print(md.read_text())
    print("\n".join(str(p) for p in pngs))
