"""A consumer group across steps of its coordinator's wall clock (issue 19), on a real
broker process and real clients.

The broker's ``CLOCK_REALTIME`` is stepped at run time by libfaketime
(:mod:`tests.support.fake_clock`; ``CLOCK_MONOTONIC`` stays real, as under an NTP step);
three librdkafka consumers of one classic group keep polling in threads. Their sessions are
10 s with a heartbeat every 6 s (and no commits while the clock steps: a commit re-arms the
session too), so whenever the coordinator's timer task wakes, a member heartbeated a few
seconds before: with timers on the wall clock, a forward step longer than the session
expired that member at the next wake, and the group rebalanced.
With timers on the monotonic clock, as Kafka's, three steps of two minutes forward and one
of six minutes back change nothing: same member ids, no revocation or new assignment in any
client (so the same generation), commits at the generation they joined with keep succeeding,
and the group is Stable with the same three members.
"""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.async_commits import AsyncCommits
from tests.support.broker_proc import BrokerProcess
from tests.support.fake_clock import FakeClock
from tests.support.group_stats import GroupStats, heard_since, settled

from .support import wait_for

TOPIC, GROUP, PARTITIONS = "clock-steps", "clock-steps-group", 6


class Member(threading.Thread):
    """One consumer of GROUP: it records every revocation and assignment, and commits the
    positions it reached when ``commit`` is set (asynchronously, answered through its poll,
    so a stop always reaches it: :mod:`tests.support.async_commits`; errors are kept).
    ``stats``: its heartbeats and join state (:mod:`tests.support.group_stats`)."""

    def __init__(self, bootstrap: str, name: str):
        super().__init__(daemon=True, name=name)
        self.stop = threading.Event()
        self.commit = threading.Event()
        self.events: list[tuple[str, list[int]]] = []      # ("assign"|"revoke", partitions)
        self.assigned: list[int] = []
        self.member_id = ""
        self.offsets = AsyncCommits(drain_s=10)
        self.stats = GroupStats()
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 10_000, "heartbeat.interval.ms": 6_000,
            "fetch.wait.max.ms": 200, "on_commit": self.offsets.answered,
            "stats_cb": self.stats.update, **GroupStats.CONF})

    @property
    def commits(self) -> int:
        return self.offsets.commits

    @property
    def errors(self) -> list[str]:
        return self.offsets.errors

    def _on_assign(self, c, parts):
        self.assigned = sorted(p.partition for p in parts)
        self.events.append(("assign", self.assigned))

    def _on_revoke(self, c, parts):
        self.events.append(("revoke", sorted(p.partition for p in parts)))

    def run(self):
        c = self.consumer
        c.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke)
        try:
            while not self.stop.is_set():
                m = c.poll(0.2)
                if m is not None and m.error() is not None:
                    self.errors.append(str(m.error()))
                self.member_id = c.memberid() or ""
                if self.commit.is_set():
                    positions = [p for p in c.position(c.assignment()) if p.offset >= 0]
                    if len(positions) == len(self.assigned) > 0:
                        self.commit.clear()
                        self.offsets.commit(c, positions)
        finally:
            self.offsets.close(c)


def test_consumer_group_keeps_its_members_across_coordinator_clock_steps(tmp_path):
    assert FakeClock.available(), "libfaketime is missing: `make faketime` installs it"
    clock = FakeClock(tmp_path / "clock")
    broker = BrokerProcess(tmp_path / "data", overrides={
        "group.initial.rebalance.delay.ms": "2000",      # the three join one generation
        "offsets.topic.num.partitions": "1"})
    broker.env.update(clock.env())
    members: list[Member] = []
    try:
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result()
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(60):
            producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
        assert producer.flush(10) == 0

        members = [Member(broker.bootstrap, f"m{i}") for i in range(3)]
        for m in members:
            m.start()
        wait_for(lambda: sorted(p for m in members for p in m.assigned) == list(range(PARTITIONS)),
                 timeout=60, what="three members sharing the six partitions")
        for m in members:
            m.commit.set()
        wait_for(lambda: all(m.commits == 1 for m in members), timeout=30,
                 what="a commit of every member")
        wait_for(lambda: settled(admin, GROUP, [(m.stats, m.assigned) for m in members]),
                 timeout=30, what="no rebalance under way")
        ids = [m.member_id for m in members]
        events = [list(m.events) for m in members]
        assert all(ids) and len(set(ids)) == 3

        for _ in range(3):                              # +2 min each, longer than a session
            clock.jump(120)
            time.sleep(4)                               # the coordinator lives through it
        clock.reset()                                   # and 6 min back
        # a wall-clock coordinator expired someone during the steps: every member's first
        # heartbeat after them is refused, and its client rebalances
        sent = [m.stats.heartbeats for m in members]
        wait_for(lambda: heard_since([m.stats for m in members], sent)
                 or [m.events for m in members] != events, timeout=60,
                 what="a heartbeat of every member answered after the steps")

        assert [m.member_id for m in members] == ids
        assert [m.events for m in members] == events, "no member was revoked or reassigned"
        for m in members:                               # at the generation they joined with
            m.commit.set()
        wait_for(lambda: all(m.commits == 2 or m.errors for m in members), timeout=30,
                 what="a second commit of every member")
        assert [m.errors for m in members] == [[], [], []]
        desc = admin.describe_consumer_groups([GROUP])[GROUP].result()
        assert desc.state.name == "STABLE"
        assert sorted(x.member_id for x in desc.members) == sorted(ids)
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.join(timeout=15)
        broker.kill()
