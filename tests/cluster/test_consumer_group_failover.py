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
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

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


class Member:
    def __init__(self, bootstrap, seen, lock):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                           "group.protocol": "consumer", "auto.offset.reset": "earliest",
                           "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000})
        self.seen, self.lock = seen, lock
        self.positions: dict[int, int] = {}
        self.assignment: set[int] = set()
        self._stop = threading.Event()
        self.error = None
        self.commit_errors: list[str] = []
        self.c.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _commit(self, partitions):
        offs = [TopicPartition(TOPIC, p, self.positions[p]) for p in partitions if p in self.positions]
        if offs:
            try:
                for tp in self.c.commit(offsets=offs, asynchronous=False) or ():
                    if tp.error is not None:
                        self.commit_errors.append(f"{tp.partition}: {tp.error}")
            except Exception as e:  # noqa: BLE001 - the coordinator may be moving: commit again later
                self.commit_errors.append(repr(e))

    def _on_assign(self, c, parts):
        self.assignment |= {p.partition for p in parts}

    def _on_revoke(self, c, parts):
        ps = {p.partition for p in parts}
        self._commit(ps)
        for p in ps:                  # not ours any more: never commit them again
            self.positions.pop(p, None)
        self.assignment -= ps

    def _run(self):
        try:
            last = time.monotonic()
            while not self._stop.is_set():
                m = self.c.poll(0.1)
                if m is not None and not m.error():
                    with self.lock:
                        self.seen.append((m.partition(), m.offset()))
                    self.positions[m.partition()] = m.offset() + 1
                if time.monotonic() - last > 0.5:
                    self._commit(list(self.positions))
                    last = time.monotonic()
            self._commit(list(self.positions))
            self.c.close()
        except BaseException as e:   # noqa: BLE001
            self.error = e

    def close(self):
        self._stop.set()
        self.t.join(60)
        if self.error:
            raise self.error


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
