"""Dynamic broker configs (KIP-226): AlterConfigs / IncrementalAlterConfigs on BROKER resources.

Per-broker ("1") and cluster-default ("") values are stored as BROKER ConfigRecords in the
metadata log, survive restarts, show in DescribeConfigs with Kafka's sources and synonyms,
and the ones kbroker uses apply at once (topic defaults such as retention.ms and
max.message.bytes). Read-only keys are refused with Kafka's INVALID_REQUEST.
"""
import pytest

from kbroker.metadata.configs import (DEFAULT_CONFIG, DYNAMIC_BROKER_CONFIG,
                                      DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG,
                                      STATIC_BROKER_CONFIG)
from kbroker.config.kafka_keys import BROKER_CONFIGS
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode
from tests.support.broker_proc import BrokerProcess

from .raw import RawClient
from .test_admin_raw import make

AC = messages.AlterConfigsRequest
IAC = messages.IncrementalAlterConfigsRequest
DC = messages.DescribeConfigsRequest
BROKER = 4
SET, DELETE, APPEND = 0, 1, 2


async def incremental(c, name, *ops, validate_only=False, version=1):
    r = await c.request("IncrementalAlterConfigs", version, validate_only=validate_only, resources=[
        IAC.AlterConfigsResource(resource_type=BROKER, resource_name=name, configs=[
            IAC.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])])
    return r.responses[0]


async def describe(c, rtype, name, keys=None, version=4):
    r = await c.request("DescribeConfigs", version, include_synonyms=True, include_documentation=False,
                        resources=[DC.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                              configuration_keys=keys)])
    res = r.results[0]
    assert res.error_code == 0, res
    return {e.name: e for e in res.configs}


async def test_broker_resource_lists_kafkas_keys(broker_server):
    c = await RawClient.connect(broker_server)
    entries = await describe(c, BROKER, "1")
    kafka = {name for name, *_rest in BROKER_CONFIGS if not _rest[3]}   # non-internal
    assert kafka <= set(entries) and len(entries) - len(kafka) <= 3   # + keys set in the file
    assert entries["num.partitions"].read_only and not entries["message.max.bytes"].read_only
    assert entries["log.dirs"].config_source == STATIC_BROKER_CONFIG
    assert entries["log.retention.hours"].config_source == DEFAULT_CONFIG
    assert entries["log.retention.ms"].value is None and entries["log.retention.ms"].synonyms == []
    assert entries["ssl.keystore.password"].is_sensitive and entries["ssl.keystore.password"].value is None
    assert entries["sasl.login.refresh.buffer.seconds"].config_type == 4        # SHORT
    assert entries["principal.builder.class"].config_type == 8                  # CLASS
    # the cluster-default resource lists only the cluster-default dynamic configs: on a new
    # cluster, the min.insync.replicas default Kafka's format step writes (F-002)
    cluster = await describe(c, BROKER, "")
    assert set(cluster) == {"min.insync.replicas"}
    assert cluster["min.insync.replicas"].config_source == DYNAMIC_DEFAULT_BROKER_CONFIG


