"""A real Kafka Streams application (kafka-streams 4.3.1, ``group.protocol=streams``) against a
kbroker process: the streams group protocol end to end (KIP-1071).

The word count of ``tests/streams/java/WordCountApp.java`` (compiled here with javac; the jars
come from ``tools/kafka_streams/fetch.sh``, which ``make kafka-streams-dist`` runs) has two
subtopologies joined by a repartition topic and a state store with a changelog topic:

- kbroker creates the internal topics the topology asks for and the counts come out right;
- two instances share the eight tasks (StreamsGroupDescribe shows a Stable group of two
  members, ListGroups lists it as a ``streams`` group), and each learns from the broker which
  partitions the other serves (interactive queries' ``metadataForAllStreamsClients``);
- one instance is SIGKILLed: its session expires, its tasks move to the other one, which
  restores the counts from the changelog and goes on counting;
- the broker is SIGKILLed and restarted: the group (members, epochs, topology) is replayed
  from its ``__consumer_offsets`` records and the survivor goes on without a rebalance.
"""
from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from kbroker.wire import messages
from tests.support.broker_proc import BrokerProcess
from tests.support.kafka_streams_app import (ALL_TASKS, APP, CHANGELOG, REPARTITION, App,
                                             build_classpath, counts, produce, raw, wait_for)

pytestmark = pytest.mark.slow

OVERRIDES = {"offsets.topic.replication.factor": 1, "offsets.topic.num.partitions": 3,
             "group.streams.session.timeout.ms": 6000,
             "group.streams.min.session.timeout.ms": 1000,
             "group.streams.heartbeat.interval.ms": 500,
             "group.streams.min.heartbeat.interval.ms": 100}


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    return build_classpath(tmp_path_factory.mktemp("wordcount-classes"))


def test_word_count_two_instances_and_failover(tmp_path, classpath):
    broker = BrokerProcess(tmp_path / "data", overrides=OVERRIDES).start()
    apps: list[App] = []
    try:
        bs = broker.bootstrap
        admin = KafkaAdminClient(bootstrap_servers=bs)
        admin.create_topics([NewTopic("lines", 4, 1), NewTopic("counts", 1, 1)])
        admin.close()
        produce(bs, ["the quick brown fox", "jumps over the lazy dog", "The end"] * 10)
        want = {"the": 30, "quick": 10, "brown": 10, "fox": 10, "jumps": 10, "over": 10,
                "lazy": 10, "dog": 10, "end": 10}
        apps = [App(classpath, bs, tmp_path, "a", 7301), App(classpath, bs, tmp_path, "b", 7302)]
        a, b = apps
        wait_for("the counts", lambda: counts(bs) == want, apps)
        wait_for("two instances sharing the tasks",
                 lambda: (a.tasks() and b.tasks() and not (a.tasks() & b.tasks())
                          and a.tasks() | b.tasks() == ALL_TASKS), apps)

        # interactive queries: each instance knows which partitions the other one serves
        inputs = {f"{t}-{p}" for t in ("lines", REPARTITION) for p in range(4)}
        wait_for("both instances' endpoints", lambda: all(
            set(x.hosts()) == {7301, 7302} and x.hosts()[7301] | x.hosts()[7302] == inputs
            and not (x.hosts()[7301] & x.hosts()[7302]) for x in apps), apps)

        # the broker created the internal topics with the derived partition counts
        md = raw(bs, 3, 12, messages.MetadataRequest(topics=None, allow_auto_topic_creation=False))
        internal = {t.name: len(t.partitions) for t in md.topics if t.name.startswith(APP + "-")}
        assert internal == {REPARTITION: 4, CHANGELOG: 4}

        # StreamsGroupDescribe and ListGroups see a streams group
        d = raw(bs, 89, 0, messages.StreamsGroupDescribeRequest(group_ids=[APP],
                                                                include_authorized_operations=False))
        (g,) = d.groups
        assert (g.error_code, g.group_state, len(g.members)) == (0, "Stable", 2)
        assert sorted(s.subtopology_id for s in g.topology.subtopologies) == ["0", "1"]
        assert {m.user_endpoint.port for m in g.members} == {7301, 7302}
        owned = sorted(f"{t.subtopology_id}_{p}" for m in g.members
                       for t in m.assignment.active_tasks for p in t.partitions)
        assert owned == sorted(ALL_TASKS)
        lg = raw(bs, 16, 5, messages.ListGroupsRequest(states_filter=[], types_filter=["streams"]))
        assert [(x.group_id, x.group_type, x.protocol_type) for x in lg.groups] == [
            (APP, "streams", "streams")]

        # one instance dies: the other one takes every task and goes on counting
        b.proc.kill()
        b.proc.wait()
        wait_for("the survivor running every task", lambda: a.tasks() == ALL_TASKS, apps)
        wait_for("the survivor's endpoints", lambda: a.hosts() == {7301: inputs}, apps)
        produce(bs, ["zebra yak", "yak"])
        wait_for("the counts after the failover",
                 lambda: {k: v for k, v in counts(bs).items() if k in ("zebra", "yak")}
                 == {"zebra": 1, "yak": 2}, apps)
        after = counts(bs)
        assert all(after[w] >= n for w, n in want.items())

        # the broker crashes: the group comes back from its __consumer_offsets records
        before = raw(bs, 89, 0, messages.StreamsGroupDescribeRequest(
            group_ids=[APP], include_authorized_operations=False)).groups[0]
        broker.restart(crash=True)
        produce(bs, ["yak zebra"])
        wait_for("the counts after the broker restart",
                 lambda: {k: v for k, v in counts(bs).items() if k in ("zebra", "yak")}
                 == {"zebra": 2, "yak": 3}, apps)
        g = raw(bs, 89, 0, messages.StreamsGroupDescribeRequest(
            group_ids=[APP], include_authorized_operations=False)).groups[0]
        assert [m.member_id for m in g.members] == [m.member_id for m in before.members]
        assert g.group_epoch == before.group_epoch and g.topology.epoch == before.topology.epoch
        assert a.tasks() == ALL_TASKS
    finally:
        for x in apps:
            x.stop()
        broker.stop()
