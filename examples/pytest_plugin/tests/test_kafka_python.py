"""kafka-python users, and the factory fixture for tests that need several topics."""
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType


def test_copy_between_two_topics(kbroker, kafka_topic_factory):
    source = kafka_topic_factory(partitions=2)
    sink = kafka_topic_factory(config={"cleanup.policy": "compact"})
    producer = KafkaProducer(bootstrap_servers=kbroker.bootstrap_servers)
    for i in range(4):
        producer.send(source, key=b"k%d" % i, value=b"v%d" % i)
    producer.flush()
    consumer = KafkaConsumer(source, bootstrap_servers=kbroker.bootstrap_servers,
                             auto_offset_reset="earliest", consumer_timeout_ms=10_000)
    copied = 0
    for msg in consumer:
        producer.send(sink, key=msg.key, value=msg.value.upper())
        copied += 1
        if copied == 4:
            break
    consumer.close()
    producer.flush()
    producer.close()
    assert copied == 4
    admin = KafkaAdminClient(bootstrap_servers=kbroker.bootstrap_servers)
    configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, sink)])
    admin.close()
    assert "compact" in repr(configs)


def test_reset_gives_an_empty_broker(kbroker_reset):
    assert kbroker_reset.list_topics() == []
