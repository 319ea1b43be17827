"""confluent-kafka (librdkafka) consumer groups against a real kbroker: eager and
cooperative-sticky rebalancing (the protocol bytes are opaque to the broker), static
membership (KIP-345: a restarted member rejoins without a rebalance), admin listing."""
from __future__ import annotations

import threading
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from tests.support.group_stats import GroupStats, heard_since, settled  # noqa: E402

from .conftest import SESSION_MS, create_topic, produce, wait_until  # noqa: E402

P = 6
# Long enough that no session can expire while a test waits (the waits are bounded well
# below it): a member that is gone then was removed by its LeaveGroup.
LONG_SESSION_MS = 300_000


class CConsumer:
    """A librdkafka consumer polled on its own thread; tracks the assignment through the
    rebalance callbacks (incremental for cooperative protocols) and its heartbeats and join
    state through its statistics (``stats``, :mod:`tests.support.group_stats`)."""

    def __init__(self, bootstrap, group, topic, **extra):
        self.stats = GroupStats()
        conf = {"bootstrap.servers": bootstrap, "group.id": group,
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500,
                "max.poll.interval.ms": 20000, "topic.metadata.refresh.interval.ms": 2000,
                "stats_cb": self.stats.update, **GroupStats.CONF}
        conf.update(extra)
        self.cooperative = conf.get("partition.assignment.strategy") == "cooperative-sticky"
        self.assignment: set[int] = set()
        self.revoked: list[set[int]] = []
        self.assigned: list[set[int]] = []
        self.values: list[bytes] = []
        self._stop = threading.Event()
        self._calls: list = []
        self._close = True
        self.error = None
        self.c = Consumer(conf)
        self.c.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _on_assign(self, c, parts):
        ps = {p.partition for p in parts}
        self.assigned.append(ps)
        self.assignment = (self.assignment | ps) if self.cooperative else ps

    def _on_revoke(self, c, parts):
        ps = {p.partition for p in parts}
        self.revoked.append(ps)
        self.assignment = (self.assignment - ps) if self.cooperative else set()

    def _run(self):
        try:
            while not self._stop.is_set():
                m = self.c.poll(0.1)
                if m is not None and not m.error():
                    self.values.append(m.value())
                while self._calls:
                    fn, box, done = self._calls.pop(0)
                    try:
                        box.append(fn(self.c))
                    except BaseException as e:   # noqa: BLE001
                        box.append(e)
                    done.set()
            if self._close:
                self.c.close()
        except BaseException as e:   # noqa: BLE001
            self.error = e

    def call(self, fn, timeout=20):
        """Run ``fn(consumer)`` on the polling thread (the consumer is not shared)."""
        box, done = [], threading.Event()
        self._calls.append((fn, box, done))
        assert done.wait(timeout), "call did not run"
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def close(self, *, leave=True):
        """Stop; ``leave=False`` abandons the consumer without closing it (a static member
        stopping without LeaveGroup looks like that to the broker)."""
        self._close = leave
        self._stop.set()
        self.t.join(20)
        if self.error:
            raise self.error


