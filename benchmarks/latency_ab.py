"""Two kbroker source trees side by side on the latency rows' client: which one a change made faster end to end (not a test).

    .venv/bin/python -m benchmarks.latency_ab OTHER_TREE [--rates 500,1000] [--rounds 10]
                                              [--seconds 6] [--busy] [--split]

One ``kbroker serve`` per tree — this checkout ("this") and OTHER_TREE ("other"; a second
checkout, e.g. ``git worktree add /tmp/base main``) — both started first and left running;
then, round after round, every rate on each broker in turn, the order reversed every other
round. A row is the latency rows' own client (`rdkafka_load latency`: one librdkafka
producer at a fixed rate with ``linger.ms=0``, 1 KiB records, acks=1, a consumer in the same
process) on a fresh one-partition topic; with ``--busy`` the rows' CPU-bound process runs
beside it (the "competing" rows). A first row per broker warms it up and is not counted.
Each row is printed as it ends; then, per rate and tree, the medians of p50 and p99, and in
how many rounds each tree had the lower p50.

``--split`` creates the topics with ``message.timestamp.type=LogAppendTime`` and prints each
row's p50 and p99 of two parts of the latency (`rdkafka_load latency --split`): from the
send to the broker's append time (the producer's queue, the sockets, the broker's reading
and append) and from the append time to the receive (the fetch, the consumer's queue and
its Python thread). The append time is whole milliseconds of the broker's wall clock, and
LogAppendTime makes the broker rewrite each batch's timestamps, so these rows are for
finding where the time goes, not for comparing with the other rows.

A change on the request path moves these figures by less than the machine moves between
minutes, which is why the trees alternate and the pairs are counted: one run of each says
little. Both brokers run this interpreter; a tree without its build cache of generated code
compiles it when it starts (start-up only). The sessions before this tool used a throwaway
script for the same comparison (benchmarks/README.md, "The p50 at low rates", "A woken
fetch's time inside the broker", the nineteenth session's section).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from benchmarks.harness.admin import create_topics
from benchmarks.harness.brokers import ROOT, KBrokerBench
from benchmarks.harness.latency import competing_process, latency_client
from compat_tests.runner import KBrokerProcess


class TreeBroker(KBrokerBench):
    """kbroker from the source tree ``root``: ``python -m kbroker serve`` with ``root`` first on
    the module path (this interpreter and its packages)."""

    def __init__(self, workdir: Path, root: Path):
        super().__init__(workdir)
        self.root = root

    def command(self) -> list[str]:
        cmd = super().command()
        return [sys.executable, "-m", "kbroker", *cmd[cmd.index("serve"):]]

    def env(self) -> dict[str, str]:
        env = KBrokerProcess.env(self)
        env["PYTHONPATH"] = str(self.root)
        return env

    def check(self) -> None:
        """The broker's ``kbroker.__main__`` (what ``-m kbroker`` runs) comes from ``root``:
        this venv's editable install of the checkout must not answer for a tree that lacks
        a module."""
        found = subprocess.run(
            [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('kbroker.__main__').origin)"],
            env=self.env(), cwd=self.workdir, capture_output=True, text=True, check=True).stdout.strip()
        if not Path(found).resolve().is_relative_to(self.root):
            raise SystemExit(f"kbroker from {found}, not from {self.root}")


def row(bootstrap: str, rate: int, seconds: float, busy: bool, split: bool = False) -> dict:
    """One latency row on a fresh topic: the client's JSON result (p50_ms, p99_ms, ...)."""
    topic = f"ab-{rate}-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [(topic, 1)],
                  config={"message.timestamp.type": "LogAppendTime"} if split else None)
    with competing_process(busy):
        return latency_client(bootstrap, topic, rate, seconds, "1", *(["--split"] if split else []))


def _split_text(out: dict) -> str:
    """A row's two parts (``--split``), or nothing when the row has none."""
    if "to_append_p50_ms" not in out:
        return ""
    return (f" | to append p50 {out['to_append_p50_ms']:.2f} p99 {out['to_append_p99_ms']:.2f},"
            f" after p50 {out['after_append_p50_ms']:.2f} p99 {out['after_append_p99_ms']:.2f}")


def summary(results: dict[tuple[str, int], list[dict]], names: list[str], rates: list[int]) -> list[str]:
    """Per rate and tree: medians of p50 and p99 and the rounds with the lower p50."""
    lines = ["| rate | tree | p50 ms (median) | p99 ms (median) | rounds with the lower p50 |",
             "|---:|---|---:|---:|---:|"]
    for rate in rates:
        pairs = list(zip(*(results[(n, rate)] for n in names)))
        for i, name in enumerate(names):
            rows = results[(name, rate)]
            wins = sum(1 for p in pairs if p[i]["p50_ms"] < min(r["p50_ms"] for r in p[:i] + p[i + 1:]))
            lines.append(f"| {rate:,} | {name} | {statistics.median(r['p50_ms'] for r in rows):.3f} "
                         f"| {statistics.median(r['p99_ms'] for r in rows):.3f} | {wins} of {len(pairs)} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("other", type=Path, help="the second source tree (a checkout of kbroker)")
    ap.add_argument("--rates", default="500,1000", help="records/s, comma-separated")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=6.0, help="each row's length")
    ap.add_argument("--busy", action="store_true", help="a CPU-bound process beside each row")
    ap.add_argument("--split", action="store_true",
                    help="LogAppendTime topics: each row's latency split at the broker's append")
    ap.add_argument("--warm-up", type=float, default=2.0,
                    help="seconds of a first, uncounted row per broker (its code paths' first "
                         "runs: handlers load on first use); 0: none")
    args = ap.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",")]
    trees = {"this": ROOT, "other": args.other.resolve()}
    if not (trees["other"] / "kbroker" / "__init__.py").exists():
        raise SystemExit(f"{trees['other']} is not a kbroker source tree")
    work = Path(tempfile.mkdtemp(prefix="latency-ab-"))
    brokers = {name: TreeBroker(work / name, root) for name, root in trees.items()}
    results: dict[tuple[str, int], list[dict]] = {(n, r): [] for n in brokers for r in rates}
    try:
        for b in brokers.values():
            b.workdir.mkdir(parents=True, exist_ok=True)
            b.check()
            b.start()
        if args.warm_up > 0:
            for b in brokers.values():
                row(b.bootstrap_servers, rates[0], args.warm_up, False)
        names = list(brokers)
        for i in range(args.rounds):
            order = names if i % 2 == 0 else names[::-1]
            for rate in rates:
                for name in order:
                    out = row(brokers[name].bootstrap_servers, rate, args.seconds, args.busy,
                              args.split)
                    results[(name, rate)].append(out)
                    print(f"round {i + 1} {name:5} {rate:>7,}/s p50 {out['p50_ms']:.3f} "
                          f"p99 {out['p99_ms']:.3f} ms ({out['records']}/{out['expected']})"
                          + _split_text(out),
                          flush=True)
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nthis: {trees['this']}\nother: {trees['other']}"
          + (" (a CPU-bound process beside each row)" if args.busy else ""))
    print("\n".join(summary(results, list(brokers), rates)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
