"""Merge several runs' ``results.json`` into one: every value of every run kept, so the
table (``harness/report.py``) shows medians over the runs.

The scale rows run once per broker per invocation; on a shared machine the order matters
(a later run meets a different load), so issue 32's rows were measured as separate
invocations with the brokers' order alternating, then merged:

    .venv/bin/python -m benchmarks.bench --only scale --brokers kbroker,kafka --out R/1
    .venv/bin/python -m benchmarks.bench --only scale --brokers kafka,kbroker --out R/2
    .venv/bin/python -m benchmarks.bench --only scale --brokers kbroker,kafka --out R/3
    .venv/bin/python -m benchmarks.merge_results R/1 R/2 R/3 --out R/merged

The merged meta names every run (date, load averages at start and end).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.harness import report


def merge(runs: list[dict]) -> dict:
    out = json.loads(json.dumps(runs[0]))
    out["meta"]["runs"] = [{k: r["meta"].get(k) for k in
                            ("date", "brokers", "loadavg_start", "loadavg_end", "duration_s")}
                           for r in runs]
    out["meta"]["reps"] = len(runs)
    out["meta"]["loadavg_start"] = min(r["meta"].get("loadavg_start", 0) for r in runs)
    out["meta"]["loadavg_end"] = max(r["meta"].get("loadavg_end", 0) for r in runs)
    out["meta"]["duration_s"] = sum(r["meta"].get("duration_s", 0) for r in runs)
    by_id = {sc["id"]: sc for sc in out["scenarios"]}
    for r in runs[1:]:
        for sc in r["scenarios"]:
            mine = by_id.get(sc["id"])
            if mine is None:
                by_id[sc["id"]] = json.loads(json.dumps(sc))
                out["scenarios"].append(by_id[sc["id"]])
                continue
            for key in ("values", "secondary", "raw"):
                for broker, vals in (sc.get(key) or {}).items():
                    mine.setdefault(key, {}).setdefault(broker, []).extend(vals)
        failed = r["meta"].get("failed") or []
        out["meta"].setdefault("failed", []).extend(failed)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="folders holding a results.json")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    runs = [json.loads((d / "results.json").read_text()) for d in a.runs]
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "results.json").write_text(json.dumps(merge(runs), indent=1))
    md, _ = report.write_all(a.out / "results.json", a.out)
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