def disjoint_cover(members, n=P):
    sets = [m.assignment for m in members]
    return sum(len(s) for s in sets) == len(set().union(*sets)) == n and all(sets)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_split_and_rebalance(bootstrap, names, strategy):
    topic, group = names
    create_topic(bootstrap, topic, P)
    produce(bootstrap, topic, 60, P)
    # librdkafka wants max.poll.interval.ms >= session.timeout.ms
    extra = {"partition.assignment.strategy": strategy, "session.timeout.ms": LONG_SESSION_MS,
             "max.poll.interval.ms": LONG_SESSION_MS}
    a = CConsumer(bootstrap, group, topic, **extra)
    b = CConsumer(bootstrap, group, topic, **extra)
    c = CConsumer(bootstrap, group, topic, **extra)
    try:
        wait_until(lambda: disjoint_cover([a, b, c]), 40, what="3-way split")
        wait_until(lambda: len(set(a.values) | set(b.values) | set(c.values)) == 60, 20,
                   what="all records")
        kept_a = set(a.assignment)
        c.close()                                  # LeaveGroup
        # c's session (LONG_SESSION_MS) cannot expire within this wait: only its LeaveGroup
        # can hand its partitions to a and b
        wait_until(lambda: disjoint_cover([a, b]), 60, what="split after leave")
        if strategy == "cooperative-sticky":
            # incremental: survivors never gave up what they kept
            assert kept_a <= a.assignment
            assert all(not (r & kept_a) for r in a.revoked[1:]) or not a.revoked
        d = CConsumer(bootstrap, group, topic, **extra)
        wait_until(lambda: disjoint_cover([a, b, d]), 30, what="split after join")
        d.close()
    finally:
        for m in (a, b, c):
            if m.t.is_alive():
                m.close()


def test_static_member_restart_rejoins_without_rebalance(bootstrap, names):
    topic, group = names
    create_topic(bootstrap, topic, 4)
    extra = {"session.timeout.ms": 10000}
    a = CConsumer(bootstrap, group, topic, **{"group.instance.id": "inst-a"}, **extra)
    b = CConsumer(bootstrap, group, topic, **{"group.instance.id": "inst-b"}, **extra)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        wait_until(lambda: disjoint_cover([a, b], 4)
                   and settled(admin, group, [(m.stats, m.assignment) for m in (a, b)]), 40,
                   what="static split, no rebalance under way")
        a_assigns, a_revokes = len(a.assigned), len(a.revoked)
        b_before = set(b.assignment)
        # b stops without LeaveGroup (static members do not leave on close in librdkafka;
        # abandoning the handle is the same to the broker) and a new process comes back with
        # the same instance id within the session timeout
        b.close(leave=False)
        time.sleep(1.0)          # the restart's pause: nothing is awaited here
        b2 = CConsumer(bootstrap, group, topic, **{"group.instance.id": "inst-b"}, **extra)
        wait_until(lambda: b2.assignment == b_before, 20, what="b2 gets b's partitions")
        # a rebalance b2's join started would have reached a by its next heartbeat
        sent = [a.stats.heartbeats]
        wait_until(lambda: heard_since([a.stats], sent), 20,
                   what="a heartbeat of a answered after b2 joined")
        # a saw no rebalance at all
        assert (len(a.assigned), len(a.revoked)) == (a_assigns, a_revokes)
        assert disjoint_cover([a, b2], 4)
        b2.close()
    finally:
        if a.t.is_alive():
            a.close()


def test_commit_with_metadata_and_admin_listing(bootstrap, names):
    topic, group = names
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, 10, 2)
    c = CConsumer(bootstrap, group, topic)
    try:
        wait_until(lambda: c.assignment == {0, 1} and len(c.values) == 10, 30, what="consume")
        tps = [TopicPartition(topic, 0, 3, metadata="meta-0"), TopicPartition(topic, 1, 4)]
        c.call(lambda cons: cons.commit(offsets=tps, asynchronous=False))
        got = {tp.partition: (tp.offset, tp.metadata) for tp in c.call(
            lambda cons: cons.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10))}
        assert got == {0: (3, "meta-0"), 1: (4, None)} or got == {0: (3, "meta-0"), 1: (4, "")}
        adm = AdminClient({"bootstrap.servers": bootstrap})
        listed = adm.list_consumer_groups().result(timeout=10)
        ids = {g.group_id: g for g in listed.valid}
        assert group in ids
        desc = adm.describe_consumer_groups([group])[group].result(timeout=10)
        assert len(desc.members) == 1 and desc.members[0].assignment.topic_partitions
        assert {tp.partition for tp in desc.members[0].assignment.topic_partitions} == {0, 1}
    finally:
        c.close()
