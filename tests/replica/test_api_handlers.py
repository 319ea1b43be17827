"""The data-plane API modules at their lowest and highest advertised versions: request
encoded as a client would, handler run against a real ReplicaManager, response encoded
(file regions included) and decoded again."""
from __future__ import annotations

import uuid

import pytest

from kbroker.api import REGISTRY, RequestContext, fetch, load_all
from kbroker.api.produce import SERVED_FROM
from kbroker.replica import FetchResult
from kbroker.log.region import FileRegion
from kbroker.wire import messages, protocol
from kbroker.wire.error_codes import ErrorCode

from .conftest import batch, decode_region

load_all()


async def handled(broker, api_key, version, body, client_id="test"):
    """The handler's answer (as it returned it, not encoded) to ``body`` sent as a client would."""
    frame = protocol.encode_request(api_key, version, 7, client_id, body)
    header, req = protocol.decode_request(memoryview(frame)[4:])
    spec = REGISTRY[api_key]
    ctx = RequestContext(broker=broker, api_key=api_key, api_version=version,
                         correlation_id=7, client_id=client_id)
    return await spec.handler(ctx, req)


async def call(broker, api_key, version, body, client_id="test"):
    resp = await handled(broker, api_key, version, body, client_id)
    if resp is None:
        return None
    parts = protocol.encode_response(api_key, version, 7, resp)
    wire = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in parts)
    size = int.from_bytes(wire[:4], "big")
    assert size == len(wire) - 4
    corr, out = protocol.decode_response(wire[4:], api_key, version)
    assert corr == 7
    return out


def versions(api_key):
    s = REGISTRY[api_key]
    return sorted({max(s.min_version, s.served_from), s.max_version})


P = messages.ProduceRequest
F = messages.FetchRequest


def _produce_req(topic, records, acks=-1, partition=0, ids=None):
    """``ids`` (topic name → id) for v13+, which names topics by id."""
    data = [P.PartitionProduceData(index=partition, records=records)]
    return P(acks=acks, timeout_ms=1000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=data) if ids is None
        else P.TopicProduceData(topic_id=ids[topic], partition_data=data)])


produce_req = _produce_req


@pytest.mark.parametrize("version", versions(0))
async def test_produce(broker, cluster, version):
    t = cluster.create("t", 1, {"message.timestamp.before.max.ms": "1000"})
    lat = cluster.create("lat", 1, {"message.timestamp.type": "LogAppendTime"})
    ids = {"t": t.topic_id, "lat": lat.topic_id, "nope": uuid.uuid4()} if version >= 13 else None

    def produce_req(*a, **kw):  # noqa: F811 - by topic id from v13
        return _produce_req(*a, ids=ids, **kw)
    out = await call(broker, 0, version, produce_req("t", batch(b"a", b"b")))
    pr = out.responses[0].partition_responses[0]
    assert (pr.error_code, pr.base_offset) == (0, 0)
    if version >= 5:
        assert pr.log_start_offset == 0
    out = await call(broker, 0, version, produce_req("lat", batch(b"a")))
    if version >= 2:
        assert out.responses[0].partition_responses[0].log_append_time_ms == broker.clock.now
    out = await call(broker, 0, version, produce_req("t", batch(b"old", timestamps=[0])))
    pr = out.responses[0].partition_responses[0]
    assert pr.error_code == ErrorCode.INVALID_TIMESTAMP
    if version >= 8:
        assert [e.batch_index for e in pr.record_errors] == [0] and pr.error_message
    out = await call(broker, 0, version, produce_req("nope", batch(b"a")))
    assert out.responses[0].partition_responses[0].error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if ids is None else ErrorCode.UNKNOWN_TOPIC_ID)
    if ids is not None:
        assert out.responses[0].topic_id == ids["nope"]
    out = await call(broker, 0, version, produce_req("t", batch(b"a"), acks=2))
    assert out.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert await call(broker, 0, version, produce_req("t", batch(b"c"), acks=0)) is None
    assert broker.replicas.get_partition("t", 0).log_end_offset == 3


