"""APIs Kafka 4 clients and tools call, answered alike by both brokers (issue 18).

Hand-built requests: DescribeTopicPartitions (75) with pagination and cursors,
ListConfigResources (74) v0/v1, DescribeCluster v2, AlterReplicaLogDirs (34) on a broker
with one log directory, DescribeLogDirs v5.
"""
from __future__ import annotations

import time
import uuid

from compat_tests.differential.common import Connection
from compat_tests.helpers import create_topic
from kbroker.wire import messages as M

CLIENT = "hand-built"


def _connect(bootstrap) -> Connection:
    host, port = bootstrap.rsplit(":", 1)
    return Connection((host, int(port)), timeout=30)


def _dtp(conn, names, limit, cursor=None):
    R = M.DescribeTopicPartitionsRequest
    r = conn.request(75, 0, R(topics=[R.TopicRequest(name=n) for n in names],
                              response_partition_limit=limit,
                              cursor=None if cursor is None else R.Cursor(topic_name=cursor[0],
                                                                          partition_index=cursor[1])))
    topics = [(t.name, t.error_code, t.is_internal, t.topic_authorized_operations,
               [(p.partition_index, p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes,
                 p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas)
                for p in t.partitions]) for t in r.topics]
    nxt = None if r.next_cursor is None else (r.next_cursor.topic_name, r.next_cursor.partition_index)
    return topics, nxt


def test_describe_topic_partitions_pages(bootstrap):
    base = "dtp-" + uuid.uuid4().hex[:8]
    a, b, missing = f"{base}-a", f"{base}-b", f"{base}-z"
    create_topic(bootstrap, a, partitions=5)
    create_topic(bootstrap, b, partitions=3)
    conn = _connect(bootstrap)
    try:
        def part(i):
            return (i, 0, 1, [1], [1], [], [], [])
        # page 1: four partitions of a, the cursor at a's fifth
        topics, nxt = _dtp(conn, [b, missing, a], 4)
        assert [(t[0], t[1], t[2], t[3]) for t in topics] == [(a, 0, False, 3576)]
        assert topics[0][4] == [part(i) for i in range(4)]
        assert nxt == (a, 4)
        # page 2: the rest of a and all of b fill the limit exactly: the cursor names the next topic
        topics, nxt = _dtp(conn, [b, missing, a], 4, cursor=nxt)
        assert [(t[0], [p[0] for p in t[4]]) for t in topics] == [(a, [4]), (b, [0, 1, 2])]
        assert nxt == (missing, 0)
        # page 3: the missing topic
        topics, nxt = _dtp(conn, [b, missing, a], 4, cursor=nxt)
        assert [(t[0], t[1], t[4]) for t in topics] == [(missing, 3, [])] and nxt is None
        # a cursor outside the topic list, a negative cursor partition: the request is invalid
        for cursor in [(f"{base}-q", 0), (a, -1)]:
            topics, nxt = _dtp(conn, [a, b], 10, cursor=cursor)
            assert [(t[0], t[1], t[4]) for t in topics] == [(a, 42, []), (b, 42, [])] and nxt is None
        # every topic (empty list) from a cursor: the listing starts there
        topics, nxt = _dtp(conn, [], 2000, cursor=(b, 1))
        assert topics[0][0] == b and [p[0] for p in topics[0][4]] == [1, 2]
        assert all(t[0] > b for t in topics[1:])
    finally:
        conn.close()


def test_list_config_resources(bootstrap, topic_name):
    create_topic(bootstrap, topic_name)
    R = M.ListConfigResourcesRequest
    conn = _connect(bootstrap)
    try:
        def listed(version, types):
            r = conn.request(74, version, R(resource_types=types) if version else R())
            assert r.error_code == 0, r
            return [(c.resource_name, c.resource_type) for c in r.config_resources]
        assert listed(0, []) == []                                   # client metrics only
        assert (topic_name, 2) in listed(1, [2])
        assert {t for _, t in listed(1, [2])} == {2}
        assert listed(1, [4]) == [("1", 4)]
        assert listed(1, [16]) == []
        everything = listed(1, [])
        assert (topic_name, 2) in everything and ("1", 4) in everything
    finally:
        conn.close()


def test_describe_cluster_v2(bootstrap):
    R = M.DescribeClusterRequest
    conn = _connect(bootstrap)
    try:
        for fenced in (False, True):
            r = conn.request(60, 2, R(include_cluster_authorized_operations=False, endpoint_type=1,
                                      include_fenced_brokers=fenced))
            assert r.error_code == 0
            assert [(b.broker_id, b.is_fenced) for b in r.brokers] == [(1, False)]
    finally:
        conn.close()


