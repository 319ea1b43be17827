"""Behavioural compat tests with confluent-kafka (librdkafka 2.x), the C client most non-Java
languages wrap. Consumers use assign() with explicit offsets, never a group."""

from __future__ import annotations

import pytest
from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TIMESTAMP_CREATE_TIME, TopicCollection, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.helpers import T0_MS, wait_until

CLIENT = "confluent-kafka"


@pytest.fixture
def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap, "client.id": "compat-admin"})


def create(admin, name, partitions=1):
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=20)[name].result(30)
    wait_until(lambda: _has_leaders(admin, name, partitions), what=f"leaders of {name}")


def _has_leaders(admin, name, partitions):
    topic = admin.list_topics(name, timeout=10).topics.get(name)
    return (topic is not None and topic.error is None and len(topic.partitions) == partitions
            and all(p.leader >= 0 for p in topic.partitions.values()))


def produce(bootstrap, topic, records, **config):
    """Produce (key, value, headers, timestamp, partition) tuples; returns delivery reports."""
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "compat-producer",
                         "linger.ms": 5, **config})
    reports = []
    for key, value, headers, timestamp, partition in records:
        kwargs = {"key": key, "value": value}
        if headers:
            kwargs["headers"] = headers
        if timestamp:
            kwargs["timestamp"] = timestamp
        if partition is not None:
            kwargs["partition"] = partition
        producer.produce(topic, on_delivery=lambda err, msg: reports.append((err, msg)), **kwargs)
    assert producer.flush(30) == 0, "undelivered records"
    return reports


def consumer(bootstrap, **config):
    return Consumer({"bootstrap.servers": bootstrap, "client.id": "compat-consumer",
                     "group.id": "compat-unused", "enable.auto.commit": False,
                     "enable.partition.eof": False, **config})


def consume(bootstrap, topic, partitions, count, timeout=20.0):
    c = consumer(bootstrap)
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        records = []

        def got_all():
            msg = c.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                records.append(msg)
            return len(records) >= count

        wait_until(got_all, timeout, interval=0, what=f"{count} records from {topic}")
        return records
    finally:
        c.close()


def test_round_trip_keys_headers_timestamps(bootstrap, admin, topic_name):
    create(admin, topic_name)
    sent = [
        (b"k1", b"v1", [("h1", b"x"), ("h2", b"")], T0_MS, None),
        (None, b"no key", None, T0_MS + 1, None),
        (b"k3", None, [("only", b"header")], T0_MS + 2, None),  # a tombstone
        (b"k4", b"\x00\xff" * 100, [("h", b"1"), ("h", b"2")], T0_MS + 3, None),
    ]
    reports = produce(bootstrap, topic_name, sent)
    assert [err for err, _ in reports] == [None] * 4
    assert sorted(msg.offset() for _, msg in reports) == [0, 1, 2, 3]

    records = consume(bootstrap, topic_name, [0], len(sent))
    assert [r.offset() for r in records] == [0, 1, 2, 3]
    for record, (key, value, headers, ts, _) in zip(records, sent):
        assert record.key() == key
        assert record.value() == value
        assert (record.headers() or []) == (headers or [])
        assert record.timestamp() == (TIMESTAMP_CREATE_TIME, ts)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression(bootstrap, admin, topic_name, codec):
    create(admin, topic_name)
    values = [f"value-{i:04d}-".encode() * 20 for i in range(200)]
    reports = produce(bootstrap, topic_name,
                      [(str(i).encode(), v, None, None, None) for i, v in enumerate(values)],
                      **{"compression.type": codec, "linger.ms": 50})
    assert all(err is None for err, _ in reports)
    records = consume(bootstrap, topic_name, [0], len(values))
    assert [r.value() for r in records] == values
    assert [r.key() for r in records] == [str(i).encode() for i in range(len(values))]


def test_create_topic_partitions_in_metadata(admin, topic_name):
    create(admin, topic_name, partitions=4)
    metadata = admin.list_topics(timeout=10)
    topic = metadata.topics[topic_name]
    assert topic.error is None
    assert sorted(topic.partitions) == [0, 1, 2, 3]
    for partition in topic.partitions.values():
        assert partition.leader in metadata.brokers
        assert partition.replicas == [partition.leader]
        assert partition.isrs == [partition.leader]
    (description,) = admin.describe_topics(TopicCollection([topic_name]), request_timeout=10).values()
    assert [p.id for p in description.result(20).partitions] == [0, 1, 2, 3]


