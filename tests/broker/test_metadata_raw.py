"""Metadata v0–v13 over raw frames; CreateTopics at its version bounds; auto-creation."""
import uuid

import pytest

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .raw import RawClient

CT = messages.CreateTopicsRequest
MT = messages.MetadataRequest.MetadataRequestTopic


async def create(c, name, partitions=2, version=7, **kw):
    resp = await c.request("CreateTopics", version, timeout_ms=1000, topics=[
        CT.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, **kw)])
    return resp.topics[0]


@pytest.mark.parametrize("version", range(0, 14))
async def test_metadata_every_version(broker_server, version):
    c = await RawClient.connect(broker_server)
    created = await create(c, "md-topic", 3)
    assert created.error_code == 0 and created.topic_id != uuid.UUID(int=0)
    topics = [] if version == 0 else [MT(name="md-topic")]
    extra = {"allow_auto_topic_creation": False} if version >= 4 else {}
    resp = await c.request("Metadata", version, topics=topics, **extra)
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(1, "127.0.0.1", broker_server.port)]
    (t,) = [t for t in resp.topics if t.name == "md-topic"]
    assert t.error_code == 0
    assert sorted(p.partition_index for p in t.partitions) == [0, 1, 2]
    assert all(p.leader_id == 1 and p.replica_nodes == [1] and p.isr_nodes == [1] for p in t.partitions)
    if version >= 1:
        assert resp.controller_id == 1
    if version >= 2:
        assert resp.cluster_id == broker_server.broker.cluster_id
    if version >= 7:
        assert all(p.leader_epoch == 0 for p in t.partitions)
    if version >= 10:
        assert t.topic_id == created.topic_id


async def test_metadata_null_means_all_and_empty_means_none(broker_server):
    c = await RawClient.connect(broker_server)
    await create(c, "a1")
    assert [t.name for t in (await c.request("Metadata", 1, topics=None)).topics] == ["a1"]
    assert (await c.request("Metadata", 1, topics=[])).topics == []
    assert [t.name for t in (await c.request("Metadata", 0, topics=[])).topics] == ["a1"]


async def test_metadata_by_topic_id_v12(broker_server):
    c = await RawClient.connect(broker_server)
    created = await create(c, "by-id")
    resp = await c.request("Metadata", 12, topics=[MT(topic_id=created.topic_id, name=None)])
    assert resp.topics[0].name == "by-id" and resp.topics[0].error_code == 0
    missing = uuid.uuid4()
    resp = await c.request("Metadata", 12, topics=[MT(topic_id=missing, name=None)])
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


async def test_auto_create(broker_server):
    c = await RawClient.connect(broker_server)
    resp = await c.request("Metadata", 9, topics=[MT(name="auto")], allow_auto_topic_creation=True)
    # created, and answered as Kafka 4.3.1/4.4.0 answer it (older Kafka: LEADER_NOT_AVAILABLE)
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    resp = await c.request("Metadata", 9, topics=[MT(name="auto")], allow_auto_topic_creation=False)
    assert resp.topics[0].error_code == 0
    assert len(resp.topics[0].partitions) == 1          # num.partitions
    resp = await c.request("Metadata", 9, topics=[MT(name="nope")], allow_auto_topic_creation=False)
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    resp = await c.request("Metadata", 9, topics=[MT(name="bad name!")], allow_auto_topic_creation=True)
    assert resp.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


async def test_auto_create_disabled_by_config(make_config, nursery):
    from kbroker.server import serve
    server = await nursery.start(serve, make_config(**{"auto.create.topics.enable": "false"}))
    c = await RawClient.connect(server)
    resp = await c.request("Metadata", 3, topics=[MT(name="auto")])   # v0-3 always "allow"
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    server.request_shutdown()
    await server.wait_stopped()


async def test_internal_topic_auto_created_with_coordinator_settings(broker_server):
    c = await RawClient.connect(broker_server)
    await c.request("Metadata", 9, topics=[MT(name="__consumer_offsets")], allow_auto_topic_creation=True)
    resp = await c.request("Metadata", 9, topics=[MT(name="__consumer_offsets")], allow_auto_topic_creation=False)
    t = resp.topics[0]
    assert t.is_internal and len(t.partitions) == 50
    image = broker_server.broker.metadata
    assert image.topics["__consumer_offsets"].configs["cleanup.policy"] == "compact"