@pytest.mark.parametrize("version", range(SERVED_FROM, versions(0)[-1] + 1))
async def test_produce_success_answer_is_the_generated_constructors(broker, cluster, version):
    """A successful partition's answer (built with ``make``, the constructor as a plain
    call) is, in value and in bytes, the one the class call builds with the append's
    offsets, at every served version."""
    R = messages.ProduceResponse
    t = cluster.create("t", 2)
    ids = {"t": t.topic_id} if version >= 13 else None
    await call(broker, 0, version, produce_req("t", batch(b"a", b"b"), partition=1, ids=ids))
    resp = await handled(broker, 0, version,
                         produce_req("t", batch(b"c"), partition=1, ids=ids))
    fast = resp.responses[0].partition_responses[0]
    made = R.PartitionProduceResponse(index=1, error_code=0, base_offset=2,
                                      log_append_time_ms=-1, log_start_offset=0)
    assert all(hasattr(fast, a) for a in type(fast).__slots__)
    assert fast == made

    def encoded(p):
        return R(responses=[R.TopicProduceResponse(name="t", partition_responses=[p])]) \
            .encode(version)
    assert encoded(fast) == encoded(made)


@pytest.mark.parametrize("version", range(versions(1)[0], versions(1)[-1] + 1))
def test_fetch_partition_answer_is_the_generated_constructors(version, tmp_path):
    """A partition's answer (fetch.partition_data, built with ``make``): every field is
    set, and the answer and its bytes are the class call's, with records or without,
    aborted transactions or none (read_uncommitted), a diverging epoch or none."""
    R = messages.FetchResponse
    path = tmp_path / "seg"
    path.write_bytes(bytes(range(256)) * 4)
    with open(path, "rb") as f:
        region = FileRegion(f.fileno(), 100, 600, 0)
        cases = [
            FetchResult("t", 3, 0, 90, 80, 7, region, [(5, 11), (6, 12)]),
            FetchResult("t", 3, 0, 90, 90, 7, None, None),
            FetchResult("t", 2, ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1, None, []),
            FetchResult("t", 1, 0, 90, 90, 0, None, None, diverging_epoch=(4, 55)),
        ]
        for r in cases:
            fast = fetch.partition_data(r)
            made = R.PartitionData(
                partition_index=r.partition, error_code=r.error_code,
                high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
                log_start_offset=r.log_start_offset, preferred_read_replica=-1,
                aborted_transactions=None if r.aborted_transactions is None else [
                    R.AbortedTransaction(producer_id=p, first_offset=o)
                    for p, o in r.aborted_transactions],
                records=r.records if r.records is not None else b"")
            if r.diverging_epoch is not None:
                made.diverging_epoch = R.EpochEndOffset(epoch=r.diverging_epoch[0],
                                                        end_offset=r.diverging_epoch[1])
            assert all(hasattr(fast, a) for a in type(fast).__slots__)
            assert fast == made

            def encoded(p):
                parts = protocol.encode_response(1, version, 7, R(responses=[
                    R.FetchableTopicResponse(topic="t", topic_id=uuid.UUID(int=5),
                                             partitions=[p])]))
                return b"".join(x if isinstance(x, bytes) else x.read_bytes() for x in parts)
            if r.diverging_epoch is not None and version < 12:
                continue                       # a tagged field from v12: not sendable before
            assert encoded(fast) == encoded(made)


def fetch_req(parts, *, isolation=0, min_bytes=1, max_wait=0, session_id=0, epoch=-1, ids=None):
    """``ids`` (topic name → id) for v13+, which name topics by id."""
    topics = {}
    for topic, p, off in parts:
        topics.setdefault(topic, []).append(F.FetchPartition(partition=p, fetch_offset=off,
                                                             partition_max_bytes=1 << 20))
    return F(replica_id=-1, max_wait_ms=max_wait, min_bytes=min_bytes, max_bytes=1 << 24,
             isolation_level=isolation, session_id=session_id, session_epoch=epoch,
             topics=[F.FetchTopic(topic=t, partitions=ps) if ids is None
                     else F.FetchTopic(topic_id=ids[t], partitions=ps) for t, ps in topics.items()])


