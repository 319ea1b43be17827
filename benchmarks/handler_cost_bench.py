"""Instructions per Produce and Fetch request handled in-process, exactly (callgrind).

``request_cost_bench`` counts a served request end to end, sockets and event loop included;
its figure moves by a percent or two between runs of one tree (how requests batch on the
connection depends on the machine's load). This one leaves the server out: the request is
decoded, the API handler runs against a real ReplicaManager on a temporary directory (the
fixtures of tests/replica), and the answer is encoded, in one process with a fixed hash seed,
so a change of a few thousand instructions per request shows from one run:

- ``produce``: Produce v9, acks=1, one topic of 8 partitions, a batch of 15 records of 100
  bytes each (the Java producer's request shape at 8 partitions);
- ``fetch``: Fetch v16, sessionless, one partition from offset 0 (20 batches; the answer's
  records are a file region, as served).

Each case runs twice under ``valgrind --tool=callgrind`` with N and 6N requests after the
same warm-up; the difference divided by 5N is the cost of one request.

    .venv/bin/python -m benchmarks.handler_cost_bench [-n 100] [--cases produce,fetch]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.harness.callgrind import instructions

ROOT = Path(__file__).resolve().parents[1]


def inner(case: str, n: int) -> None:
    """The measured process: warm-up, then ``n`` requests of ``case``."""
    import trio

    from kbroker.api import REGISTRY, RequestContext, load_all
    from kbroker.wire import messages, protocol
    from tests.replica.conftest import Clock, Cluster, batch, make_broker

    load_all()
    broker = make_broker([Path(tempfile.mkdtemp(prefix="handler-cost-")) / "data"], Clock())
    cluster = Cluster(broker.replicas)
    topic = cluster.create("t8", 8)
    P, F = messages.ProduceRequest, messages.FetchRequest
    records = batch(*[b"v" * 100] * 15)
    produce = (0, 9, protocol.encode_request(0, 9, 7, "c", P(
        acks=1, timeout_ms=1000, topic_data=[P.TopicProduceData(name="t8", partition_data=[
            P.PartitionProduceData(index=i, records=records) for i in range(8)])])))
    fetch = (1, 16, protocol.encode_request(1, 16, 7, "c", F(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, topics=[F.FetchTopic(
            topic_id=topic.topic_id, partitions=[F.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])))

    async def one(api_key, version, frame):
        _, request = protocol.decode_request(memoryview(frame)[4:])
        ctx = RequestContext(broker=broker, api_key=api_key, api_version=version,
                             correlation_id=7, client_id="c")
        protocol.encode_response(api_key, version, 7,
                                 await REGISTRY[api_key].handler(ctx, request))

    async def run():
        for _ in range(20):
            await one(*produce)
        for _ in range(3):
            await one(*fetch)
        measured = produce if case == "produce" else fetch
        for _ in range(n):
            await one(*measured)

    trio.run(run)
    broker.logs.shutdown()


def case_instructions(case: str, n: int) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(ROOT))
    return instructions(["-m", "benchmarks.handler_cost_bench", "--inner", case, "-n", str(n)],
                        cwd=ROOT, env=env)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=100, help="requests of the shorter run")
    ap.add_argument("--cases", default="produce,fetch")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        inner(args.inner, args.n)
        return 0
    print("| case | instructions (callgrind Ir) / request |\n|---|---:|")
    for case in args.cases.split(","):
        per = (case_instructions(case, 6 * args.n) - case_instructions(case, args.n)) // (5 * args.n)
        print(f"| {case} | {per:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
