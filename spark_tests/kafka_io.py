"""Plain Kafka clients around the Spark tests: set up topics, produce exactly known records,
read back what Spark wrote, delete records. Independent of Spark on purpose: what Spark reads
is compared with what these clients wrote, and what Spark writes is read by these clients.

Producing uses confluent-kafka (librdkafka: explicit partitions, CreateTime timestamps,
headers, transactions); reading uses kafka-python with assign + seek (no consumer group).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka import TopicPartition as CTopicPartition

from compat_tests.helpers import wait_until

# A fixed CreateTime base for records whose timestamps are checked: 2023-11-14T22:13:20Z.
T0_MS = 1_700_000_000_000


@dataclass
class Rec:
    """One record as produced and as expected back: the unit the tests compare."""

    partition: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    offset: int = -1  # filled in from the delivery report


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int = 1, **config: str) -> None:
    """Create `name` (replication factor 1, topic configs by Kafka name) and wait for leaders.

    Retention is off unless asked for: many tests produce records with fixed 2023 timestamps
    (T0_MS), which a retention pass of the shared broker would otherwise delete mid-test."""
    config.setdefault("retention.ms", "-1")
    client = admin(bootstrap)  # keep the handle alive until the futures are done
    futures = client.create_topics(
        [NewTopic(name, partitions, 1, config={k: str(v) for k, v in config.items()})],
        request_timeout=20)
    futures[name].result(timeout=30)
    wait_until(lambda: _has_leaders(bootstrap, name, partitions), 30, what=f"leaders of {name}")


def _has_leaders(bootstrap: str, name: str, partitions: int) -> bool:
    md = admin(bootstrap).list_topics(name, timeout=10)
    topic = md.topics.get(name)
    return bool(topic and not topic.error and len(topic.partitions) == partitions
                and all(p.leader >= 0 for p in topic.partitions.values()))


def produce(bootstrap: str, topic: str, records: list[Rec], **config) -> list[Rec]:
    """Produce `records` in order (each to its own partition), fill in their offsets."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **config})
    errors: list = []

    for rec in records:
        def report(err, msg, rec=rec):
            if err:
                errors.append(err)
            else:
                rec.offset = msg.offset()
        producer.produce(topic, key=rec.key, value=rec.value, partition=rec.partition,
                         timestamp=rec.timestamp, headers=rec.headers or None, on_delivery=report)
        producer.poll(0)
    left = producer.flush(30)
    assert not errors and left == 0, f"produce to {topic} failed: {errors} ({left} undelivered)"
    return records


def make_records(partitions: int, per_partition: int, prefix: str = "v",
                 t0: int = T0_MS, step_ms: int = 1000) -> list[Rec]:
    """`per_partition` records in each partition: keys k<p>-<i>, values <prefix><p>-<i>,
    timestamps t0 + i*step_ms, one header carrying the index."""
    return [Rec(p, f"k{p}-{i}".encode(), f"{prefix}{p}-{i}".encode(), t0 + i * step_ms,
                [("idx", str(i).encode())])
            for i in range(per_partition) for p in range(partitions)]


def read_all(bootstrap: str, topic: str, timeout: float = 30.0,
             isolation_level: str = "read_uncommitted") -> list:
    """Every record of every partition of `topic`, from the log start to the end offsets as
    they are now (kafka-python ConsumerRecords)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level=isolation_level, request_timeout_ms=20000)
    try:
        parts = wait_until(lambda: consumer.partitions_for_topic(topic), 20,
                           what=f"metadata of {topic}")
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        records = []

        def done():
            for batch in consumer.poll(timeout_ms=300).values():
                records.extend(batch)
            return all(consumer.position(tp) >= ends[tp] for tp in tps)

        wait_until(done, timeout, what=f"all records of {topic}")
        return [r for r in records if r.offset < ends[TopicPartition(r.topic, r.partition)]]
    finally:
        consumer.close()


def delete_records(bootstrap: str, topic: str, before: dict[int, int]) -> None:
    """DeleteRecords: move each partition's log start offset to `before[partition]`."""
    client = admin(bootstrap)  # keep the handle alive until the futures are done
    futures = client.delete_records(
        [CTopicPartition(topic, p, off) for p, off in before.items()], request_timeout=20)
    for fut in futures.values():
        fut.result(timeout=30)


def alter_topic_config(bootstrap: str, topic: str, changes: dict[str, str | None]) -> None:
    """IncrementalAlterConfigs on a topic: set each key, or delete it (back to the default)
    when its value is None; then wait until DescribeConfigs shows the change. A broker applies
    a committed config change when its metadata log catches up (Kafka's after the controller
    answered): until then its log cleaner and retention still use the old values."""
    from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ConfigSource, ResourceType)
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET if v is not None
                           else AlterConfigOpType.DELETE) for k, v in changes.items()]
    client = admin(bootstrap)
    futures = client.incremental_alter_configs(
        [ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)], request_timeout=20)
    for fut in futures.values():
        fut.result(timeout=30)

    def shown():
        (fut,) = client.describe_configs([ConfigResource(ResourceType.TOPIC, topic)],
                                         request_timeout=20).values()
        got = fut.result(timeout=30)
        return all(got[k].value == v if v is not None
                   else got[k].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
                   for k, v in changes.items())
    wait_until(shown, 30, what=f"{topic}'s configs {changes} described")


def log_start_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-tests-probe"})
    try:
        return {p: consumer.get_watermark_offsets(CTopicPartition(topic, p), timeout=10)[0]
                for p in range(partitions)}
    finally:
        consumer.close()