@pytest.mark.parametrize("version", versions(1))
async def test_fetch(broker, cluster, version):
    t = cluster.create("t", 2)
    broker.replicas.append("t", 1, batch(b"x", b"y"))
    ids = {"t": t.topic_id, "u": uuid.uuid4()} if version >= 13 else None

    def req(*a, **kw):  # the same request, by topic id from v13
        return fetch_req(*a, ids=ids, **kw)
    out = await call(broker, 1, version, req([("t", 1, 0), ("t", 0, 0), ("u", 0, 0)],
                                                   isolation=1))
    if ids is None:
        assert [t.topic for t in out.responses] == ["t", "u"]
    else:
        assert [t.topic_id for t in out.responses] == [ids["t"], ids["u"]]
    p1, p0 = out.responses[0].partitions
    assert (p1.partition_index, p1.error_code, p1.high_watermark, p1.last_stable_offset) == (1, 0, 2, 2)
    assert p1.aborted_transactions == [] and p1.preferred_read_replica == -1
    assert [r.value for r in decode_region(_Bytes(p1.records))] == [b"x", b"y"]
    assert p0.partition_index == 0 and len(p0.records) == 0
    assert out.responses[1].partitions[0].error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if ids is None else ErrorCode.UNKNOWN_TOPIC_ID)
    if version >= 16:
        # KIP-951: a partition led elsewhere names its current leader
        o = cluster.create("o", 1, epoch=3, leader=2)
        ids["o"] = o.topic_id
        out = await call(broker, 1, version, req([("o", 0, 0)]))
        p = out.responses[0].partitions[0]
        assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (2, 3)
    out = await call(broker, 1, version, req([("t", 1, 0)], isolation=0))
    assert out.responses[0].partitions[0].aborted_transactions is None
    out = await call(broker, 1, version, req([("t", 1, 9)]))
    assert out.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    if version >= 7:
        # epoch 0: a full fetch that opens a session (KIP-227)
        out = await call(broker, 1, version, req([("t", 1, 2)], session_id=0, epoch=0))
        assert out.session_id != 0 and out.error_code == 0
        assert [p.partition_index for t in out.responses for p in t.partitions] == [1]
        sid = out.session_id
        # incremental, nothing changed (at the log end, same watermarks): an empty answer
        out = await call(broker, 1, version, F(replica_id=-1, max_wait_ms=0, min_bytes=1,
                                               max_bytes=1 << 20, session_id=sid, session_epoch=1,
                                               topics=[]))
        assert (out.error_code, out.session_id, out.responses) == (0, sid, [])
        # a session opened with topic ids (v13+) is not continued by names, nor the reverse
        other = 12 if version >= 13 else 13
        out = await call(broker, 1, other, F(replica_id=-1, max_wait_ms=0, min_bytes=1,
                                             max_bytes=1 << 20, session_id=sid, session_epoch=2,
                                             topics=[]))
        assert (out.error_code, out.session_id) == (ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, 0)
        # a stale epoch; an unknown session
        out = await call(broker, 1, version, req([("t", 1, 0)], session_id=sid, epoch=1))
        assert (out.error_code, out.session_id) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
        out = await call(broker, 1, version, req([("t", 1, 0)], session_id=5, epoch=1))
        assert out.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        # epoch -1 is a full, sessionless fetch whatever the id (and closes that session)
        for session_id in (-1, 5, sid):
            out = await call(broker, 1, version, req([("t", 1, 0)], session_id=session_id, epoch=-1))
            assert (out.error_code, out.session_id) == (0, 0)
            assert [r.value for r in decode_region(_Bytes(out.responses[0].partitions[0].records))] == [b"x", b"y"]
        out = await call(broker, 1, version, req([("t", 1, 0)], session_id=sid, epoch=2))
        assert out.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


