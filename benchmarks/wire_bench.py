#!/usr/bin/env python3
"""Throughput of the compiled schema codec on three hot messages (a benchmark, not a test).

    .venv/bin/python benchmarks/wire_bench.py [--seconds 1.0] [--profile CASE]

Cases:
- produce:  ProduceRequest v9 with one partition carrying a 1 MiB record batch. Decoding
            must not copy the batch (the records field is a memoryview into the frame).
- fetch:    FetchResponse v12 with 100 partitions of 1 KiB records each.
- metadata: MetadataResponse v12 with 10 topics x 100 partitions (1,000 partitions),
            three replicas each.

For each case prints encode and decode operations per second and MB/s of encoded bytes.
``--profile CASE`` runs cProfile over the case's decode+encode loop instead.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbroker.wire import messages  # noqa: E402


def produce_case():
    cls = messages.ProduceRequest
    batch = bytes(range(256)) * 4096  # 1 MiB
    req = cls(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        cls.TopicProduceData(name="bench-topic", partition_data=[
            cls.PartitionProduceData(index=0, records=batch)])])
    return cls, req, 9


def fetch_case():
    cls = messages.FetchResponse
    records = b"r" * 1024
    resp = cls(throttle_time_ms=0, error_code=0, session_id=0, responses=[
        cls.FetchableTopicResponse(topic=f"topic-{t}", partitions=[
            cls.PartitionData(partition_index=p, error_code=0, high_watermark=1000 + p,
                              last_stable_offset=1000 + p, log_start_offset=0,
                              aborted_transactions=[], preferred_read_replica=-1, records=records)
            for p in range(10)])
        for t in range(10)])
    return cls, resp, 12


def metadata_case():
    cls = messages.MetadataResponse
    resp = cls(throttle_time_ms=0, brokers=[
        cls.MetadataResponseBroker(node_id=i, host=f"broker-{i}.example", port=9092, rack=None)
        for i in range(3)],
        cluster_id="kbroker-cluster", controller_id=0, topics=[
            cls.MetadataResponseTopic(error_code=0, name=f"topic-{t}", topic_id=uuid.UUID(int=t + 1),
                                      is_internal=False, partitions=[
                cls.MetadataResponsePartition(error_code=0, partition_index=p, leader_id=p % 3,
                                              leader_epoch=0, replica_nodes=[0, 1, 2],
                                              isr_nodes=[0, 1, 2], offline_replicas=[])
                for p in range(100)], topic_authorized_operations=-2147483648)
            for t in range(10)])
    return cls, resp, 12


CASES = {"produce": produce_case, "fetch": fetch_case, "metadata": metadata_case}


def rate(fn, seconds: float) -> float:
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        fn()
        n += 1
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def run(name: str, seconds: float) -> None:
    cls, obj, version = CASES[name]()
    encoded = obj.encode(version)
    decoded = cls.decode(encoded, version)
    assert decoded == obj
    if name == "produce":
        records = decoded.topic_data[0].partition_data[0].records
        assert isinstance(records, memoryview) and records.obj is not None, "records were copied"
    enc = rate(lambda: obj.encode(version), seconds)
    dec = rate(lambda: cls.decode(encoded, version), seconds)
    mb = len(encoded) / 1e6
    print(f"{name:9s} v{version:<2d} {len(encoded):>9,d} B   "
          f"encode {enc:>9,.0f}/s {enc * mb:>8,.1f} MB/s   "
          f"decode {dec:>9,.0f}/s {dec * mb:>8,.1f} MB/s")


def profile(name: str, seconds: float) -> None:
    cls, obj, version = CASES[name]()
    encoded = obj.encode(version)

    def loop():
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            cls.decode(encoded, version)
            obj.encode(version)
    prof = cProfile.Profile()
    prof.runcall(loop)
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    ap.add_argument("--profile", choices=sorted(CASES), help="profile one case instead")
    args = ap.parse_args()
    if args.profile:
        profile(args.profile, args.seconds)
        return 0
    print(f"python {sys.version.split()[0]}")
    for name in CASES:
        run(name, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
