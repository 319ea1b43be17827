"""Client-side helpers of the replication tests: produce with a real client and keep the
acknowledged set, read a topic back, compare replicas' logs."""
from __future__ import annotations

import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError

from kbroker.wire import messages as w

from .support import (agreed_state, call, describe_log_dirs, list_offsets, log_batches, replica_dir,
                      wait_for)


def create_topic(cluster, name: str, partitions: int, rf: int = 3, configs=None, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        a = None
        try:
            a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(), request_timeout_ms=20000)
            a.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=rf,
                                      topic_configs=configs or {})])
            break
        except TopicAlreadyExistsError:
            break
        except (KafkaError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
        finally:
            if a is not None:
                a.close()
    return wait_for(lambda: (lambda s: s if s and len(s) == partitions else None)(agreed_state(cluster, name)),
                    what=f"{name} on every broker")


def make_producer(bootstrap: str, **conf) -> Producer:
    base = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": 5, "message.timeout.ms": 60_000, "request.timeout.ms": 10_000,
            "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000}
    base.update(conf)
    return Producer(base)


class Acks:
    """What a producer's delivery reports said: ``acked[(key, value)] = (partition, offset)``
    and the errors of the records that were not acknowledged."""

    def __init__(self):
        self.acked: dict[tuple[bytes, bytes], tuple[int, int]] = {}
        self.failed: list[tuple[bytes, object]] = []
        self.lock = threading.Lock()

    def callback(self, err, msg):
        with self.lock:
            if err is None:
                self.acked[(msg.key(), msg.value())] = (msg.partition(), msg.offset())
            else:
                self.failed.append((msg.key(), err))


def produce(bootstrap: str, topic: str, records, into: Acks | None = None, flush_timeout: float = 90.0,
            **conf) -> Acks:
    """Send ``(key, value)`` pairs (keyed partitioning) and wait for every delivery report;
    ``conf`` is producer configuration (``acks="1"``...)."""
    acks = into or Acks()
    p = make_producer(bootstrap, **conf)
    for k, v in records:
        while True:
            try:
                p.produce(topic, key=k, value=v, on_delivery=acks.callback)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(flush_timeout)
    assert left == 0, f"{left} records without a delivery report"
    return acks


def records(prefix: str, n: int) -> list[tuple[bytes, bytes]]:
    return [(f"{prefix}-k{i % 97}".encode(), f"{prefix}-v{i}".encode()) for i in range(n)]


def read_topic(bootstrap: str, topic: str, partitions: int, expect: set, timeout: float = 60.0):
    """Every record of ``topic`` from the beginning as ``{(key, value): (partition, offset)}``,
    reading until ``expect`` (a set of (key, value)) is covered or the deadline passes and
    then until a poll returns nothing."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "replication-tests-unused",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "topic.metadata.refresh.interval.ms": 1000})
    out: dict = {}
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        idle = 0
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                if expect <= out.keys():
                    idle += 1
                    if idle >= 2:
                        break
                continue
            if m.error() is not None:
                continue                 # e.g. a transient leader change; the client retries
            idle = 0
            out[(m.key(), m.value())] = (m.partition(), m.offset())
    finally:
        c.close()
    return out


def replicas_in_sync(cluster, topic: str, partitions, nodes=None):
    """``{partition: log end offset}`` if, for every partition, every replica on ``nodes``
    (default: the partition's replicas that are running) holds byte-identical batches on
    disk, its log end offset is the leader's high watermark, and DescribeLogDirs reports the
    same size on each; else None."""
    st = agreed_state(cluster, topic)
    if not st:
        return None
    running = {n.node_id for n in cluster.alive()}
    out = {}
    sizes = {n: describe_log_dirs(cluster.nodes[n].addr, topic) for n in running}
    for p in partitions:
        s = st[p]
        if s.leader < 0:
            return None
        err, hw = list_offsets(cluster.nodes[s.leader].addr, topic, p)
        if err != 0:
            return None
        members = [n for n in (nodes or s.replicas) if n in running]
        logs = {n: log_batches(replica_dir(cluster, n, topic, p)) for n in members}
        first = logs[members[0]]
        if any(logs[n] != first for n in members):
            return None
        leo = first[-1][1] + 1 if first else 0
        if leo != hw:
            return None
        if len({sizes[n].get(p) for n in members}) != 1:
            return None
        out[p] = leo
    return out


def find_coordinator(port: int, group: str) -> tuple[int, int]:
    """``(error_code, node_id)`` of FindCoordinator v3 for a group."""
    resp = call(port, 10, 3, w.FindCoordinatorRequest(key=group, key_type=0))
    return resp.error_code, resp.node_id


# ---------------------------------------------------------------------- fault tests

def read_records(bootstrap: str, topic: str, ends: dict[int, int], timeout: float = 90.0):
    """Every record of ``topic`` below ``ends[partition]`` as a list of ``(partition, offset,
    key, value)`` in the order read (duplicates kept), reading from the beginning of each
    partition until its position reaches its end offset or the deadline passes."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "replication-fault-tests-unused",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "topic.metadata.refresh.interval.ms": 1000})
    out = []
    position = {p: 0 for p in ends}
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(position[p] < e for p, e in ends.items()):
            m = c.poll(0.5)
            if m is None or m.error() is not None:
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value()))
            position[m.partition()] = max(position[m.partition()], m.offset() + 1)
    finally:
        c.close()
    return out


def checkpointed_high_watermarks(cluster, node_id: int, topic: str) -> dict[int, int]:
    """``{partition: high watermark}`` of ``topic`` in a node's ``replication-offset-checkpoint``
    (written every ``replica.high.watermark.checkpoint.interval.ms``)."""
    from kbroker.log.checkpoint import REPLICATION_OFFSET, read_checkpoint

    entries = read_checkpoint(cluster.nodes[node_id].data_dir / REPLICATION_OFFSET)
    return {p: hw for (t, p), hw in entries.items() if t == topic}
