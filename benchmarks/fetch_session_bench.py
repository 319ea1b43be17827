"""Fetch sessions (KIP-227): what a consumer of many partitions saves, on kbroker or Kafka.

One topic of ``--partitions`` partitions (1,000 by default), one record in a few of them.
The same poll loop is run twice over one connection with hand-built Fetch v12 requests, as a
consumer at its log end would poll: ``--polls`` sessionless full fetches (every partition
named, every partition answered), then one full fetch that opens a session and ``--polls``
incremental fetches naming nothing. Measured per poll: request and response bytes on the
wire, and the broker process's CPU time (user + system, from /proc) over the loop.

    .venv/bin/python -m benchmarks.fetch_session_bench [--partitions 1000] [--polls 200]
        [--broker kbroker|kafka]

Not a test: it prints a table and asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import socket
import struct
import tempfile
import time
from pathlib import Path

from kbroker.wire import messages as M
from kbroker.wire import protocol

F = M.FetchRequest


class Conn:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.corr = 0
        self.sent = self.received = 0

    def call(self, api_key: int, version: int, body):
        self.corr += 1
        frame = protocol.encode_request(api_key, version, self.corr, "fetch-session-bench", body)
        self.sock.sendall(frame)
        self.sent += len(frame)
        size = struct.unpack(">i", self._exactly(4))[0]
        payload = self._exactly(size)
        self.received += size + 4
        _, resp = protocol.decode_response(payload, api_key, version)
        return resp

    def _exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            c = self.sock.recv(min(n, 1 << 20))
            if not c:
                raise ConnectionError("closed")
            chunks.append(c)
            n -= len(c)
        return b"".join(chunks)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fetch(topic: str, offsets: dict[int, int], session_id: int, epoch: int):
    parts = [F.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
             for p, o in offsets.items()]
    return F(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=50 << 20, isolation_level=0,
             session_id=session_id, session_epoch=epoch,
             topics=[F.FetchTopic(topic=topic, partitions=parts)] if parts else [])


def run(port: int, pid: int, partitions: int, polls: int) -> dict:
    from kbroker.wire.records import build_batch
    conn = Conn(port)
    topic = f"fsb-{os.getpid()}"
    C = M.CreateTopicsRequest
    r = conn.call(19, 7, C(timeout_ms=60000, topics=[C.CreatableTopic(
        name=topic, num_partitions=partitions, replication_factor=1)]))
    assert r.topics[0].error_code == 0, r
    P = M.ProduceRequest
    for p in range(0, partitions, max(1, partitions // 4)):
        for _ in range(100):
            resp = conn.call(0, 9, P(acks=1, timeout_ms=10000, topic_data=[P.TopicProduceData(
                name=topic, partition_data=[P.PartitionProduceData(
                    index=p, records=build_batch([(None, b"x", [], int(time.time() * 1000))]))])]))
            if resp.responses[0].partition_responses[0].error_code == 0:
                break
            time.sleep(0.1)
    # the consumer's position: the log end of every partition
    ends = {}
    first = conn.call(1, 12, fetch(topic, {p: 0 for p in range(partitions)}, 0, -1))
    for t in first.responses:
        for pd in t.partitions:
            ends[pd.partition_index] = max(pd.high_watermark, 0)
    out = {}
    for mode in ("sessionless", "incremental"):
        sent0, recv0, cpu0, t0 = conn.sent, conn.received, cpu_seconds(pid), time.perf_counter()
        if mode == "sessionless":
            for _ in range(polls):
                conn.call(1, 12, fetch(topic, ends, 0, -1))
        else:
            opened = conn.call(1, 12, fetch(topic, ends, 0, 0))
            sid, epoch = opened.session_id, 1
            assert sid != 0, "the broker opened no session"
            sent0, recv0, cpu0, t0 = conn.sent, conn.received, cpu_seconds(pid), time.perf_counter()
            for _ in range(polls):
                r = conn.call(1, 12, fetch(topic, {}, sid, epoch))
                assert r.error_code == 0, r
                epoch += 1
        out[mode] = {"request_bytes": (conn.sent - sent0) / polls,
                     "response_bytes": (conn.received - recv0) / polls,
                     "broker_cpu_ms": 1000 * (cpu_seconds(pid) - cpu0) / polls,
                     "wall_ms": 1000 * (time.perf_counter() - t0) / polls}
    conn.sock.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--polls", type=int, default=200)
    ap.add_argument("--broker", choices=("kbroker", "kafka"), default="kbroker")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fsb-"))
    if args.broker == "kbroker":
        from tests.support.broker_proc import BrokerProcess
        broker = BrokerProcess(work / "data")
        broker.start()
        port, pid, stop = broker.port, broker.proc.pid, lambda: broker.stop(timeout=300)
    else:
        from compat_tests.kafka_runner import KafkaBrokerProcess
        broker = KafkaBrokerProcess(work / "kafka", {})
        broker.start()
        port, pid, stop = broker.port, broker.proc.pid, broker.stop
    try:
        res = run(port, pid, args.partitions, args.polls)
    finally:
        stop()
    print(f"{args.broker}: {args.partitions} partitions at their log end, {args.polls} polls each")
    print("| fetch | request B/poll | response B/poll | broker CPU ms/poll | wall ms/poll |")
    print("|---|---:|---:|---:|---:|")
    for mode, r in res.items():
        print(f"| {mode} | {r['request_bytes']:,.0f} | {r['response_bytes']:,.0f} | "
              f"{r['broker_cpu_ms']:.2f} | {r['wall_ms']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
