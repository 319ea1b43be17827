"""Kafka's answers in the corners of the data plane, on the in-process replication harness
(three ReplicaManagers on real files; follower fetches carried by hand): KIP-951's
current leader in Produce, DeleteRecords waiting for every replica's log start offset
(DelayedDeleteRecords), DescribeLogDirs for follower replicas."""
from __future__ import annotations

import pytest
import trio
import trio.testing

from kbroker.wire import messages
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode

from .replication_harness import Cluster
from .test_api_handlers import call

T = "corner"
P = messages.ProduceRequest


def batch(*values) -> bytes:
    return rec.build_batch([rec.SimpleRecord(None, v, (), 1_700_000_000_000) for v in values])


def produce_req(partitions=(0,), acks=1):
    return P(transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name=T, partition_data=[P.PartitionProduceData(index=i, records=batch(b"v"))
                                for i in partitions])])


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


# --------------------------------------------------------------------------- KIP-951

@pytest.mark.parametrize("version", [9, 10, 11])
async def test_produce_to_a_follower_names_the_leader(cluster, version):
    cluster.create(T, leader=1, partitions=2)
    cluster.set_partition(T, 1, leader=3)            # partition 1: leader 3, epoch 1
    resp = await call(cluster.nodes[2].broker, 0, version, produce_req((0, 1)))
    parts = {p.index: p for p in resp.responses[0].partition_responses}
    assert {i: p.error_code for i, p in parts.items()} == {
        0: ErrorCode.NOT_LEADER_OR_FOLLOWER, 1: ErrorCode.NOT_LEADER_OR_FOLLOWER}
    got = {i: (p.current_leader.leader_id, p.current_leader.leader_epoch)
           for i, p in parts.items()}
    eps = [(e.node_id, e.host, e.port, e.rack) for e in resp.node_endpoints]
    if version >= 10:
        assert got == {0: (1, 0), 1: (3, 1)}
        assert eps == [(1, "127.0.0.1", 9091, "r1"), (3, "127.0.0.1", 9093, "r3")]
    else:                                            # not on the wire before v10
        assert got == {0: (-1, -1), 1: (-1, -1)} and eps == []


async def test_produce_current_leader_only_for_not_leader_and_live_brokers(cluster):
    cluster.create(T, leader=1, partitions=1)
    resp = await call(cluster.nodes[1].broker, 0, 11, P(
        transactional_id=None, acks=1, timeout_ms=1000, topic_data=[P.TopicProduceData(
            name=T, partition_data=[P.PartitionProduceData(index=4, records=batch(b"v"))])]))
    [p] = resp.responses[0].partition_responses
    assert p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (-1, -1)
    assert resp.node_endpoints == []
    # a fenced leader is named but its endpoint is not given (Kafka: alive brokers only)
    from dataclasses import replace
    image = cluster.image()
    image.brokers[1] = replace(image.brokers[1], fenced=True)
    cluster.nodes[2].replicas.apply_image(image)
    resp = await call(cluster.nodes[2].broker, 0, 11, produce_req())
    [p] = resp.responses[0].partition_responses
    assert (p.error_code, p.current_leader.leader_id) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, 1)
    assert resp.node_endpoints == []


# --------------------------------------------------------------------------- DeleteRecords

D = messages.DeleteRecordsRequest


def delete_req(offset, timeout_ms=30_000, partition=0):
    return D(timeout_ms=timeout_ms, topics=[D.DeleteRecordsTopic(name=T, partitions=[
        D.DeleteRecordsPartition(partition_index=partition, offset=offset)])])


async def test_delete_records_waits_for_every_replica_log_start(cluster, autojump_clock):
    cluster.create(T, leader=1)
    cluster.nodes[1].replicas.append(T, 0, batch(b"a", b"b", b"c", b"d", b"e"), required_acks=1)
    await cluster.catch_up(T)
    out = []

    async def deleter():
        out.append(await call(cluster.nodes[1].broker, 21, 2, delete_req(3)))

    async with trio.open_nursery() as n:
        n.start_soon(deleter)
        await trio.testing.wait_all_tasks_blocked()
        assert not out and cluster.nodes[1].replica(T).log.log_start_offset == 3
        # follower 2 learns the leader's log start, then reports its own in the next fetch
        await cluster.fetch_once(2, T)
        assert cluster.nodes[2].replica(T).log.log_start_offset == 3
        await cluster.fetch_once(2, T)
        await trio.testing.wait_all_tasks_blocked()
        assert not out                               # replica 3 still starts at 0
        await cluster.fetch_once(3, T)
        await cluster.fetch_once(3, T)
    [resp] = out
    [p] = resp.topics[0].partitions
    assert (p.error_code, p.low_watermark) == (ErrorCode.NONE, 3)


