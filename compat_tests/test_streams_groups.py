"""Streams groups (KIP-1071) on both targets: a Kafka Streams 4.3.1 word count with
``group.protocol=streams`` (``tests/streams/java/WordCountApp.java``) gets its internal topics
created by the broker, counts right, and is described alike by StreamsGroupDescribe, ListGroups,
ConsumerGroupDescribe (not a consumer group) and ``kafka-streams-groups --list`` and
``--describe`` (``--members``, ``--state``, ``--offsets``); once its instance closed, the
empty group is deleted by ``kafka-streams-groups --delete``."""

from __future__ import annotations

import pytest

from compat_tests.cli import run_tool
from compat_tests.helpers import create_topic
from kbroker.wire import messages
from tests.support.kafka_streams_app import (ALL_TASKS, APP, CHANGELOG, REPARTITION, App,
                                             build_classpath, counts, produce, raw, wait_for)

CLIENT = "kafka-streams (Java)"

# two JVM applications and a fresh broker per target: `make compat` runs it, `make test` does not
pytestmark = pytest.mark.slow

OVERRIDES = {"group.streams.session.timeout.ms": "6000",
             "group.streams.min.session.timeout.ms": "1000",
             "group.streams.heartbeat.interval.ms": "500",
             "group.streams.min.heartbeat.interval.ms": "100"}


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    return build_classpath(tmp_path_factory.mktemp("wordcount-classes"))


def test_kafka_streams_word_count(broker_factory, classpath, tmp_path):
    broker = broker_factory(**OVERRIDES)
    bs = broker.bootstrap_servers
    create_topic(bs, "lines", 4)
    create_topic(bs, "counts", 1)
    produce(bs, ["to be or not to be", "that is the question"] * 5)
    want = {"to": 10, "be": 10, "or": 5, "not": 5, "that": 5, "is": 5, "the": 5, "question": 5}
    app = App(classpath, bs, tmp_path, "a", 7401)
    try:
        wait_for("the counts", lambda: counts(bs) == want, [app])
        wait_for("every task running", lambda: app.tasks() == ALL_TASKS, [app])

        md = raw(bs, 3, 12, messages.MetadataRequest(topics=None, allow_auto_topic_creation=False))
        internal = {t.name: len(t.partitions) for t in md.topics if t.name.startswith(APP + "-")}
        assert internal == {REPARTITION: 4, CHANGELOG: 4}

        d = raw(bs, 89, 0, messages.StreamsGroupDescribeRequest(group_ids=[APP],
                                                                include_authorized_operations=False))
        (g,) = d.groups
        assert (g.error_code, g.group_state, len(g.members)) == (0, "Stable", 1)
        assert g.group_epoch == g.assignment_epoch
        (m,) = g.members
        assert m.member_epoch == g.assignment_epoch and m.user_endpoint.port == 7401
        subs = {s.subtopology_id: s for s in g.topology.subtopologies}
        assert sorted(subs) == ["0", "1"]
        assert subs["0"].source_topics == ["lines"]
        assert subs["0"].repartition_sink_topics == [REPARTITION]
        assert [t.name for t in subs["1"].repartition_source_topics] == [REPARTITION]
        assert [t.name for t in subs["1"].state_changelog_topics] == [CHANGELOG]
        active = sorted(f"{t.subtopology_id}_{p}" for t in m.assignment.active_tasks
                        for p in t.partitions)
        assert active == sorted(ALL_TASKS)
        nope = raw(bs, 89, 0, messages.StreamsGroupDescribeRequest(group_ids=["no-such-group"],
                                                                   include_authorized_operations=False))
        assert nope.groups[0].error_code == 69            # GROUP_ID_NOT_FOUND

        listed = run_tool("kafka-streams-groups", ["--bootstrap-server", bs, "--list"])
        assert APP in listed.stdout.split()
        described = run_tool("kafka-streams-groups", ["--bootstrap-server", bs, "--describe",
                                                      "--group", APP, "--members"])
        header, row = described.stdout.strip().splitlines()
        assert header.split() == ["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"]
        assert row.split()[:2] == [APP, m.member_id]
        assert row.split()[2] == m.process_id
        assert "ACTIVE: 0:[0,1,2,3]; 1:[0,1,2,3];" in row
        state = run_tool("kafka-streams-groups", ["--bootstrap-server", bs, "--describe",
                                                  "--group", APP, "--state"])
        header, row = state.stdout.strip().splitlines()
        assert row.split()[0] == APP and "Stable" in row.split()
        cg = raw(bs, 69, 0, messages.ConsumerGroupDescribeRequest(
            group_ids=[APP], include_authorized_operations=False)).groups[0]
        assert (cg.error_code, cg.error_message) == (69, f"Group {APP} is not a consumer group.")
        lg = raw(bs, 16, 5, messages.ListGroupsRequest(states_filter=[], types_filter=[]))
        assert [(x.group_id, x.protocol_type, x.group_state, x.group_type) for x in lg.groups] == [
            (APP, "streams", "Stable", "streams")]
        offsets = run_tool("kafka-streams-groups", ["--bootstrap-server", bs, "--describe",
                                                    "--group", APP, "--offsets"])
        header, *rows = offsets.stdout.strip().splitlines()
        assert header.split() == ["GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"]
        assert sorted(tuple(r.split()[:3]) for r in rows) == sorted(
            [(APP, "lines", str(p)) for p in range(4)] + [(APP, REPARTITION, str(p)) for p in range(4)])

        # the instance leaves on close (epoch -1); the empty group can be deleted
        app.stop()
        wait_for("an empty group", lambda: raw(bs, 89, 0, messages.StreamsGroupDescribeRequest(
            group_ids=[APP], include_authorized_operations=False)).groups[0].group_state == "Empty",
            [app])
        deleted = run_tool("kafka-streams-groups", ["--bootstrap-server", bs, "--delete",
                                                    "--group", APP])
        assert f"Deletion of requested streams groups ('{APP}') was successful." in deleted.stdout
        lg = raw(bs, 16, 5, messages.ListGroupsRequest(states_filter=[], types_filter=[]))
        assert lg.groups == []
    finally:
        app.stop()