@pytest.mark.parametrize("version", [0, 1])
async def test_incremental_per_broker_and_cluster_default(broker_server, version):
    c = await RawClient.connect(broker_server)
    await make(c, "dyn", configs=[("cleanup.policy", "delete")])
    before = await describe(c, 2, "dyn")
    assert before["retention.ms"].value == "604800000"
    r = await incremental(c, "1", ("log.retention.ms", SET, "3600000"), version=version)
    assert r.error_code == 0, r
    r = await incremental(c, "", ("message.max.bytes", SET, "2000"), ("log.retention.ms", SET, "7200000"),
                          version=version)
    assert r.error_code == 0, r
    b = await describe(c, BROKER, "1")
    assert (b["log.retention.ms"].value, b["log.retention.ms"].config_source) == ("3600000", DYNAMIC_BROKER_CONFIG)
    assert [(s.value, s.source) for s in b["log.retention.ms"].synonyms] == [
        ("3600000", DYNAMIC_BROKER_CONFIG), ("7200000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("168", DEFAULT_CONFIG)]
    assert (b["message.max.bytes"].value, b["message.max.bytes"].config_source) == ("2000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    d = await describe(c, BROKER, "")
    assert set(d) == {"message.max.bytes", "log.retention.ms", "min.insync.replicas"}
    assert [s.source for s in d["log.retention.ms"].synonyms] == [DYNAMIC_DEFAULT_BROKER_CONFIG, DEFAULT_CONFIG]
    # topics without overrides follow at once
    t = await describe(c, 2, "dyn")
    assert (t["retention.ms"].value, t["retention.ms"].config_source) == ("3600000", DYNAMIC_BROKER_CONFIG)
    assert (t["max.message.bytes"].value, t["max.message.bytes"].config_source) == ("2000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    part = broker_server.broker.replicas._partitions[("dyn", 0)]
    assert part.props["retention.ms"] == "3600000" and part.props["max.message.bytes"] == "2000"
    # DELETE returns to the next layer
    r = await incremental(c, "1", ("log.retention.ms", DELETE, None), version=version)
    assert r.error_code == 0
    t = await describe(c, 2, "dyn")
    assert (t["retention.ms"].value, t["retention.ms"].config_source) == ("7200000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    meta = broker_server.broker.metadata.broker_configs
    assert dict(meta.get("1", {})) == {} and dict(meta[""]) == {"message.max.bytes": "2000", "log.retention.ms": "7200000", "min.insync.replicas": "1"}


async def test_dynamic_message_max_bytes_is_enforced(broker_server):
    from kafka import KafkaProducer
    from kafka.errors import MessageSizeTooLargeError
    import trio
    c = await RawClient.connect(broker_server)
    await make(c, "big")
    assert (await incremental(c, "", ("message.max.bytes", SET, "1000"))).error_code == 0

    def produce():
        p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{broker_server.port}", max_request_size=10_000_000,
                          retries=0)
        try:
            with pytest.raises(MessageSizeTooLargeError):
                p.send("big", b"x" * 5000).get(timeout=20)
            p.send("big", b"x" * 100).get(timeout=20)     # small records still go through
        finally:
            p.close()
    await trio.to_thread.run_sync(produce)


async def test_refusals_as_kafka(broker_server):
    c = await RawClient.connect(broker_server)
    r = await incremental(c, "1", ("log.dirs", SET, "/elsewhere"))
    assert r.error_code == ErrorCode.INVALID_REQUEST and "Cannot update these configs dynamically" in r.error_message
    r = await incremental(c, "", ("listeners", SET, "PLAINTEXT://127.0.0.1:1"))
    assert r.error_code == ErrorCode.INVALID_REQUEST and "broker id must be specified" in r.error_message
    r = await incremental(c, "1", ("message.max.bytes", SET, "lots"))
    assert r.error_code == ErrorCode.INVALID_REQUEST
    r = await incremental(c, "7", ("message.max.bytes", SET, "2000"))
    assert r.error_code == ErrorCode.INVALID_REQUEST and "Unexpected broker id" in r.error_message
    r = await incremental(c, "1", ("ssl.keystore.password", SET, "x"))
    assert r.error_code == ErrorCode.INVALID_REQUEST and "listener prefix" in r.error_message
    r = await incremental(c, "1", ("message.max.bytes", APPEND, "2000"))
    assert r.error_code == ErrorCode.INVALID_CONFIG
    r = await incremental(c, "1", ("log.cleaner.threads", SET, "2"), validate_only=True)
    assert r.error_code == 0
    assert "1" not in broker_server.broker.metadata.broker_configs


@pytest.mark.parametrize("version", [0, 2])
async def test_legacy_alter_configs_replaces_the_broker_level(broker_server, version):
    c = await RawClient.connect(broker_server)

    async def alter(name, **kv):
        r = await c.request("AlterConfigs", version, validate_only=False, resources=[AC.AlterConfigsResource(
            resource_type=BROKER, resource_name=name,
            configs=[AC.AlterableConfig(name=k.replace("_", "."), value=v) for k, v in kv.items()])])
        return r.responses[0]
    assert (await alter("1", log_cleaner_threads="2", log_retention_bytes="1000")).error_code == 0
    assert dict(broker_server.broker.metadata.broker_configs["1"]) == {
        "log.cleaner.threads": "2", "log.retention.bytes": "1000"}
    assert (await alter("1", log_cleaner_threads="3")).error_code == 0
    assert dict(broker_server.broker.metadata.broker_configs["1"]) == {"log.cleaner.threads": "3"}
    r = await alter("1", num_partitions="3")
    assert r.error_code == ErrorCode.INVALID_REQUEST


async def test_dynamic_configs_survive_restart(tmp_path):
    import trio
    proc = BrokerProcess(tmp_path / "data")
    proc.start()
    try:
        c = await RawClient.connect(proc.port)
        assert (await incremental(c, "1", ("log.retention.bytes", SET, "5000"))).error_code == 0
        assert (await incremental(c, "", ("min.insync.replicas", SET, "1"))).error_code == 0
        await trio.to_thread.run_sync(proc.restart)
        c = await RawClient.connect(proc.port)
        b = await describe(c, BROKER, "1", ["log.retention.bytes", "min.insync.replicas"])
        assert (b["log.retention.bytes"].value, b["log.retention.bytes"].config_source) == ("5000", DYNAMIC_BROKER_CONFIG)
        assert b["min.insync.replicas"].config_source == DYNAMIC_DEFAULT_BROKER_CONFIG
        await make(c, "after")
        t = await describe(c, 2, "after", ["min.insync.replicas", "retention.bytes"])
        assert [(s.name, s.source) for s in t["min.insync.replicas"].synonyms] == [
            ("min.insync.replicas", DYNAMIC_DEFAULT_BROKER_CONFIG), ("min.insync.replicas", DEFAULT_CONFIG)]
        assert t["retention.bytes"].value == "5000"
    finally:
        proc.stop()
