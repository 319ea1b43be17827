"""Instructions per produced batch on the append path, in process (a benchmark, not a test).

    .venv/bin/python -m benchmarks.append_cost_bench [--modes plain,idem] [SRC ...]

``ReplicaManager.append`` of 15-record batches of 1 KiB records (what the Java producer's
16 KiB ``batch.size`` holds, issue 32's 8-partition rows) to a single-replica partition on
a real ``LogManager`` in a temporary directory, as the produce handler calls it with the
request's own writable frame: ``plain`` (acks=1, no producer id) and ``idem`` (acks=all,
one idempotent producer, sequences in order). The count is exact and load-independent:
each case runs under ``valgrind --tool=callgrind`` twice, with 200 and 2,200 measured
appends after the same warm-up and the same batches built, and the difference of the two
totals is divided by 2,000 (start-up, imports and batch building cancel out;
``PYTHONHASHSEED=0`` keeps dict layouts the same). With ``SRC`` checkouts given, each is
measured in turn (its own ``kbroker`` on ``PYTHONPATH``) and the table shows each one.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace

SHORT, LONG = 200, 2200
WARM = 300
RECORDS = 15


def run_once(mode: str, n: int) -> None:
    """The measured loop, in this process (called under valgrind)."""
    from benchmarks.replica_bench import T0, _Clock, _Image, _PartitionImage, _TopicImage
    from kbroker.config.broker import BrokerConfig
    from kbroker.log.config import LogConfig
    from kbroker.log.manager import LogManager
    from kbroker.replica import ReplicaManager
    from kbroker.wire import records as rec

    records = [rec.SimpleRecord(None, b"v" * 1024, (), T0)] * RECORDS
    with tempfile.TemporaryDirectory(prefix="append-cost-") as tmp:
        config = BrokerConfig.from_dict({"log.dirs": tmp, "node.id": "1"})
        logs = LogManager([Path(tmp)], LogConfig.from_properties(config.log_config_defaults()),
                          _Clock().now_ms)
        logs.load()
        rm = ReplicaManager(SimpleNamespace(config=config, clock=_Clock(), logs=logs,
                                            transactions=None))
        rm.apply_image(_Image({"t": _TopicImage(
            "t", uuid.uuid4(), {0: _PartitionImage(0, 1, 0, (1,), (1,))})}))
        idem = mode == "idem"
        # the same batches for both run lengths: only the appends differ
        frames = [bytearray(rec.build_batch(records, producer_id=7, producer_epoch=0,
                                            base_sequence=i * RECORDS) if idem
                            else rec.build_batch(records))
                  for i in range(WARM + LONG)]
        acks = -1 if idem else 1
        for i in range(WARM + n):
            r = rm.append("t", 0, memoryview(frames[i]), required_acks=acks, now_ms=T0)
        if r.base_offset != (WARM + n - 1) * RECORDS:
            raise SystemExit(f"appended at {r.base_offset}")
        logs.shutdown()


def measure(src: Path, mode: str) -> float:
    """Instructions per append of ``mode`` with the ``kbroker`` of checkout ``src``."""
    from benchmarks.harness.callgrind import instructions   # here: the child imports only kbroker
    env = dict(os.environ, PYTHONPATH=str(src.resolve()), PYTHONHASHSEED="0")
    totals = [instructions([str(Path(__file__).resolve()), "--once", mode, str(n)], cwd=src, env=env)
              for n in (SHORT, LONG)]
    return (totals[1] - totals[0]) / (LONG - SHORT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="plain,idem")
    ap.add_argument("--once", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    ap.add_argument("src", nargs="*", type=Path)
    a = ap.parse_args()
    if a.once:
        run_once(a.once[0], int(a.once[1]))
        return
    srcs = a.src or [Path(__file__).resolve().parents[1]]
    modes = a.modes.split(",")
    print("| checkout | " + " | ".join(f"{m}: instructions per append" for m in modes) + " |")
    print("|---|" + "---:|" * len(modes))
    for s in srcs:
        print(f"| {s} | " + " | ".join(f"{measure(s, m):,.0f}" for m in modes) + " |")


if __name__ == "__main__":
    main()
