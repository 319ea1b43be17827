"""End to end over three real kbroker processes: an RF=3 topic gets every acks=all record on
every replica (same batches, byte for byte, on disk), the ISR holds all three, a SIGKILLed
leader loses no acknowledged record, and the restarted node fetches back into the ISR. The
followers fetch in incremental fetch sessions (KIP-227), also after the restart.
(The broader cluster scenarios live in tests/cluster/.)"""
from __future__ import annotations

import pytest

from tests.cluster.support import (Cluster, leader_of, log_batches, replica_dir, wait_for,
                                   wait_for_isr)

import confluent_kafka  # noqa: E402
import confluent_kafka.admin  # noqa: E402

TOPIC = "e2e-rep"
N = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("replication"))
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def _produce(bootstrap: str, values) -> list[bytes]:
    acked = []
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": 60_000})

    def done(err, msg):
        if err is None:
            acked.append(msg.value())
    for v in values:
        p.produce(TOPIC, v, partition=int(v.split(b"-")[1]) % 2, on_delivery=done)
        p.poll(0)
    assert p.flush(90) == 0
    return acked


def _consume_all(bootstrap: str, partitions=(0, 1), expect: int = 0) -> list[bytes]:
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "e2e-check",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([confluent_kafka.TopicPartition(TOPIC, p, 0) for p in partitions])
    got: list[bytes] = []
    try:
        def enough():
            for m in c.consume(500, 1.0):
                if m.error() is None:
                    got.append(m.value())
            return len(got) >= expect
        wait_for(enough, timeout=60, what=f"{expect} records")
    finally:
        c.close()
    return got


def _same_logs(cluster, nodes, partition: int) -> bool:
    logs = [[(b, l, data) for b, l, data in log_batches(replica_dir(cluster, n, TOPIC, partition))]
            for n in nodes]
    return bool(logs[0]) and all(x == logs[0] for x in logs[1:])


def test_replicated_produce_failover_and_rejoin(cluster):
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": cluster.bootstrap()})
    fut = admin.create_topics([confluent_kafka.admin.NewTopic(TOPIC, 2, 3)])[TOPIC]
    fut.result(30)
    wait_for_isr(cluster, TOPIC)
    acked = _produce(cluster.bootstrap(), [b"v-%d" % i for i in range(N)])
    assert len(acked) == N
    wait_for_isr(cluster, TOPIC)
    for p in (0, 1):
        wait_for(lambda p=p: _same_logs(cluster, (1, 2, 3), p), timeout=30,
                 what=f"identical replica logs of partition {p}")

    # SIGKILL the leader of partition 0: a new leader from the ISR, nothing acked is lost
    victim = leader_of(cluster, TOPIC, 0)
    cluster.kill(victim)
    rest = [n for n in (1, 2, 3) if n != victim]
    wait_for(lambda: leader_of(cluster, TOPIC, 0) in rest, timeout=60, what="new leader")
    more = _produce(cluster.bootstrap(), [b"w-%d" % i for i in range(100)])
    assert len(more) == 100
    got = _consume_all(cluster.bootstrap(), expect=N + 100)
    assert set(acked + more) <= set(got)

    # the killed node comes back, catches up, rejoins the ISR with the same log
    mark = cluster.nodes[victim].log_path.stat().st_size
    cluster.start(victim)
    wait_for_isr(cluster, TOPIC, timeout=90)
    for p in (0, 1):
        wait_for(lambda p=p: _same_logs(cluster, (1, 2, 3), p), timeout=60,
                 what=f"identical replica logs of partition {p} after rejoin")
    # followers fetched in sessions: the restarted node (a follower of both partitions now)
    # opened one with each leader it follows, and so did the others before
    assert "opened with broker" in cluster.nodes[victim].log_text(mark)
    assert all("opened with broker" in cluster.nodes[n].log_text() for n in (1, 2, 3))
