"""`make demo`: the clickstream pipeline end to end, finishing on its own.

1. A broker: whatever answers on --bootstrap (default 127.0.0.1:9092, where `make run` serves),
   or else an embedded kbroker started here exactly as `make run` starts it, on that address,
   with a temporary data folder, stopped at the end.
2. Two fresh topics, clicks-<run> (2 partitions) and page-counts-<run>.
3. The Spark job (job.py) starts; the generator (generator.py) sends a minute of clicks at 10×
   speed plus the end-of-stream marker; the job stops itself when its watermark has passed
   the last window; meanwhile the consumer (consumer.py) prints each count as it arrives.
4. The consumer reads the whole output topic and prints the table of counts per window and
   page. The demo then checks it against counts computed from the generated clicks in plain
   Python and exits 0 only if they match.

Usage: python -m examples.clickstream.run_demo [--bootstrap HOST:PORT] [--embedded]
       [--seconds 60] [--speedup 10] [--seed 7] [--report PATH]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from examples.clickstream import consumer, generator, job

ROOT = Path(__file__).resolve().parents[2]


def serving(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def start_embedded(bootstrap: str, data_dir: str) -> subprocess.Popen:
    """kbroker as `make run` starts it, but on `bootstrap` and with `data_dir`."""
    log = open(Path(data_dir) / "kbroker.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "kbroker", "serve", "--listen", bootstrap,
                             "--data-dir", str(Path(data_dir) / "data")],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not serving(bootstrap):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"embedded kbroker did not start; see {log.name}")
        time.sleep(0.2)
    return proc


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()])
    finally:
        admin.close()


def expected_counts(clicks) -> dict[tuple[int, str], int]:
    """Clicks per (10-second window start, page), counted in plain Python."""
    return dict(collections.Counter((c.ts - c.ts % 10_000, c.page) for c in clicks))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--embedded", action="store_true",
                    help="always start an embedded kbroker on --bootstrap (fails if it is taken)")
    ap.add_argument("--seconds", type=int, default=60, help="event time the clickstream covers")
    ap.add_argument("--speedup", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--report", help="also write the run's parameters and counts as JSON here")
    args = ap.parse_args(argv)

    work = tempfile.mkdtemp(prefix="kbroker-demo-")
    broker = None
    if args.embedded or not serving(args.bootstrap):
        print(f"demo: starting an embedded kbroker on {args.bootstrap} (data in {work})", flush=True)
        broker = start_embedded(args.bootstrap, work)
    else:
        print(f"demo: using the broker on {args.bootstrap}", flush=True)
    try:
        return run(args, work)
    finally:
        if broker is not None:
            broker.send_signal(signal.SIGTERM)
            try:
                broker.wait(30)
            except subprocess.TimeoutExpired:
                broker.kill()


def run(args, work: str) -> int:
    run_id = time.strftime("%Y%m%d-%H%M%S")
    clicks_topic, counts_topic = f"clicks-{run_id}", f"page-counts-{run_id}"
    create_topics(args.bootstrap, {clicks_topic: 2, counts_topic: 1})
    start_ms = generator.minute_start()
    clicks = generator.clicks(start_ms, args.seconds, seed=args.seed)
    last_window_end = max(c.ts for c in clicks) // 10_000 * 10_000 + 10_000
    print(f"demo: topics {clicks_topic} → {counts_topic}; {len(clicks)} clicks from "
          f"{consumer.utc(start_ms)} UTC (seed {args.seed}), {args.speedup:g}× real time", flush=True)

    spark = job.build_session()
    query = job.start(spark, args.bootstrap, clicks_topic, counts_topic,
                      os.path.join(work, "checkpoint"))
    stop = threading.Event()

    def show(row):
        print(f"  live: {consumer.utc(row['window_start_ms'])}+10s  {row['page']:<16} "
              f"{row['count']:>4}", flush=True)

    follower = threading.Thread(target=consumer.follow, args=(args.bootstrap, counts_topic, stop, show),
                                daemon=True)
    follower.start()
    try:
        generator.produce(args.bootstrap, clicks_topic, clicks, args.speedup)
        print("demo: all clicks sent; waiting for the watermark to close the last window", flush=True)
        job.run_until(query, last_window_end)
    finally:
        query.stop()
        spark.stop()
        time.sleep(1)
        stop.set()
        follower.join(10)

    counts = consumer.read_counts(args.bootstrap, counts_topic)
    print()
    print("clicks per page per 10-second window (from the output topic):")
    print(consumer.table(counts))
    expected = expected_counts(clicks)
    if args.report:
        Path(args.report).write_text(json.dumps({
            "start_ms": start_ms, "seconds": args.seconds, "seed": args.seed,
            "input": clicks_topic, "output": counts_topic,
            "counts": [[w, p, n] for (w, p), n in sorted(counts.items())]}))
    if counts == expected:
        print(f"demo: OK — all {len(counts)} counts equal those computed in plain Python")
        return 0
    missing = {k: v for k, v in expected.items() if counts.get(k) != v}
    extra = {k: v for k, v in counts.items() if k not in expected}
    print(f"demo: MISMATCH — differing/missing {missing}, unexpected {extra}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
