"""A KIP-848 consumer group on a three-node cluster survives the SIGKILL of its
coordinator: ``__consumer_offsets`` and the data topic have replication factor 3, two
librdkafka members (``group.protocol=consumer``) consume while an idempotent producer runs;
the node coordinating the group is killed; the new leader of the group's
``__consumer_offsets`` partition replays the consumer group records (epochs, members,
target and current assignments) and the members go on with it — nothing produced is lost
and the committed offsets end at the log end."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.kip848 import Member as _Member

from .support import Cluster, wait_for

EXTRA = {
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "3",
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
}
TOPIC, GROUP, P, N = "kip848-failover", "kip848-failover-group", 6, 3000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("kip848-cluster"), extra=EXTRA)
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def Member(bootstrap, seen, lock):
    """A KIP-848 librdkafka member (tests/support/kip848.py) that commits every 0.5 s and
    keeps commits refused while the coordinator moves in ``commit_errors``, to make again."""
    return _Member(bootstrap, GROUP, TOPIC, seen, lock, commit_interval=0.5,
                   tolerate_commit_errors=True, must_close=False)



def test_coordinator_sigkill_hands_the_group_over_with_nothing_lost(cluster):
    bootstrap = cluster.bootstrap()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, P, 3)])[TOPIC].result(timeout=30)
    produced: list[tuple[int, int]] = []
    errors: list = []

    def producer():
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, "message.timeout.ms": 60000})
        for i in range(N):
            p.produce(TOPIC, str(i).encode(), partition=i % P,
                      on_delivery=lambda err, msg: (produced.append((msg.partition(), msg.offset()))
                                                    if err is None else errors.append(err)))
            p.poll(0)
            if i % 50 == 0:
                time.sleep(0.05)
        p.flush(90)

    seen: list[tuple[int, int]] = []
    lock = threading.Lock()
    prod = threading.Thread(target=producer)
    prod.start()
    members = [Member(bootstrap, seen, lock) for _ in range(2)]
    try:
        wait_for(lambda: all(m.assignment for m in members)
                 and sum(len(m.assignment) for m in members) == P, 60, what="the group splits")
        wait_for(lambda: len(seen) > 200, 60, what="some records consumed")
        desc = admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=20)
        coordinator = desc.coordinator.id
        cluster.kill(coordinator)
        survivors = ",".join(n.bootstrap for n in cluster.alive())
        admin2 = AdminClient({"bootstrap.servers": survivors})

        def moved():
            try:
                d = admin2.describe_consumer_groups([GROUP])[GROUP].result(timeout=10)
            except Exception:  # noqa: BLE001 - coordinator not elected/loaded yet
                return None
            return d if d.coordinator.id != coordinator else None
        d = wait_for(moved, 90, what="a new coordinator serves the group")
        # the group was replayed, not rebuilt from nothing: both members are still in it
        assert len(d.members) == 2
        prod.join(120)
        assert not errors and len(produced) == N
        wait_for(lambda: set(seen) >= set(produced), 120, what="everything consumed")
    finally:
        prod.join(120)
        for m in members:
            m.close()
    assert set(seen) == set(produced), "a record was lost (or invented)"
    res = admin2.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])[GROUP].result(timeout=30)
    ends = {tp.partition: tp.offset for tp in res.topic_partitions}
    assert ends == {p: max(o for pp, o in produced if pp == p) + 1 for p in range(P)}
