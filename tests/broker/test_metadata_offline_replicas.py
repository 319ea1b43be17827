"""Offline replicas, leaders and replica lists in Metadata (3) and DescribeTopicPartitions (75),
as Kafka's ``KRaftMetadataCache`` answers them for the listener a request came in on
(``kbroker.metadata.client_view``).

The handlers run on images built by replaying metadata records, one reason per test; each
answer is encoded and decoded at the request's version, as a client reads it."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from kbroker.api import REGISTRY, RequestContext, load_all
from kbroker.metadata import directories as dirs
from kbroker.metadata.image import empty_image, replay_all
from kbroker.wire import messages as m
from kbroker.wire import protocol
from kbroker.wire.error_codes import ErrorCode as E

load_all()

TOPIC_ID = uuid.UUID(int=7 << 100)
DIR_A, DIR_B = uuid.UUID(int=1 << 120), uuid.UUID(int=2 << 120)
EP = m.RegisterBrokerRecord.BrokerEndpoint


def register(broker_id: int, listeners=("PLAINTEXT",), log_dirs=(), fenced=False, epoch=None):
    return m.RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), rack=None,
        broker_epoch=broker_id * 10 if epoch is None else epoch, fenced=fenced,
        end_points=[EP(name=n, host=f"h{broker_id}", port=9000 + i) for i, n in enumerate(listeners)],
        log_dirs=list(log_dirs))


def partition(pid: int, replicas, leader: int, isr=None, directories=None):
    return m.PartitionRecord(partition_id=pid, topic_id=TOPIC_ID, replicas=list(replicas),
                             isr=list(replicas if isr is None else isr), leader=leader,
                             leader_epoch=0, directories=directories)


def image(*records):
    return replay_all(empty_image("c", 1), [m.TopicRecord(name="t", topic_id=TOPIC_ID), *records])


async def call(img, api_key: int, version: int, body, listener: str = "PLAINTEXT"):
    config = {"auto.create.topics.enable": False, "max.request.partition.size.limit": 2000}
    broker = SimpleNamespace(metadata=img, config=SimpleNamespace(get=config.__getitem__))
    frame = protocol.encode_request(api_key, version, 7, "test", body)
    _, req = protocol.decode_request(memoryview(frame)[4:])
    ctx = RequestContext(broker=broker, api_key=api_key, api_version=version, correlation_id=7,
                         client_id="test", listener=listener)
    resp = await REGISTRY[api_key].handler(ctx, req)
    wire = b"".join(protocol.encode_response(api_key, version, 7, resp))
    _, out = protocol.decode_response(wire[4:], api_key, version)
    return out


async def metadata(img, version: int = 12, listener: str = "PLAINTEXT") -> dict:
    """{partition: (error, leader, replicas, isr, offline)} of topic ``t``."""
    req = m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name="t")])
    if version >= 4:
        req.allow_auto_topic_creation = False
    [t] = (await call(img, 3, version, req, listener)).topics
    assert t.error_code == E.NONE
    return {p.partition_index: (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes,
                                p.offline_replicas if version >= 5 else None)
            for p in t.partitions}


async def described(img, listener: str = "PLAINTEXT") -> dict:
    """{partition: (error, leader, replicas, isr, offline)} of ``t`` from DescribeTopicPartitions."""
    R = m.DescribeTopicPartitionsRequest
    resp = await call(img, 75, 0, R(topics=[R.TopicRequest(name="t")], response_partition_limit=100),
                      listener)
    [t] = resp.topics
    assert t.error_code == E.NONE
    return {p.partition_index: (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes,
                                p.offline_replicas) for p in t.partitions}


async def test_every_replica_online():
    img = image(register(1), register(2), partition(0, [1, 2], 1))
    assert await metadata(img) == {0: (E.NONE, 1, [1, 2], [1, 2], [])}
    assert await described(img) == {0: (E.NONE, 1, [1, 2], [1, 2], [])}


async def test_a_replica_of_an_unregistered_broker_is_offline():
    img = image(register(1), partition(0, [1, 4], 1, isr=[1]))
    assert await metadata(img) == {0: (E.NONE, 1, [1, 4], [1], [4])}
    assert await described(img) == {0: (E.NONE, 1, [1, 4], [1], [4])}


async def test_a_replica_of_a_fenced_broker_is_offline_until_it_is_unfenced():
    fenced = image(register(1), register(2, epoch=20), partition(0, [1, 2], 1, isr=[1]),
                   m.FenceBrokerRecord(id=2, epoch=20))
    assert await metadata(fenced) == {0: (E.NONE, 1, [1, 2], [1], [2])}
    assert await described(fenced) == {0: (E.NONE, 1, [1, 2], [1], [2])}
    unfenced = replay_all(fenced, [m.UnfenceBrokerRecord(id=2, epoch=20)])
    assert await metadata(unfenced) == {0: (E.NONE, 1, [1, 2], [1], [])}


async def test_a_registration_still_fenced_is_offline():
    img = image(register(1), register(2, fenced=True), partition(0, [2, 1], 1))
    assert (await metadata(img))[0][4] == [2]


async def test_a_replica_of_a_broker_without_the_requests_listener_is_offline():
    img = image(register(1, ("PLAINTEXT", "INTERNAL")), register(3, ("INTERNAL",)),
                partition(0, [1, 3], 1))
    assert await metadata(img, listener="PLAINTEXT") == {0: (E.NONE, 1, [1, 3], [1, 3], [3])}
    assert await metadata(img, listener="INTERNAL") == {0: (E.NONE, 1, [1, 3], [1, 3], [])}
    assert await described(img, listener="PLAINTEXT") == {0: (E.NONE, 1, [1, 3], [1, 3], [3])}


async def test_a_replica_in_an_offline_log_dir_is_offline():
    """KIP-858: the partitions whose replica sits in the failed dir, and only those; a replica
    not placed yet (UNASSIGNED) or from before directories (MIGRATING) counts as online, a LOST
    one as offline."""
    before = image(register(1, log_dirs=[DIR_A, DIR_B]),
                   partition(0, [1], 1, directories=[DIR_A]),
                   partition(1, [1], 1, directories=[DIR_B]),
                   partition(2, [1], 1, directories=[dirs.UNASSIGNED]),
                   partition(3, [1], 1, directories=[dirs.MIGRATING]),
                   partition(4, [1], 1, directories=[dirs.LOST]))
    assert {i: p[4] for i, p in (await metadata(before)).items()} == \
        {0: [], 1: [], 2: [], 3: [], 4: [1]}
    after = replay_all(before, [m.BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=10, log_dirs=[DIR_A])])
    assert {i: p[4] for i, p in (await metadata(after)).items()} == \
        {0: [], 1: [1], 2: [], 3: [], 4: [1]}
    assert {i: p[4] for i, p in (await described(after)).items()} == \
        {0: [], 1: [1], 2: [], 3: [], 4: [1]}


async def test_the_offline_dir_of_one_replica_leaves_the_others_online():
    img = image(register(1, log_dirs=[DIR_A]), register(2, log_dirs=[DIR_B]),
                partition(0, [1, 2], 1, directories=[DIR_A, DIR_B]),
                m.BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=20,
                                                 log_dirs=[uuid.UUID(int=3 << 120)]))
    assert (await metadata(img))[0][4] == [2]


@pytest.mark.parametrize("leader", [-1, 4])
async def test_no_leader_or_an_unregistered_one_is_leader_not_available(leader):
    img = image(register(1), register(2), partition(0, [1, 2], leader))
    for version in (1, 5, 6, 12, 13):
        assert (await metadata(img, version))[0][:4] == (E.LEADER_NOT_AVAILABLE, -1, [1, 2], [1, 2])
    assert await described(img) == {0: (E.NONE, -1, [1, 2], [1, 2], [])}


async def test_a_leader_without_the_listener_is_listener_not_found_from_v6():
    img = image(register(1, ("INTERNAL",)), register(2, ("PLAINTEXT", "INTERNAL")),
                partition(0, [1, 2], 1))
    assert await metadata(img, 6) == {0: (E.LISTENER_NOT_FOUND, -1, [1, 2], [1, 2], [1])}
    assert await metadata(img, 5) == {0: (E.LEADER_NOT_AVAILABLE, -1, [1, 2], [1, 2], [1])}
    assert await metadata(img, 6, listener="INTERNAL") == {0: (E.NONE, 1, [1, 2], [1, 2], [])}
    assert await described(img) == {0: (E.NONE, -1, [1, 2], [1, 2], [1])}


async def test_a_fenced_leader_still_on_the_listener_is_answered():
    """Kafka looks only at the registration and the listener for the leader."""
    img = image(register(1, fenced=True), register(2), partition(0, [1, 2], 1))
    assert await metadata(img) == {0: (E.NONE, 1, [1, 2], [1, 2], [1])}


async def test_v0_leaves_unavailable_brokers_out_and_says_so():
    img = image(register(1), register(2, fenced=True), register(3, ("INTERNAL",)),
                partition(0, [1, 2, 3, 4], 1, isr=[1, 2]), partition(1, [1], 1))
    assert await metadata(img, 0) == {0: (E.REPLICA_NOT_AVAILABLE, 1, [1], [1], None),
                                      1: (E.NONE, 1, [1], [1], None)}
    assert await metadata(img, 1) == {0: (E.NONE, 1, [1, 2, 3, 4], [1, 2], None),
                                      1: (E.NONE, 1, [1], [1], None)}
    # v0 with an unavailable leader: no leader first, the lists filtered as ever
    no_leader = image(register(2, fenced=True), partition(0, [4, 2], 4, isr=[4]))
    assert await metadata(no_leader, 0) == {0: (E.LEADER_NOT_AVAILABLE, -1, [], [], None)}