class _Bytes:
    def __init__(self, data):
        self.data = bytes(data)

    def read_bytes(self):
        return self.data


L = messages.ListOffsetsRequest


@pytest.mark.parametrize("version", versions(2))
async def test_list_offsets(broker, cluster, version):
    cluster.create("t", 1, epoch=4)
    broker.replicas.append("t", 0, batch(b"a", b"b"))
    for ts, want in [(-2, 0), (-1, 2)]:
        out = await call(broker, 2, version, L(replica_id=-1, topics=[L.ListOffsetsTopic(
            name="t", partitions=[L.ListOffsetsPartition(partition_index=0, timestamp=ts)])]))
        p = out.topics[0].partitions[0]
        assert (p.error_code, p.offset) == (0, want)
        if version >= 4:
            assert p.leader_epoch == 4
    out = await call(broker, 2, version, L(replica_id=-1, topics=[L.ListOffsetsTopic(
        name="t", partitions=[L.ListOffsetsPartition(partition_index=0, timestamp=-3),
                              L.ListOffsetsPartition(partition_index=1, timestamp=-1)])]))
    p, missing = out.topics[0].partitions
    assert p.error_code == (0 if version >= 7 else ErrorCode.UNSUPPORTED_VERSION)
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


O = messages.OffsetForLeaderEpochRequest


@pytest.mark.parametrize("version", versions(23))
async def test_offset_for_leader_epoch(broker, cluster, version):
    cluster.create("t", 1, epoch=2)
    broker.replicas.append("t", 0, batch(b"a"))
    out = await call(broker, 23, version, O(replica_id=-1, topics=[O.OffsetForLeaderTopic(
        topic="t", partitions=[O.OffsetForLeaderPartition(partition=0, leader_epoch=2,
                                                           current_leader_epoch=2),
                               O.OffsetForLeaderPartition(partition=0, leader_epoch=3),
                               O.OffsetForLeaderPartition(partition=3, leader_epoch=2)])]))
    a, b, c = out.topics[0].partitions
    assert (a.error_code, a.leader_epoch, a.end_offset) == (0, 2, 1)
    assert (b.error_code, b.leader_epoch, b.end_offset) == (0, -1, -1)
    assert c.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


D = messages.DeleteRecordsRequest


@pytest.mark.parametrize("version", versions(21))
async def test_delete_records(broker, cluster, version):
    cluster.create("t", 1)
    broker.replicas.append("t", 0, batch(b"a", b"b", b"c"))
    out = await call(broker, 21, version, D(timeout_ms=1000, topics=[D.DeleteRecordsTopic(
        name="t", partitions=[D.DeleteRecordsPartition(partition_index=0, offset=2)])]))
    p = out.topics[0].partitions[0]
    assert (p.error_code, p.low_watermark) == (0, 2)
    out = await call(broker, 21, version, D(timeout_ms=1000, topics=[D.DeleteRecordsTopic(
        name="t", partitions=[D.DeleteRecordsPartition(partition_index=0, offset=9),
                              D.DeleteRecordsPartition(partition_index=0, offset=-1)])]))
    a, b = out.topics[0].partitions
    assert a.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (b.error_code, b.low_watermark) == (0, 3)


DL = messages.DescribeLogDirsRequest


@pytest.mark.parametrize("version", versions(35))
async def test_describe_log_dirs(broker, cluster, version):
    cluster.create("t", 2)
    broker.replicas.append("t", 1, batch(b"a" * 50))
    out = await call(broker, 35, version, DL(topics=None))
    [res] = out.results
    assert res.error_code == 0 and res.log_dir.endswith("data")
    [t] = res.topics
    sizes = {p.partition_index: p.partition_size for p in t.partitions}
    assert sizes[0] == 0 and sizes[1] > 50
    if version >= 4:
        assert res.total_bytes > 0
    out = await call(broker, 35, version, DL(topics=[DL.DescribableLogDirTopic(topic="t", partitions=[1])]))
    assert [p.partition_index for p in out.results[0].topics[0].partitions] == [1]