async def test_a_failing_auto_creation_is_answered_unknown_and_logged(make_config, nursery, caplog):
    # Kafka 4.x answers an auto-created topic UNKNOWN_TOPIC_OR_PARTITION whatever its controller
    # makes of the creation; with a default replication factor above the one broker it fails
    from kbroker.server import serve
    server = await nursery.start(serve, make_config(default_replication_factor=2))
    c = await RawClient.connect(server)
    caplog.set_level("INFO", logger="kbroker.api.metadata")
    for v in (4, 12):
        resp = await c.request("Metadata", v, topics=[MT(name="needs-two")], allow_auto_topic_creation=True)
        assert [(t.name, t.error_code, t.partitions) for t in resp.topics] == [
            ("needs-two", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    assert "needs-two" not in server.broker.metadata.topics
    failed = [r.getMessage() for r in caplog.records if "auto-creation of topic needs-two failed" in r.getMessage()]
    assert len(failed) == 2 and "INVALID_REPLICATION_FACTOR" in failed[0], failed
    server.request_shutdown()
    await server.wait_stopped()


@pytest.mark.parametrize("version", [2, 7])
async def test_create_topics_errors(broker_server, version):
    c = await RawClient.connect(broker_server)
    ok = await create(c, "dup", version=version)
    assert ok.error_code == 0
    assert (await create(c, "dup", version=version)).error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert (await create(c, "bad/name", version=version)).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert (await create(c, "x" * 250, version=version)).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert (await create(c, "..", version=version)).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert (await create(c, "p0", 0, version=version)).error_code == ErrorCode.INVALID_PARTITIONS
    resp = await c.request("CreateTopics", version, topics=[
        CT.CreatableTopic(name="rf3", num_partitions=1, replication_factor=3)])
    assert resp.topics[0].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    bad_cfg = await create(c, "cfg", version=version,
                           configs=[CT.CreatableTopicConfig(name="retention.ms", value="soon")])
    assert bad_cfg.error_code == ErrorCode.INVALID_CONFIG
    unknown_cfg = await create(c, "cfg", version=version,
                               configs=[CT.CreatableTopicConfig(name="no.such.config", value="1")])
    assert unknown_cfg.error_code == ErrorCode.INVALID_CONFIG
    resp = await c.request("CreateTopics", version, topics=[
        CT.CreatableTopic(name="twice", num_partitions=1, replication_factor=1),
        CT.CreatableTopic(name="twice", num_partitions=1, replication_factor=1)])
    assert [t.error_code for t in resp.topics] == [ErrorCode.INVALID_REQUEST] * 2
    assert "twice" not in broker_server.broker.metadata.topics


async def test_create_topics_defaults_assignments_and_validate_only(broker_server):
    c = await RawClient.connect(broker_server)
    resp = await c.request("CreateTopics", 7, validate_only=True, topics=[
        CT.CreatableTopic(name="vo", num_partitions=-1, replication_factor=-1)])
    assert resp.topics[0].error_code == 0 and resp.topics[0].num_partitions == 1
    assert "vo" not in broker_server.broker.metadata.topics
    resp = await c.request("CreateTopics", 7, topics=[CT.CreatableTopic(
        name="manual", num_partitions=-1, replication_factor=-1,
        assignments=[CT.CreatableReplicaAssignment(partition_index=i, broker_ids=[1]) for i in range(4)])])
    assert resp.topics[0].error_code == 0 and resp.topics[0].num_partitions == 4
    resp = await c.request("CreateTopics", 7, topics=[CT.CreatableTopic(
        name="manual2", num_partitions=-1, replication_factor=-1,
        assignments=[CT.CreatableReplicaAssignment(partition_index=0, broker_ids=[7])])])
    assert resp.topics[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    resp = await c.request("CreateTopics", 5, topics=[CT.CreatableTopic(
        name="withcfg", num_partitions=2, replication_factor=1,
        configs=[CT.CreatableTopicConfig(name="cleanup.policy", value="compact")])])
    cfgs = {e.name: (e.value, e.config_source) for e in resp.topics[0].configs}
    assert cfgs["cleanup.policy"] == ("compact", 1) and cfgs["retention.ms"] == ("604800000", 5)
