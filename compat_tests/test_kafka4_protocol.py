"""Small protocol behaviours of Kafka 4 that older brokers did differently (issue 18).

Hand-built requests with kbroker's codec (no client library picks these versions or values):

- a Fetch with session epoch -1 or 0 is a full fetch whatever its session id (kafka-go's
  ``Client.Fetch`` sends session id -1 with epoch -1);
- ``segment.bytes`` below 1 MiB is refused (KIP-1030);
- topics whose names collide once '.' and '_' are unified cannot coexist;
- ElectLeaders with ``timeout_ms`` 0 answers REQUEST_TIMED_OUT;
- a Produce v0-v2 request closes the connection (KIP-896; v0 stays advertised for old
  librdkafka, KAFKA-18659);
- ListOffsets v9-v11's tiered timestamps (-5 latest tiered, -6 earliest pending upload) on a
  broker without tiered storage, and special timestamps below their version.
"""
from __future__ import annotations

import socket
import struct
import time
import uuid

import pytest

from compat_tests.differential.common import Connection
from compat_tests.helpers import create_topic
from kbroker.wire import messages as M

CLIENT = "hand-built"

INVALID_CONFIG, INVALID_TOPIC_EXCEPTION, REQUEST_TIMED_OUT = 40, 17, 7


def _connect(bootstrap) -> Connection:
    host, port = bootstrap.rsplit(":", 1)
    return Connection((host, int(port)), timeout=30)


def _produce_one(conn, topic):
    from kbroker.wire.records import build_batch  # noqa: PLC0415 - only this test needs it
    batch = build_batch([(None, b"hello", [], int(time.time() * 1000))])
    P = M.ProduceRequest
    r = conn.request(0, 9, P(acks=-1, timeout_ms=10000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])]))
    assert r.responses[0].partition_responses[0].error_code == 0, r


