#!/usr/bin/env python3
"""kbroker vs Apache Kafka on this machine: `make bench` (full) and `make bench-quick`.

    .venv/bin/python -m benchmarks.bench [--quick] [--brokers kbroker,kafka] [--reps N]
                                        [--only produce,consume,latency,startup,memory,metadata,security,scale]
                                        [--sequential] [--publish] [--profile DIR] [--karapace-venv DIR]

Runs the plan of benchmarks/harness/plan.py against both brokers. The full plan's start-up
rows, load rows (produce, consume, single-node latency) and security rows are measured
paired, first: every row's repetitions alternating between the brokers (A B, B A, ...;
benchmarks/harness/paired.py), one broker of each kind alive through each load group; then
every other row one broker at a time, each broker in turn (benchmarks/harness/run.py).
`--sequential` runs every row of one broker, then every row of the other, as before; the
quick plan (one broker per kind shared by its rows) always does. Then writes into benchmarks/results/<plan>/:
results.json (raw values of every repetition), results.md (medians and kbroker/Kafka ratios)
and PNG charts. `--publish` also copies the table into benchmarks/README.md (between the
`bench-table` markers) and the charts into benchmarks/charts/. `--profile DIR` records a
py-spy profile of kbroker during the loads (raw collapsed stacks, for flame graphs).
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import plan as plans  # noqa: E402
from benchmarks.harness import report  # noqa: E402
from benchmarks.harness.run import Results, Session, log, run_paired_sessions  # noqa: E402
from compat_tests.kafka_runner import kafka_libs, kafka_version  # noqa: E402

HERE = ROOT / "benchmarks"
README = HERE / "README.md"
CHARTS = HERE / "charts"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, {mem / 2**30:.0f} GiB, "
            f"Linux {platform.release().split('-')[0]}")


def publish(md_text: str, pngs: list[Path]) -> None:
    CHARTS.mkdir(exist_ok=True)
    for p in pngs:
        shutil.copy(p, CHARTS / p.name)
    text = README.read_text()
    new = re.sub(r"(<!-- bench-table:start -->\n).*?(<!-- bench-table:end -->)",
                 lambda m: m.group(1) + md_text + m.group(2), text, flags=re.S)
    README.write_text(new)
    log(f"published the table into {README.relative_to(ROOT)} and charts into "
        f"{CHARTS.relative_to(ROOT)}/")


def idle_note(idle: dict[str, dict]) -> str:
    """One line for the table's notes: what each idle broker spent while the other was
    measured (Results.idle_summary)."""
    parts = [f"{name} {o['cpu_s']:.1f} cpu-s in {o['wall_s']:.0f} s ({o['share']:.1%} of a "
             f"core; at most {o['max_share']:.1%}, {o['max_share_row'] or '-'})"
             for name, o in idle.items()]
    return ("paired load rows, repetitions alternating between the brokers; the idle broker "
            "while the other was measured: " + "; ".join(parts))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    ap.add_argument("--brokers", default="kbroker,kafka")
    ap.add_argument("--reps", type=int, help="override the plan's repetitions")
    ap.add_argument("--only", help="comma-separated groups to run")
    ap.add_argument("--sequential", action="store_true",
                    help="every row of one broker, then of the next (no paired load rows)")
    ap.add_argument("--publish", action="store_true",
                    help="write the table into benchmarks/README.md and charts into benchmarks/charts")
    ap.add_argument("--profile", type=Path, help="py-spy profile of kbroker's loads into DIR")
    ap.add_argument("--scale-sizes", metavar="P,C,M,N",
                    help="scale rows' sizes: partitions, connections, group members, idempotent "
                         "producers; M may be several group sizes joined by '/', each a row; "
                         "0 leaves a row out (default: the plan's; full "
                         "100000,10000,100/250/500/1000,1000)")
    ap.add_argument("--latency-rates", metavar="R,...", help="fixed-rate latency rows, records/s")
    ap.add_argument("--out", type=Path, help="results folder (default benchmarks/results/<plan>)")
    ap.add_argument("--karapace-venv", type=Path, default=os.environ.get("KBROKER_BENCH_KARAPACE"),
                    help="a Karapace install: adds the http rows, kbroker's registry and REST "
                         "gateway beside Karapace's (benchmarks/harness/http_reference.py)")
    a = ap.parse_args(argv)

    plan = plans.quick() if a.quick else plans.full()
    if a.reps:
        plan.reps = a.reps
        plan.consume_reps = a.reps
        plan.startup_reps = a.reps
    if a.scale_sizes:
        p, c, m, n = a.scale_sizes.split(",")
        plan.scale = plans.Scale(partitions=int(p), connections=int(c), producers=int(n),
                                 group_members=tuple(int(x) for x in m.split("/")))
    if a.latency_rates:
        plan.latency_rates = tuple(int(x) for x in a.latency_rates.split(","))
    only = set(a.only.split(",")) if a.only else None
    out = a.out or HERE / "results" / plan.name
    out.mkdir(parents=True, exist_ok=True)
    kafka_libs()  # fetch the jars first if needed
    import kbroker  # noqa: F401 - fail early when the checkout is not importable
    from benchmarks.harness.brokers import compile_kbroker
    compile_kbroker()
    names = a.brokers.split(",")
    results = Results({
        "date": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": machine(),
        "kafka_version": kafka_version(), "python": f"Python {platform.python_version()}",
        "plan": plan.name, "reps": plan.reps, "startup_reps": plan.startups, "notes": list(plan.notes),
        "brokers": names, "loadavg_start": os.getloadavg()[0]})
    paired = not (a.sequential or plan.shared_broker or len(names) < 2)
    results.meta["order"] = "paired" if paired else "sequential"
    started = time.monotonic()

    def save() -> None:
        results.meta["duration_s"] = round(time.monotonic() - started, 1)
        results.meta["loadavg_end"] = os.getloadavg()[0]
        results.save(out / "results.json")

    with tempfile.TemporaryDirectory(prefix="kbroker-bench-") as tmp:
        sessions = [Session(name, plan, results, Path(tmp), only=only, profile=a.profile)
                    for name in names]
        if paired:
            log(f"=== {' and '.join(names)}, paired: start-up, load and security rows ===")
            t0 = time.monotonic()
            run_paired_sessions(sessions)
            results.meta["paired_seconds"] = round(time.monotonic() - t0, 1)
            idle = results.idle_summary()
            if idle:
                results.meta["idle_neighbour"] = idle
                results.meta["notes"].append(idle_note(idle))
            save()
        for s in sessions:
            log(f"=== {s.name} ===")
            t0 = time.monotonic()
            s.run(paired=paired)
            results.meta[f"{s.name}_seconds"] = round(time.monotonic() - t0, 1)
            save()
        if a.karapace_venv and (only is None or "http" in only):
            from benchmarks.harness import http_reference
            log("=== http rows: kbroker's registry and gateway beside Karapace's ===")
            http_reference.run(results, Path(tmp), a.karapace_venv,
                               http_reference.Sizes(reps=plan.reps), log)
            results.save(out / "results.json")
    md, pngs = report.write_all(out / "results.json", out)
    log(f"done in {(time.monotonic() - started) / 60:.1f} min: {md}")
    print(md.read_text())
    if a.publish:
        publish(md.read_text(), pngs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