def test_unknown_topic_without_auto_create(admin, topic_name):
    future = admin.describe_topics(TopicCollection([topic_name]), request_timeout=10)[topic_name]
    with pytest.raises(KafkaException) as raised:
        future.result(20)
    assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_offsets_and_high_watermark(bootstrap, admin, topic_name):
    create(admin, topic_name, partitions=2)
    records = [(None, b"a%d" % i, None, None, 0) for i in range(3)] + \
              [(None, b"b%d" % i, None, None, 1) for i in range(5)]
    reports = produce(bootstrap, topic_name, records)
    by_partition = {}
    for err, msg in reports:
        assert err is None
        by_partition.setdefault(msg.partition(), []).append(msg.offset())
    assert {p: sorted(o) for p, o in by_partition.items()} == {0: [0, 1, 2], 1: [0, 1, 2, 3, 4]}
    c = consumer(bootstrap)
    try:
        assert c.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10) == (0, 3)
        assert c.get_watermark_offsets(TopicPartition(topic_name, 1), timeout=10) == (0, 5)
        c.assign([TopicPartition(topic_name, 1, 3)])
        got = []
        wait_until(lambda: (m := c.poll(0.5)) is not None and got.append(m) or len(got) >= 2,
                   what="records from offset 3")
        assert [(m.offset(), m.value()) for m in got] == [(3, b"b3"), (4, b"b4")]
    finally:
        c.close()


def test_offsets_for_times(bootstrap, admin, topic_name):
    create(admin, topic_name)
    for i in range(3):  # one produce + flush per record: three batches
        produce(bootstrap, topic_name, [(None, b"t%d" % i, None, T0_MS + 10 * i, None)])
    c = consumer(bootstrap)
    try:
        def lookup(ts):
            (found,) = c.offsets_for_times([TopicPartition(topic_name, 0, ts)], timeout=10)
            assert found.error is None
            return found.offset

        assert lookup(T0_MS - 1000) == 0
        assert lookup(T0_MS) == 0
        assert lookup(T0_MS + 5) == 1  # first record with timestamp >= target
        assert lookup(T0_MS + 20) == 2
        assert lookup(T0_MS + 21) == -1  # none: librdkafka's OFFSET_END
    finally:
        c.close()


def test_message_too_large(bootstrap, admin, topic_name):
    create(admin, topic_name)
    # The client allows 4 MiB so the broker's limit (message.max.bytes, 1 MiB + 12) decides.
    reports = produce(bootstrap, topic_name, [(None, b"x" * (1024 * 1024 + 100), None, None, None)],
                      **{"message.max.bytes": 4 * 1024 * 1024, "retries": 0})
    ((err, _),) = reports
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    ((err, msg),) = produce(bootstrap, topic_name, [(None, b"small", None, None, None)])
    assert err is None and msg.offset() == 0


@pytest.mark.parametrize("case", ["zero_partitions", "zero_replication", "replication_above_brokers",
                                  "already_exists", "invalid_name"])
def test_create_topic_errors(admin, topic_name, case):
    name, partitions, replication = topic_name, 1, 1
    expected = {
        "zero_partitions": KafkaError.INVALID_PARTITIONS,
        "zero_replication": KafkaError.INVALID_REPLICATION_FACTOR,
        "replication_above_brokers": KafkaError.INVALID_REPLICATION_FACTOR,
        "already_exists": KafkaError.TOPIC_ALREADY_EXISTS,
        "invalid_name": KafkaError.TOPIC_EXCEPTION,
    }[case]
    if case == "zero_partitions":
        partitions = 0
    elif case == "zero_replication":
        replication = 0
    elif case == "replication_above_brokers":
        replication = 3
    elif case == "already_exists":
        create(admin, name)
    elif case == "invalid_name":
        name = "bad name!"
    future = admin.create_topics([NewTopic(name, partitions, replication)],
                                 operation_timeout=20)[name]
    with pytest.raises(KafkaException) as raised:
        future.result(30)
    assert raised.value.args[0].code() == expected
    if case != "already_exists":
        assert name not in admin.list_topics(timeout=10).topics