def _fetch(conn, topic, session_id, epoch, version=12):
    F = M.FetchRequest
    return conn.request(1, version, F(
        replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=session_id, session_epoch=epoch, topics=[F.FetchTopic(topic=topic, partitions=[
            F.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]))


@pytest.mark.parametrize("session_id,epoch", [(-1, -1), (0, -1), (12345, -1), (12345, 0)])
def test_fetch_with_epoch_minus_one_or_zero_is_full(bootstrap, topic_name, session_id, epoch):
    create_topic(bootstrap, topic_name)
    conn = _connect(bootstrap)
    try:
        _produce_one(conn, topic_name)
        r = _fetch(conn, topic_name, session_id, epoch)
        assert r.error_code == 0, r
        [t] = r.responses
        [p] = t.partitions
        assert p.error_code == 0 and p.high_watermark == 1 and len(p.records) > 0
        # epoch -1 never opens a session; epoch 0 opens a new one (the named id is not reused)
        assert (r.session_id == 0) if epoch == -1 else (r.session_id not in (0, session_id))
    finally:
        conn.close()


def test_incremental_fetch_with_unknown_session(bootstrap, topic_name):
    create_topic(bootstrap, topic_name)
    conn = _connect(bootstrap)
    try:
        r = _fetch(conn, topic_name, 12345, 1)
        assert (r.error_code, r.session_id, r.responses) == (70, 0, [])  # FETCH_SESSION_ID_NOT_FOUND
        r = _fetch(conn, topic_name, 0, 0)
        assert r.error_code == 0 and r.session_id != 0
        r2 = _fetch(conn, topic_name, r.session_id, 5)
        assert (r2.error_code, r2.session_id) == (71, 0)                # INVALID_FETCH_SESSION_EPOCH
        r3 = _fetch(conn, topic_name, r.session_id, 1)
        assert (r3.error_code, r3.session_id) == (0, r.session_id)
    finally:
        conn.close()


def _create(conn, name, configs=None):
    C = M.CreateTopicsRequest
    r = conn.request(19, 7, C(timeout_ms=30000, topics=[C.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1,
        configs=[C.CreatableTopic.CreatableTopicConfig(name=k, value=v)
                 for k, v in (configs or {}).items()])]))
    return r.topics[0]


@pytest.mark.parametrize("value,ok", [("200", False), ("1048575", False), ("1048576", True)])
def test_segment_bytes_at_least_one_mib(bootstrap, topic_name, value, ok):
    conn = _connect(bootstrap)
    try:
        t = _create(conn, topic_name, {"segment.bytes": value})
        assert t.error_code == (0 if ok else INVALID_CONFIG), t
    finally:
        conn.close()


def test_topic_names_colliding_on_dot_and_underscore(bootstrap):
    base = "collide-" + uuid.uuid4().hex[:8]
    conn = _connect(bootstrap)
    try:
        assert _create(conn, f"{base}.x").error_code == 0
        t = _create(conn, f"{base}_x")
        assert t.error_code == INVALID_TOPIC_EXCEPTION
        assert t.error_message == f"Topic '{base}_x' collides with existing topic: {base}.x"
        assert _create(conn, f"{base}-x").error_code == 0      # '-' does not collide
    finally:
        conn.close()


def test_elect_leaders_with_zero_timeout(bootstrap, topic_name):
    create_topic(bootstrap, topic_name)
    E = M.ElectLeadersRequest
    conn = _connect(bootstrap)
    try:
        r = conn.request(43, 2, E(election_type=0, timeout_ms=0, topic_partitions=[
            E.TopicPartitions(topic=topic_name, partitions=[0])]))
        assert r.error_code == REQUEST_TIMED_OUT, r
        [res] = r.replica_election_results
        assert res.topic == topic_name
        assert [(p.partition_id, p.error_code) for p in res.partition_result] == [(0, REQUEST_TIMED_OUT)]
        # with time to run, the preferred leader already leads: ELECTION_NOT_NEEDED
        r = conn.request(43, 2, E(election_type=0, timeout_ms=30000, topic_partitions=[
            E.TopicPartitions(topic=topic_name, partitions=[0])]))
        assert r.replica_election_results[0].partition_result[0].error_code == 84
    finally:
        conn.close()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_below_v3_closes_the_connection(bootstrap, topic_name, version):
    create_topic(bootstrap, topic_name)
    name = topic_name.encode()
    message = struct.pack(">qiibbi", 0, 14, 0, 0, 0, -1) + struct.pack(">i", 1) + b"a"
    body = (struct.pack(">hi", 1, 5000) + struct.pack(">ih", 1, len(name)) + name
            + struct.pack(">ii", 1, 0) + struct.pack(">i", len(message)) + message)
    frame = struct.pack(">hhih", 0, version, 1, 4) + b"test" + body
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        try:
            got = s.recv(4)
        except ConnectionResetError:
            got = b""
        assert got == b"", "the broker answered instead of closing the connection"


def _list_offsets(conn, topic, version, timestamp):
    L = M.ListOffsetsRequest
    r = conn.request(2, version, L(replica_id=-1, isolation_level=0, timeout_ms=1000, topics=[
        L.ListOffsetsTopic(name=topic, partitions=[L.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])]))
    p = r.topics[0].partitions[0]
    return p.error_code, p.timestamp, p.offset, p.leader_epoch


def test_list_offsets_tiered_timestamps_without_tiered_storage(bootstrap, topic_name):
    """ListOffsets v9-v11 (KIP-1005 latest tiered -5, KIP-1023 earliest pending upload -6) on a
    broker without tiered storage, and the special timestamps below the version that defines them."""
    create_topic(bootstrap, topic_name)
    conn = _connect(bootstrap)
    try:
        _produce_one(conn, topic_name)
        time.sleep(0.01)       # the second record's timestamp is later: MAX_TIMESTAMP names it
        _produce_one(conn, topic_name)
        got = {(v, ts): _list_offsets(conn, topic_name, v, ts)
               for v, ts in [(8, -5), (9, -5), (10, -5), (11, -5), (10, -6), (11, -6), (11, -4),
                             (11, -2), (11, -1), (11, -7), (8, -4), (7, -4), (6, -3), (7, -3)]}
        none, unsupported = (0, -1, -1, -1), (35, -1, -1, -1)
        assert got == {
            (8, -5): unsupported, (9, -5): none, (10, -5): none, (11, -5): none,
            (10, -6): unsupported, (11, -6): none, (11, -7): unsupported,
            (11, -4): (0, -1, 0, 0), (11, -2): (0, -1, 0, 0), (11, -1): (0, -1, 2, 0),
            (8, -4): (0, -1, 0, 0), (7, -4): unsupported, (6, -3): unsupported,
            (7, -3): (0, got[(7, -3)][1], 1, 0)}
    finally:
        conn.close()


def test_alter_partition_reassignments_v1_echoes_the_flag(bootstrap, topic_name):
    """AlterPartitionReassignments v1 (KIP-860): the answer echoes
    allow_replication_factor_change; a same-size target passes with the flag off; an unknown
    broker is refused before the replication factor is looked at."""
    create_topic(bootstrap, topic_name)
    A = M.AlterPartitionReassignmentsRequest
    conn = _connect(bootstrap)
    try:
        def go(replicas, allow):
            r = conn.request(45, 1, A(timeout_ms=30000, allow_replication_factor_change=allow, topics=[
                A.ReassignableTopic(name=topic_name, partitions=[
                    A.ReassignablePartition(partition_index=0, replicas=replicas)])]))
            return r.error_code, r.allow_replication_factor_change, \
                [(p.partition_index, p.error_code) for t in r.responses for p in t.partitions]
        assert go([1], False) == (0, False, [(0, 0)])
        assert go([1], True) == (0, True, [(0, 0)])
        assert go([1, 7], False) == (0, False, [(0, 39)])   # INVALID_REPLICA_ASSIGNMENT
    finally:
        conn.close()
