"""Admin operations through stock clients: kafka-python and confluent-kafka (librdkafka)."""
import pytest
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewPartitions, ResourceType)
from confluent_kafka.admin import NewTopic as CNewTopic
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import ConfigResourceType, NewPartitions as KNewPartitions, NewTopic
from kafka.errors import TopicAlreadyExistsError


def test_kafka_python_admin(kbroker_proc):
    a = KafkaAdminClient(bootstrap_servers=kbroker_proc.bootstrap)
    a.create_topics([NewTopic("kp", 2, 1, topic_configs={"retention.ms": "60000"})])
    try:
        again = a.create_topics([NewTopic("kp", 2, 1)])
        assert again["topics"][0]["error_code"] == 36    # TOPIC_ALREADY_EXISTS
    except TopicAlreadyExistsError:
        pass
    desc = a.describe_topics(["kp"])[0]
    assert len(desc["partitions"]) == 2 and desc["error_code"] == 0
    a.create_partitions({"kp": KNewPartitions(5)})
    assert len(a.describe_topics(["kp"])[0]["partitions"]) == 5
    a.alter_configs([KConfigResource(ConfigResourceType.TOPIC, "kp", configs={"cleanup.policy": "compact"})])
    cfg = a.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "kp")])
    assert cfg["topic"]["kp"]["cleanup.policy"]["value"] == "compact"
    cluster = a.describe_cluster()
    assert cluster["controller_id"] == 1 and cluster["brokers"][0]["port"] == kbroker_proc.port
    # auto-creation through a producer (idempotent: InitProducerId first)
    p = KafkaProducer(bootstrap_servers=kbroker_proc.bootstrap)
    p.send("kp-auto", b"x").get(timeout=20)
    p.close()
    assert {"kp", "kp-auto"} <= set(a.list_topics())
    a.delete_topics(["kp", "kp-auto"])
    assert set(a.list_topics()) == set()
    a.close()


def test_confluent_admin(kbroker_proc):
    a = AdminClient({"bootstrap.servers": kbroker_proc.bootstrap})
    for f in a.create_topics([CNewTopic("ck", 2, 1, config={"max.message.bytes": "2000000"})]).values():
        f.result(10)
    bad = a.create_topics([CNewTopic("ck-rf", 1, 3)])["ck-rf"]
    with pytest.raises(Exception) as e:
        bad.result(10)
    assert "REPLICATION_FACTOR" in str(e.value).upper()
    md = a.list_topics(timeout=10)
    assert len(md.topics["ck"].partitions) == 2 and md.cluster_id
    for f in a.create_partitions([NewPartitions("ck", 3)]).values():
        f.result(10)
    res = ConfigResource(ResourceType.TOPIC, "ck", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    for f in a.incremental_alter_configs([res]).values():
        f.result(10)
    (cfg,) = [f.result(10) for f in a.describe_configs([ConfigResource(ResourceType.TOPIC, "ck")]).values()]
    assert cfg["cleanup.policy"].value == "delete,compact"
    assert cfg["max.message.bytes"].value == "1048588" and cfg["max.message.bytes"].is_default
    assert cfg["retention.ms"].is_read_only is False
    (bcfg,) = [f.result(10) for f in a.describe_configs([ConfigResource(ResourceType.BROKER, "1")]).values()]
    assert bcfg["num.partitions"].value == "1"
    assert bcfg["listeners"].value == f"PLAINTEXT://127.0.0.1:{kbroker_proc.port}"
    cluster = a.describe_cluster().result(10)
    assert cluster.controller.id == 1 and len(cluster.nodes) == 1
    for f in a.delete_topics(["ck"]).values():
        f.result(10)
    assert "ck" not in a.list_topics(timeout=10).topics
