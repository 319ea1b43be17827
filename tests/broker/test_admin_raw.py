"""Admin APIs at their version bounds over raw frames."""
import uuid

import pytest

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .raw import RawClient

CT = messages.CreateTopicsRequest
DT = messages.DeleteTopicsRequest
AC = messages.AlterConfigsRequest
IAC = messages.IncrementalAlterConfigsRequest
DC = messages.DescribeConfigsRequest
CP = messages.CreatePartitionsRequest


async def make(c, name, n=1, configs=()):
    r = await c.request("CreateTopics", 7, topics=[CT.CreatableTopic(
        name=name, num_partitions=n, replication_factor=1,
        configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in configs])])
    assert r.topics[0].error_code == 0
    return r.topics[0].topic_id


async def test_delete_topics_by_name_and_id(broker_server):
    c = await RawClient.connect(broker_server)
    await make(c, "d1")
    tid = await make(c, "d2")
    r = await c.request("DeleteTopics", 1, topic_names=["d1", "missing"], timeout_ms=1000)
    assert [(t.name, t.error_code) for t in r.responses] == [("d1", 0), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    r = await c.request("DeleteTopics", 6, timeout_ms=1000, topics=[
        DT.DeleteTopicState(name=None, topic_id=tid), DT.DeleteTopicState(name=None, topic_id=uuid.uuid4()),
        DT.DeleteTopicState(name="x", topic_id=uuid.uuid4())])
    assert [t.error_code for t in r.responses] == [0, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.INVALID_REQUEST]
    assert r.responses[0].name == "d2"
    assert broker_server.broker.metadata.topics == {}


@pytest.mark.parametrize("version", [0, 3])
async def test_create_partitions_answers_every_topic(broker_server, version):
    c = await RawClient.connect(broker_server)
    await make(c, "cp", 2)
    r = await c.request("CreatePartitions", version, timeout_ms=1000, topics=[
        CP.CreatePartitionsTopic(name="cp", count=4, assignments=None),
        CP.CreatePartitionsTopic(name="cp-missing", count=4, assignments=None),
        CP.CreatePartitionsTopic(name="cp", count=4, assignments=None)])
    assert [x.name for x in r.results] == ["cp", "cp-missing", "cp"]
    assert r.results[1].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert r.results[0].error_code == ErrorCode.INVALID_REQUEST   # named twice
    r = await c.request("CreatePartitions", version, timeout_ms=1000, topics=[
        CP.CreatePartitionsTopic(name="cp", count=1, assignments=None)])
    assert r.results[0].error_code == ErrorCode.INVALID_PARTITIONS
    r = await c.request("CreatePartitions", version, timeout_ms=1000, topics=[
        CP.CreatePartitionsTopic(name="cp", count=4, assignments=[
            CP.CreatePartitionsAssignment(broker_ids=[1]), CP.CreatePartitionsAssignment(broker_ids=[1])])])
    assert r.results[0].error_code == 0
    assert len(broker_server.broker.metadata.topics["cp"].partitions) == 4


@pytest.mark.parametrize("version", [1, 4])
async def test_describe_configs(broker_server, version):
    c = await RawClient.connect(broker_server)
    await make(c, "dc", configs=[("retention.ms", "1000")])
    r = await c.request("DescribeConfigs", version, include_synonyms=True, resources=[
        DC.DescribeConfigsResource(resource_type=2, resource_name="dc", configuration_keys=None),
        DC.DescribeConfigsResource(resource_type=2, resource_name="nope", configuration_keys=None),
        DC.DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=["num.partitions"])])
    topic, missing, broker = r.results
    entries = {e.name: e for e in topic.configs}
    assert entries["retention.ms"].value == "1000" and entries["retention.ms"].config_source == 1
    # Kafka lists no broker synonym here: only log.retention.hours (a default) exists, and
    # retention.ms's synonym chain starts at log.retention.ms (F-003)
    assert [s.name for s in entries["retention.ms"].synonyms] == ["retention.ms"]
    assert entries["segment.bytes"].config_source == 5 and entries["segment.bytes"].value == "1073741824"
    if version >= 3:
        assert entries["retention.ms"].config_type == 5     # LONG
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert [(e.name, e.value, e.read_only) for e in broker.configs] == [("num.partitions", "1", True)]


@pytest.mark.parametrize("version", [0, 2])
async def test_alter_configs_replaces_overrides(broker_server, version):
    c = await RawClient.connect(broker_server)
    await make(c, "ac", configs=[("retention.ms", "1000")])
    r = await c.request("AlterConfigs", version, resources=[AC.AlterConfigsResource(
        resource_type=2, resource_name="ac", configs=[AC.AlterableConfig(name="cleanup.policy", value="compact")])])
    assert r.responses[0].error_code == 0
    assert dict(broker_server.broker.metadata.topics["ac"].configs) == {"cleanup.policy": "compact"}
    r = await c.request("AlterConfigs", version, resources=[AC.AlterConfigsResource(
        resource_type=2, resource_name="ac", configs=[AC.AlterableConfig(name="retention.ms", value="x")])])
    assert r.responses[0].error_code == ErrorCode.INVALID_CONFIG


@pytest.mark.parametrize("version", [0, 1])
async def test_incremental_alter_configs(broker_server, version):
    c = await RawClient.connect(broker_server)
    await make(c, "iac", configs=[("retention.ms", "1000")])
    ops = [IAC.AlterableConfig(name="cleanup.policy", config_operation=2, value="compact"),
           IAC.AlterableConfig(name="retention.ms", config_operation=1, value=None),
           IAC.AlterableConfig(name="segment.ms", config_operation=0, value="60000")]
    r = await c.request("IncrementalAlterConfigs", version, resources=[
        IAC.AlterConfigsResource(resource_type=2, resource_name="iac", configs=ops)])
    assert r.responses[0].error_code == 0
    assert dict(broker_server.broker.metadata.topics["iac"].configs) == {
        "cleanup.policy": "delete,compact", "segment.ms": "60000"}
    r = await c.request("IncrementalAlterConfigs", version, resources=[IAC.AlterConfigsResource(
        resource_type=2, resource_name="iac",
        configs=[IAC.AlterableConfig(name="segment.ms", config_operation=2, value="1")])])
    assert r.responses[0].error_code == ErrorCode.INVALID_CONFIG      # APPEND on a LONG


@pytest.mark.parametrize("version", [0, 1])
async def test_describe_cluster(broker_server, version):
    c = await RawClient.connect(broker_server)
    r = await c.request("DescribeCluster", version)
    assert r.error_code == 0 and r.controller_id == 1
    assert [(b.broker_id, b.port) for b in r.brokers] == [(1, broker_server.port)]
    if version >= 1:
        r = await c.request("DescribeCluster", version, endpoint_type=2)
        assert r.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


@pytest.mark.parametrize("version", [0, 5])
async def test_init_producer_id(broker_server, version):
    c = await RawClient.connect(broker_server)
    ids = []
    for _ in range(3):
        r = await c.request("InitProducerId", version, transactional_id=None, transaction_timeout_ms=60000)
        assert r.error_code == 0 and r.producer_epoch == 0
        ids.append(r.producer_id)
    assert len(set(ids)) == 3
    # a transactional id is served by the transaction coordinator (kbroker/txn)
    r = await c.request("InitProducerId", version, transactional_id="tx", transaction_timeout_ms=60000)
    assert r.error_code == 0 and r.producer_id not in ids and r.producer_epoch >= 0
    r = await c.request("InitProducerId", version, transactional_id="tx", transaction_timeout_ms=10**9)
    assert r.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