def test_alter_replica_log_dirs_on_one_directory(bootstrap, topic_name):
    create_topic(bootstrap, topic_name)
    conn = _connect(bootstrap)
    try:
        d = conn.request(35, 5, M.DescribeLogDirsRequest(topics=None))
        assert d.error_code == 0 and len(d.results) == 1
        assert d.results[0].is_cordoned is False
        log_dir = d.results[0].log_dir
        A = M.AlterReplicaLogDirsRequest

        def alter(path, topic, partition):
            r = conn.request(34, 2, A(dirs=[A.AlterReplicaLogDir(path=path, topics=[
                A.AlterReplicaLogDirTopic(name=topic, partitions=[partition])])]))
            [t] = r.results
            assert t.topic_name == topic
            return t.partitions[0].error_code
        assert alter(log_dir, topic_name, 0) == 0                   # already there
        assert alter("/nonexistent/kafka-logs", topic_name, 0) == 57  # LOG_DIR_NOT_FOUND
        assert alter(log_dir, topic_name + "-none", 0) == 3          # UNKNOWN_TOPIC_OR_PARTITION
        assert alter(log_dir, topic_name, 7) == 3
    finally:
        conn.close()


def test_offset_commit_and_fetch_by_topic_id(bootstrap, topic_name):
    from compat_tests.differential.common import _until_ok
    create_topic(bootstrap, topic_name, partitions=2)
    group = "ids-" + uuid.uuid4().hex[:8]
    conn = _connect(bootstrap)
    try:
        md = conn.request(3, 12, M.MetadataRequest(topics=[M.MetadataRequest.MetadataRequestTopic(
            name=topic_name)], allow_auto_topic_creation=False))
        tid = md.topics[0].topic_id
        missing = uuid.uuid4()
        _until_ok(lambda: conn.request(10, 4, M.FindCoordinatorRequest(
            key_type=0, coordinator_keys=[group])).coordinators[0])
        C = M.OffsetCommitRequest
        for _ in range(60):   # until the coordinator has loaded (14/15/16 are retried by clients)
            r = conn.request(8, 10, C(
                group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
                    C.OffsetCommitRequestTopic(topic_id=tid, partitions=[
                        C.OffsetCommitRequestPartition(partition_index=1, committed_offset=5,
                                                       committed_metadata="m")]),
                    C.OffsetCommitRequestTopic(topic_id=missing, partitions=[
                        C.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]))
            if not {p.error_code for t in r.topics for p in t.partitions} & {14, 15, 16}:
                break
            time.sleep(0.25)
        # the unknown id is answered first
        assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions])
                for t in r.topics] == [(missing, [(0, 100)]), (tid, [(1, 0)])]
        r = conn.request(8, 10, C(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                  topics=[C.OffsetCommitRequestTopic(topic_id=missing, partitions=[
                                      C.OffsetCommitRequestPartition(partition_index=0,
                                                                     committed_offset=1)])]))
        assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions])
                for t in r.topics] == [(missing, [(0, 100)])]             # UNKNOWN_TOPIC_ID
        F = M.OffsetFetchRequest
        r = conn.request(9, 10, F(groups=[F.OffsetFetchRequestGroup(group_id=group, topics=[
            F.OffsetFetchRequestTopics(topic_id=tid, partition_indexes=[0, 1])])]))
        [g] = r.groups
        assert g.error_code == 0
        assert [(t.topic_id, [(p.partition_index, p.committed_offset, p.metadata, p.error_code)
                              for p in t.partitions]) for t in g.topics] == \
            [(tid, [(0, -1, "", 0), (1, 5, "m", 0)])]
        r = conn.request(9, 10, F(groups=[F.OffsetFetchRequestGroup(group_id=group, topics=None)]))
        assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in r.groups[0].topics] \
            == [(tid, [1])]
    finally:
        conn.close()


def test_list_transactions_by_pattern(bootstrap):
    from compat_tests.differential.common import _until_ok
    base = "ltp-" + uuid.uuid4().hex[:8]
    conn = _connect(bootstrap)
    try:
        for tid in (f"{base}-orders", f"{base}-payments"):
            _until_ok(lambda: conn.request(10, 4, M.FindCoordinatorRequest(
                key_type=1, coordinator_keys=[tid])).coordinators[0])
            r = _until_ok(lambda: conn.request(22, 1, M.InitProducerIdRequest(
                transactional_id=tid, transaction_timeout_ms=60000)))
            assert r.error_code == 0, r
        L = M.ListTransactionsRequest

        def listed(pattern):
            r = conn.request(66, 2, L(state_filters=[], producer_id_filters=[],
                                      transactional_id_pattern=pattern))
            return r.error_code, sorted(t.transactional_id for t in r.transaction_states
                                        if t.transactional_id.startswith(base))
        assert listed(f"{base}-o.*") == (0, [f"{base}-orders"])
        assert listed("orders") == (0, [])                       # the whole id must match
        assert listed(None) == (0, [f"{base}-orders", f"{base}-payments"])
        assert listed(f"{base}-(orders|payments)") == (0, [f"{base}-orders", f"{base}-payments"])
        assert listed("[")[0] == 128                               # INVALID_REGULAR_EXPRESSION
    finally:
        conn.close()
