"""The three-node latency rows alone, for one broker or both alternating (not a test).

    python -m benchmarks.latency3_bench [--targets kbroker,kafka] [--rates 1000,10000,50000]
                                        [--acks all] [--seconds 8] [--reps 1]
                                        [--in-flight 5,0]

Starts three combined nodes of each target (``controller_bench``'s start-up code, as
``harness/latency.py``'s ``three_nodes``), creates one 1-partition topic per row with
replication factor 3 and ``min.insync.replicas=2``, waits for three in-sync replicas and
runs ``rdkafka_load latency`` against it: the same rows as ``bench.py --only latency``
without the single-node ones. ``--in-flight`` lists the producer's bounds on requests in
flight to run (0: librdkafka's default of 1,000,000, what the rows used before; the rows
use ``harness.latency.ACKS_ALL_IN_FLIGHT``), each rate with each bound alternating on the
same cluster. Prints one JSON line per row with the 1-minute load average before and after
and the three nodes' CPU seconds (user + system) during the row.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks import replication_bench
from benchmarks.harness.latency import ACKS_ALL_IN_FLIGHT
from benchmarks.harness.run import rdkafka
from benchmarks.replication_bench import (cluster, cpu_seconds, create_topic, pids, stop, wait_brokers,
                                          wait_fully_replicated)


def run_target(target: str, args) -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix=f"latency3-{target}-"))
    nodes = cluster(target, root)
    bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in nodes.values())
    rows = []
    try:
        if not wait_brokers(bootstrap, 3):
            raise RuntimeError("the cluster never listed three brokers")
        runs = [(rate, bound, acks) for _ in range(args.reps) for rate in args.rates
                for bound in args.in_flight for acks in args.acks]
        for rate, inflight, acks in runs:
            topic = f"lat3-{rate}-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, 1, 3, 2)
            if not wait_fully_replicated(bootstrap, topic, 1, 3):
                raise RuntimeError(f"{topic}: no three in-sync replicas")
            load0 = os.getloadavg()[0]
            cpu0 = cpu_seconds(pids(nodes))
            bound = ["--max-in-flight", str(inflight)] if inflight else []
            out = rdkafka("latency", bootstrap, topic, "--rate", str(rate), "--seconds",
                          str(args.seconds), "--size", "1024", "--acks", acks, *bound)
            row = {"target": target, "rate": rate, "acks": acks, "in_flight": inflight or 1_000_000,
                   "load": [round(load0, 2), round(os.getloadavg()[0], 2)],
                   "broker_cpu_s": round(cpu_seconds(pids(nodes)) - cpu0, 2), **out}
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        stop(nodes)
        replication_bench._ADMINS.pop(bootstrap, None)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"kept {root}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="kbroker,kafka")
    ap.add_argument("--rates", default="1000,10000,50000")
    ap.add_argument("--acks", default="all", help="comma-separated: all,1")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--in-flight", default=str(ACKS_ALL_IN_FLIGHT),
                    help="comma-separated bounds on the producer's requests in flight (0: librdkafka's default)")
    args = ap.parse_args(argv)
    args.rates = [int(r) for r in args.rates.split(",")]
    args.acks = args.acks.split(",")
    args.in_flight = [int(x) for x in args.in_flight.split(",")]
    for target in args.targets.split(","):
        run_target(target, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
