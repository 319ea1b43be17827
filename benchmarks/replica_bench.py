"""CPU cost of the replica layer's hot paths, in process (a benchmark, not a test).

    .venv/bin/python benchmarks/replica_bench.py [--batches 20000] [--reps 5] [SRC ...]

Drives ``ReplicaManager`` directly on a real ``LogManager`` in a temporary directory (no
sockets, no clients), so the numbers show the replica layer's own cost and are far less
disturbed by other work on a shared machine than an end-to-end run:

* ``produce acks=1``: ``append`` of 1-KiB batches (10 records of 100 B) to a single-replica
  partition;
* ``produce+replicate``: the same appends to a partition led here with two followers, each
  append followed by one follower fetch per follower (``read_all`` with ``replica_id``),
  which records the followers' fetch state and moves the high watermark — the acks=all path
  without the network;
* ``consume``: ``read_all`` of the whole log in 1-MiB fetches, read_uncommitted.

Each figure is operations per CPU second (``time.process_time``), the median of ``--reps``.
With ``SRC`` checkouts given, each repetition runs every checkout in turn in a fresh
subprocess (A/B/A/B…), and the table shows each one's medians and the ratio to the first.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

T0 = 1_700_000_000_000


@dataclass(frozen=True)
class _PartitionImage:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple
    isr: tuple
    partition_epoch: int = 0


@dataclass(frozen=True)
class _TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict
    configs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class _Image:
    topics: dict


class _Clock:
    def now_ms(self) -> int:
        return T0


def run_once(batches: int) -> dict:
    """One measurement in this process, with whatever ``kbroker`` is on sys.path."""
    from kbroker.config.broker import BrokerConfig
    from kbroker.log.config import LogConfig
    from kbroker.log.manager import LogManager
    from kbroker.replica import FetchSpec, ReplicaManager
    from kbroker.wire import records as rec

    batch = rec.build_batch([rec.SimpleRecord(None, b"x" * 100, (), T0) for _ in range(10)])
    out = {}
    with tempfile.TemporaryDirectory(prefix="replica-bench-") as tmp:
        config = BrokerConfig.from_dict({"log.dirs": tmp, "node.id": "1"})
        logs = LogManager([Path(tmp)], LogConfig.from_properties(config.log_config_defaults()),
                          _Clock().now_ms)
        logs.load()
        broker = SimpleNamespace(config=config, clock=_Clock(), logs=logs, transactions=None)
        rm = ReplicaManager(broker)
        rm.apply_image(_Image({
            "single": _TopicImage("single", uuid.uuid4(), {0: _PartitionImage(0, 1, 0, (1,), (1,))}),
            "rf3": _TopicImage("rf3", uuid.uuid4(),
                               {0: _PartitionImage(0, 1, 0, (1, 2, 3), (1, 2, 3))}),
        }))

        start = time.process_time()
        for _ in range(batches):
            rm.append("single", 0, batch, required_acks=1)
        out["produce acks=1 (batches/CPU s)"] = batches / (time.process_time() - start)

        offsets = {2: 0, 3: 0}
        start = time.process_time()
        for _ in range(batches):
            rm.append("rf3", 0, batch, required_acks=-1)
            for rid in (2, 3):
                off = offsets[rid]
                spec = FetchSpec("rf3", 0, off, 1 << 20, current_leader_epoch=0,
                                 last_fetched_epoch=0 if off else -1, log_start_offset=0)
                [r] = rm.read_all([spec], 1 << 20, isolation_level=0, replica_id=rid)
                offsets[rid] = off + 10 if r.records is not None else off
        elapsed = time.process_time() - start
        hw = rm.get_partition("rf3", 0).high_watermark
        if hw != batches * 10 - 10 and hw != batches * 10:
            raise SystemExit(f"high watermark {hw} after {batches} replicated batches")
        out["produce+replicate RF=3 (batches/CPU s)"] = batches / elapsed

        fetches = 0
        start = time.process_time()
        off = 0
        end = rm.get_partition("single", 0).high_watermark
        while off < end:
            [r] = rm.read_all([FetchSpec("single", 0, off, 1 << 20)], 1 << 20, isolation_level=0)
            data = r.records.read_bytes()
            last = off
            for pos, h in rec.iter_batches(data):
                last = h.base_offset + h.last_offset_delta + 1
            off = last
            fetches += 1
        out["consume (MB/CPU s)"] = (end // 10) * len(batch) / 1e6 / (time.process_time() - start)
        logs.shutdown()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("src", nargs="*", type=Path)
    a = ap.parse_args()
    if a.once:
        print(json.dumps(run_once(a.batches)))
        return
    srcs = a.src or [Path(__file__).resolve().parents[1]]
    runs: dict[Path, list[dict]] = {s: [] for s in srcs}
    for _ in range(a.reps):
        for s in srcs:
            env = dict(os.environ, PYTHONPATH=str(s.resolve()))
            r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--once",
                                "--batches", str(a.batches)], env=env, cwd=s,
                               capture_output=True, text=True, check=True)
            runs[s].append(json.loads(r.stdout.strip().splitlines()[-1]))
    keys = list(runs[srcs[0]][0])
    print(f"load average {os.getloadavg()[0]:.1f}; median of {a.reps}, {a.batches} batches")
    print("| scenario | " + " | ".join(str(s) for s in srcs) + " | ratio to the first |")
    print("|---|" + "---:|" * (len(srcs) + 1))
    for k in keys:
        meds = [statistics.median(r[k] for r in runs[s]) for s in srcs]
        ratios = " / ".join(f"{m / meds[0]:.3f}" for m in meds[1:]) or "—"
        print(f"| {k} | " + " | ".join(f"{m:,.0f}" for m in meds) + f" | {ratios} |")


if __name__ == "__main__":
    main()