async def test_delete_records_times_out_and_single_replica_answers_at_once(cluster,
                                                                           autojump_clock):
    cluster.create(T, leader=1)
    cluster.create("solo", leader=1, replicas=(1,))
    cluster.nodes[1].replicas.append(T, 0, batch(b"a", b"b", b"c"), required_acks=1)
    await cluster.catch_up(T)
    start = trio.current_time()
    resp = await call(cluster.nodes[1].broker, 21, 2, delete_req(2, timeout_ms=1500))
    [p] = resp.topics[0].partitions
    # Kafka's expiry answer: the low watermark when the records were deleted
    assert (p.error_code, p.low_watermark) == (ErrorCode.REQUEST_TIMED_OUT, 0)
    assert trio.current_time() - start >= 1.5
    assert cluster.nodes[1].replica(T).log.log_start_offset == 2
    cluster.nodes[1].replicas.append("solo", 0, batch(b"a", b"b"), required_acks=1)
    resp = await call(cluster.nodes[1].broker, 21, 2, D(timeout_ms=1000, topics=[
        D.DeleteRecordsTopic(name="solo", partitions=[
            D.DeleteRecordsPartition(partition_index=0, offset=-1)])]))
    [p] = resp.topics[0].partitions
    assert (p.error_code, p.low_watermark) == (ErrorCode.NONE, 2)


async def test_delete_records_wait_ends_when_leadership_moves(cluster, autojump_clock):
    cluster.create(T, leader=1)
    cluster.nodes[1].replicas.append(T, 0, batch(b"a", b"b"), required_acks=1)
    await cluster.catch_up(T)
    out = []

    async def deleter():
        out.append(await call(cluster.nodes[1].broker, 21, 2, delete_req(1)))

    async with trio.open_nursery() as n:
        n.start_soon(deleter)
        await trio.testing.wait_all_tasks_blocked()
        assert not out
        cluster.set_partition(T, leader=2)
    [p] = out[0].topics[0].partitions
    assert (p.error_code, p.low_watermark) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)


# --------------------------------------------------------------------------- DescribeLogDirs

async def test_describe_log_dirs_lists_follower_replicas_with_kafka_offset_lag(cluster):
    cluster.create(T, leader=1, partitions=2)
    cluster.nodes[1].replicas.append(T, 0, batch(b"a" * 100, b"b"), required_acks=1)
    await cluster.catch_up(T, 0)
    R = messages.DescribeLogDirsRequest
    resp = await call(cluster.nodes[2].broker, 35, 4, R(topics=None))
    [result] = resp.results
    [topic] = result.topics
    got = {p.partition_index: (p.partition_size, p.offset_lag, p.is_future_key)
           for p in topic.partitions}
    leader_size = cluster.nodes[1].replicas._size_of(cluster.nodes[1].replica(T, 0))
    # a follower's own log: Kafka's getLogEndOffsetLag is max(HW - LEO, 0) of it, i.e. 0
    assert got == {0: (leader_size, 0, False), 1: (0, 0, False)}


# --------------------------------------------------------------------------- large images

@pytest.fixture
async def running(cluster):
    async with trio.open_nursery() as n:
        for node in cluster.nodes.values():
            await n.start(node.replicas.run)
        yield cluster
        n.cancel_scope.cancel()


async def test_large_image_creates_logs_in_chunks_answering_not_leader_meanwhile(running):
    """A large image is applied at once, but new logs past the first chunk are created by
    a task: until then the partition answers NOT_LEADER_OR_FOLLOWER (retriable), then it
    serves as its image says; follower replicas reach the fetchers too."""
    cluster = running
    n = 3 * cluster.nodes[1].replicas.CREATE_CHUNK + 5
    cluster.create("big", leader=1, partitions=n)          # apply_image returns at once
    rm1 = cluster.nodes[1].replicas
    pending = rm1.statistics()["pending_partitions"]
    assert pending == n - rm1.CREATE_CHUNK
    late = next(i for i in range(n) if rm1.get_replica("big", i) is None)
    with pytest.raises(Exception) as e:
        rm1.append("big", late, batch(b"x"), required_acks=1)
    assert e.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with trio.fail_after(30):
        while any(node.replicas.statistics()["pending_partitions"] for node in
                  cluster.nodes.values()):
            await trio.sleep(0.01)
    assert all(rm1.get_replica("big", i).is_leader for i in range(n))
    assert rm1.append("big", late, batch(b"x"), required_acks=1).base_offset == 0
    part = rm1.get_partition("big", late)
    assert part.log.end_offset_for_epoch(0) == (0, 1)        # epoch start recorded at 0
    follower = cluster.nodes[2].replica("big", late)
    assert follower is not None and not follower.is_leader
    await cluster.catch_up("big", late)
    assert follower.log.log_end_offset == 1


async def test_pending_replicas_of_a_deleted_topic_are_never_created(running, tmp_path):
    cluster = running
    n = 2 * cluster.nodes[1].replicas.CREATE_CHUNK
    cluster.create("gone", leader=1, partitions=n)
    del cluster.topics["gone"]
    cluster.push()
    with trio.fail_after(30):
        while any(node.replicas.statistics()["pending_partitions"] for node in
                  cluster.nodes.values()):
            await trio.sleep(0.01)
    for node in cluster.nodes.values():
        assert all(node.replica("gone", i) is None for i in range(n))
    dirs = [p.name for p in (tmp_path / "node1").iterdir() if p.name.startswith("gone-")]
    # only the first chunk was ever created (and is being deleted)
    assert len(dirs) == cluster.nodes[1].replicas.CREATE_CHUNK
    assert all(d.endswith("-delete") for d in dirs)
