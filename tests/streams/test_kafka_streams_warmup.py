"""Warm-up tasks with a real Kafka Streams application (kafka-streams 4.4.0,
``group.protocol=streams``) against a kbroker with ``kbroker.streams.warmup.tasks.enable``
(KIP-1071's second part; Kafka 4.4.0 itself hands out none).

The word count of ``tests/streams/java/WordCountApp.java`` runs alone on instance ``a`` and
counts; instance ``b`` joins. The sticky assignor moves the four stateful tasks (subtopology
1, the counts store) to ``b``; with one warm-up task at a time and an acceptable recovery lag
of 0, each of them first runs on ``b`` as a warm-up task — restoring the store from the
changelog while ``a`` keeps processing — and moves only after ``b`` reports it has caught up:
one refinement epoch per task, warm-up tasks seen in StreamsGroupDescribe, and the counts
right throughout.
"""
from __future__ import annotations

import time

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from kbroker.wire import messages
from tests.support.broker_proc import BrokerProcess
from tests.support.kafka_streams_app import (ALL_TASKS, APP, App, build_classpath, counts,
                                             produce, raw, wait_for)

pytestmark = pytest.mark.slow

OVERRIDES = {"offsets.topic.replication.factor": 1, "offsets.topic.num.partitions": 3,
             "group.streams.session.timeout.ms": 6000,
             "group.streams.min.session.timeout.ms": 1000,
             "group.streams.heartbeat.interval.ms": 500,
             "group.streams.min.heartbeat.interval.ms": 100,
             "group.streams.initial.rebalance.delay.ms": 0,
             "group.streams.task.offset.interval.ms": 1000,
             "group.streams.min.task.offset.interval.ms": 1000,
             "group.streams.acceptable.recovery.lag": 0,
             "group.streams.num.warmup.replicas": 1,
             "kbroker.streams.warmup.tasks.enable": "true"}
STATEFUL = {f"1_{p}" for p in range(4)}


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    return build_classpath(tmp_path_factory.mktemp("wordcount-classes"))


def _describe(bs):
    return raw(bs, 89, 1, messages.StreamsGroupDescribeRequest(
        group_ids=[APP], include_authorized_operations=False,
        include_topology_description=False)).groups[0]


def _tasks(assignment, kind):
    return {f"{t.subtopology_id}_{p}" for t in getattr(assignment, kind) for p in t.partitions}


def test_stateful_tasks_move_behind_warmup_tasks(tmp_path, classpath):
    broker = BrokerProcess(tmp_path / "data", overrides=OVERRIDES).start()
    apps: list[App] = []
    try:
        bs = broker.bootstrap
        admin = KafkaAdminClient(bootstrap_servers=bs)
        admin.create_topics([NewTopic("lines", 4, 1), NewTopic("counts", 1, 1)])
        admin.close()
        words = [f"w{i}" for i in range(200)]
        produce(bs, [" ".join(words)] * 5)
        want = {w: 5 for w in words}
        apps.append(App(classpath, bs, tmp_path, "a", 7311))
        a = apps[0]
        wait_for("the counts", lambda: counts(bs) == want, apps)
        wait_for("a running every task", lambda: a.tasks() == ALL_TASKS, apps)
        epoch = _describe(bs).group_epoch

        apps.append(App(classpath, bs, tmp_path, "b", 7312))
        b = apps[1]
        seen_warmups: set[str] = set()
        reported: set[str] = set()          # tasks b reported an end offset for
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            g = _describe(bs)
            for m in g.members:
                seen_warmups |= _tasks(m.assignment, "warmup_tasks")
                if m.user_endpoint.port == 7312:
                    reported |= {f"{o.subtopology_id}_{o.partition}" for o in m.task_end_offsets}
            if g.group_state == "Stable" and len(g.members) == 2 and not any(
                    _tasks(m.assignment, "warmup_tasks") for m in g.members) and \
                    b.tasks() and a.tasks() and a.tasks() | b.tasks() == ALL_TASKS \
                    and not (a.tasks() & b.tasks()) and STATEFUL <= b.tasks() | a.tasks() \
                    and b.tasks() & STATEFUL:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"no settled assignment: {g}")
        # the target gave b stateful tasks; each came behind a warm-up task, one at a time
        moved = b.tasks() & STATEFUL
        assert moved and moved <= seen_warmups <= STATEFUL
        assert g.group_epoch >= epoch + 1 + len(moved)
        # the restore progress b reported (StreamsGroupHeartbeat v1) was described
        assert reported & moved

        produce(bs, ["w0 w1"])
        wait_for("the counts after the move",
                 lambda: {k: v for k, v in counts(bs).items() if k in ("w0", "w1")}
                 == {"w0": 6, "w1": 6}, apps)
        assert all(n >= 5 for n in counts(bs).values())
    finally:
        for x in apps:
            x.stop()
        broker.stop()
