"""ElectLeaders (43) and partition reassignment (45/46) answers on a single node, by version.

The compat harness runs one broker per target, so no election can move a leader here; what
one node can show is which error each case gets: a partition led by its preferred replica
is ELECTION_NOT_NEEDED (preferred, and unclean for a partition with a leader), unknown
topics and partitions are UNKNOWN_TOPIC_OR_PARTITION, an election type that does not exist
is INVALID_REQUEST, a null topic list leaves out the partitions that need nothing; a
reassignment naming an unregistered or repeated broker, or nothing, is
INVALID_REPLICA_ASSIGNMENT, the current replica list is accepted (nothing to do), a cancel
with nothing running is NO_REASSIGNMENT_IN_PROGRESS, and nothing is listed as ongoing.
Hand-built requests (the versions are chosen here, not by a client library).
"""

from __future__ import annotations

import pytest

from compat_tests.differential.common import Connection
from compat_tests.helpers import create_topic, wait_until
from kbroker.wire import messages as M

CLIENT = "hand-built"

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, INVALID_REQUEST = 0, 3, 39, 42
ELECTION_NOT_NEEDED, NO_REASSIGNMENT_IN_PROGRESS = 84, 85


@pytest.fixture
def conn(bootstrap):
    host, port = bootstrap.rsplit(":", 1)
    c = Connection((host, int(port)), timeout=30)
    yield c
    c.close()


@pytest.fixture
def topic(bootstrap, topic_name):
    create_topic(bootstrap, topic_name, partitions=2)
    return topic_name


def node_id(conn) -> int:
    md = conn.request(3, 12, M.MetadataRequest(topics=None, allow_auto_topic_creation=False))
    [b] = md.brokers
    return b.node_id


def elect(conn, version, topics, election_type=0):
    R = M.ElectLeadersRequest
    req = R(timeout_ms=30000, topic_partitions=None if topics is None else [
        R.TopicPartitions(topic=t, partitions=ps) for t, ps in topics])
    if version >= 1:
        req.election_type = election_type
    return conn.request(43, version, req)


def answers(resp):
    return {(r.topic, p.partition_id): p.error_code for r in resp.replica_election_results
            for p in r.partition_result}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elect_leaders_codes(conn, topic, version):
    resp = wait_until(lambda: (lambda r: r if answers(r).get((topic, 0)) == ELECTION_NOT_NEEDED else None)(
        elect(conn, version, [(topic, [0, 1, 7]), ("no-such-topic-x", [0])])),
        what="the topic's partitions known to the controller")
    if version >= 1:
        assert resp.error_code == NONE
    assert answers(resp) == {(topic, 0): ELECTION_NOT_NEEDED, (topic, 1): ELECTION_NOT_NEEDED,
                             (topic, 7): UNKNOWN_TOPIC_OR_PARTITION,
                             ("no-such-topic-x", 0): UNKNOWN_TOPIC_OR_PARTITION}
    assert all(p.error_message for r in resp.replica_election_results for p in r.partition_result)


@pytest.mark.parametrize("version", [1, 2])
def test_unclean_election_of_a_led_partition_is_not_needed(conn, topic, version):
    resp = elect(conn, version, [(topic, [0])], election_type=1)
    assert (resp.error_code, answers(resp)) == (NONE, {(topic, 0): ELECTION_NOT_NEEDED})


def test_unknown_election_type_is_invalid_request(conn, topic):
    resp = elect(conn, 2, [(topic, [0])], election_type=2)
    assert (resp.error_code, answers(resp)) == (INVALID_REQUEST, {(topic, 0): INVALID_REQUEST})


def test_elect_all_partitions_leaves_out_those_that_need_nothing(conn, topic):
    resp = elect(conn, 2, None)
    assert resp.error_code == NONE
    mine = [r for r in resp.replica_election_results if r.topic == topic]
    assert len(mine) == 1 and mine[0].partition_result == []
    assert elect(conn, 2, []).replica_election_results == []


def reassign(conn, topic, entries):
    R = M.AlterPartitionReassignmentsRequest
    resp = conn.request(45, 0, R(timeout_ms=30000, topics=[R.ReassignableTopic(name=topic, partitions=[
        R.ReassignablePartition(partition_index=i, replicas=reps) for i, reps in entries])]))
    assert resp.error_code == NONE
    [t] = resp.responses
    assert t.name == topic
    return [(p.partition_index, p.error_code) for p in t.partitions]


def test_reassignment_codes(conn, topic):
    me = node_id(conn)
    assert reassign(conn, topic, [(0, [me])]) == [(0, NONE)], "the current replicas: nothing to do"
    assert reassign(conn, topic, [(0, [me, me + 100])]) == [(0, INVALID_REPLICA_ASSIGNMENT)]
    assert reassign(conn, topic, [(0, [me, me])]) == [(0, INVALID_REPLICA_ASSIGNMENT)]
    assert reassign(conn, topic, [(1, [])]) == [(1, INVALID_REPLICA_ASSIGNMENT)]
    assert reassign(conn, topic, [(0, None)]) == [(0, NO_REASSIGNMENT_IN_PROGRESS)]
    assert reassign(conn, topic, [(9, [me])]) == [(9, UNKNOWN_TOPIC_OR_PARTITION)]
    assert reassign(conn, "no-such-topic-y", [(0, [me])]) == [(0, UNKNOWN_TOPIC_OR_PARTITION)]


def test_nothing_listed_as_ongoing(conn, topic):
    R = M.ListPartitionReassignmentsRequest
    resp = conn.request(46, 0, R(timeout_ms=30000, topics=[
        R.ListPartitionReassignmentsTopics(name=topic, partition_indexes=[0, 1, 5])]))
    assert (resp.error_code, resp.topics) == (NONE, [])
    resp = conn.request(46, 0, R(timeout_ms=30000, topics=None))
    assert resp.error_code == NONE and all(t.name != topic for t in resp.topics)
