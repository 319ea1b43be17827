#!/usr/bin/env python3
"""Long-running Raft simulation soak: many seeds of ``tests/raft/sim.py``.

    python tools/raft_soak.py                      # seeds 0..4999, quick profile
    python tools/raft_soak.py --seeds 20000 --start 100000 --profile long
    python tools/raft_soak.py --seed 1234 [--trace] # reproduce one seed exactly
    python tools/raft_soak.py --profile dynamic     # KIP-853 voter changes
    python tools/raft_soak.py --profile upgrade     # a static quorum upgraded to kraft.version 1

Every failing seed is printed with its invariant, scenario, the last events and a one-line
reproduction command; the exit status is 1 if any seed failed.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.raft.sim import SimFailure, reproduce_command, run_seed  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, help="run just this seed")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--seeds", type=int, default=5000, help="how many seeds")
    ap.add_argument("--profile", choices=["quick", "long", "dynamic", "upgrade"], default="quick")
    ap.add_argument("--trace", action="store_true", help="print every simulated event")
    ap.add_argument("--max-failures", type=int, default=10)
    args = ap.parse_args(argv)

    seeds = [args.seed] if args.seed is not None else range(args.start, args.start + args.seeds)
    failed: list[int] = []
    events = ran = 0
    t0 = time.monotonic()
    for i, seed in enumerate(seeds):
        ran += 1
        try:
            sim = run_seed(seed, args.profile, trace=args.trace)
            events += sim.events
            if args.seed is not None:
                print(f"seed {seed}: ok ({sim.events} events, converged at {sim.converged_at} ms, "
                      f"{len(sim.checker.committed)} committed records, {len(sim.checker.leaders)} leader epochs)")
        except SimFailure as exc:
            failed.append(seed)
            print(exc, flush=True)
            print("-" * 72, flush=True)
            if len(failed) >= args.max_failures:
                break
        if args.seed is None and (i + 1) % 500 == 0:
            print(f"... {i + 1} seeds, {len(failed)} failed, {time.monotonic() - t0:.0f}s", flush=True)
    print(f"{ran} seeds, {events} events, {len(failed)} failed, {time.monotonic() - t0:.1f}s")
    for seed in failed:
        print("FAILED:", reproduce_command(seed, args.profile))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
