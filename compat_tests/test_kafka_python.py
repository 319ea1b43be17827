"""Behavioural compat tests with kafka-python 3.x (pure-Python client, its own protocol codec).

Consumers here use assign() + seek, never a group: group coordination has its own tests.
"""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as Errors

from compat_tests.helpers import T0_MS, wait_until

CLIENT = "kafka-python"


@pytest.fixture
def admin(bootstrap):
    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-admin",
                              request_timeout_ms=20000)
    yield client
    client.close()


def create(admin, name, partitions=1):
    admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1}},
                        wait_for_metadata=True)


def producer(bootstrap, **config):
    return KafkaProducer(bootstrap_servers=bootstrap, client_id="compat-producer",
                         request_timeout_ms=20000, **config)


def consume(bootstrap, topic, partitions, count, timeout=20.0):
    """Read `count` records from the start of `partitions` of `topic` (assign, no group)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="compat-consumer",
                             enable_auto_commit=False, group_id=None)
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records = []

        def got_all():
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
            return len(records) >= count

        wait_until(got_all, timeout, what=f"{count} records from {topic}")
        return records
    finally:
        consumer.close()


def test_round_trip_keys_headers_timestamps(bootstrap, admin, topic_name):
    create(admin, topic_name)
    sent = [
        (b"k1", b"v1", [("h1", b"x"), ("h2", b"")], T0_MS),
        (None, b"no key", [], T0_MS + 1),
        (b"k3", None, [("only", b"header")], T0_MS + 2),  # a tombstone
        (b"k4", b"\x00\xff" * 100, [("h", b"1"), ("h", b"2")], T0_MS + 3),  # repeated header key
    ]
    with_metadata = producer(bootstrap)
    try:
        futures = [with_metadata.send(topic_name, key=k, value=v, headers=h, timestamp_ms=ts)
                   for k, v, h, ts in sent]
        metas = [f.get(timeout=20) for f in futures]
    finally:
        with_metadata.close()
    assert [m.offset for m in metas] == [0, 1, 2, 3]
    assert [m.partition for m in metas] == [0, 0, 0, 0]

    records = consume(bootstrap, topic_name, [0], len(sent))
    assert [r.offset for r in records] == [0, 1, 2, 3]
    for record, (key, value, headers, ts) in zip(records, sent):
        assert record.key == key
        assert record.value == value
        assert list(record.headers) == headers
        assert record.timestamp == ts
        assert record.timestamp_type == 0  # CreateTime


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression(bootstrap, admin, topic_name, codec):
    create(admin, topic_name)
    values = [f"value-{i:04d}-".encode() * 20 for i in range(200)]
    p = producer(bootstrap, compression_type=codec, linger_ms=50, batch_size=64 * 1024)
    try:
        futures = [p.send(topic_name, key=str(i).encode(), value=v) for i, v in enumerate(values)]
        p.flush(20)
        assert [f.get(timeout=20).offset for f in futures] == list(range(len(values)))
    finally:
        p.close()
    records = consume(bootstrap, topic_name, [0], len(values))
    assert [r.value for r in records] == values
    assert [r.key for r in records] == [str(i).encode() for i in range(len(values))]


def test_create_topic_partitions_in_metadata(bootstrap, admin, topic_name):
    create(admin, topic_name, partitions=5)
    (described,) = admin.describe_topics([topic_name])
    assert described["error_code"] == 0
    assert described["name"] == topic_name
    assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2, 3, 4]
    node_ids = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
    for partition in described["partitions"]:
        assert partition["error_code"] == 0
        assert partition["leader_id"] in node_ids
        assert partition["replica_nodes"] == [partition["leader_id"]]
        assert partition["isr_nodes"] == [partition["leader_id"]]
    assert topic_name in admin.list_topics()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        assert consumer.partitions_for_topic(topic_name) == {0, 1, 2, 3, 4}
    finally:
        consumer.close()


def test_unknown_topic_without_auto_create(admin, topic_name):
    # The admin client's Metadata request has allow_auto_topic_creation=false.
    (described,) = admin.describe_topics([topic_name])
    assert described["name"] == topic_name
    assert described["error_code"] == Errors.UnknownTopicOrPartitionError.errno
    assert described["partitions"] == []
    assert topic_name not in admin.list_topics()


def test_offsets_and_high_watermark(bootstrap, admin, topic_name):
    create(admin, topic_name, partitions=2)
    p = producer(bootstrap)
    try:
        first = [p.send(topic_name, value=b"a%d" % i, partition=0) for i in range(3)]
        second = [p.send(topic_name, value=b"b%d" % i, partition=1) for i in range(5)]
        assert [f.get(timeout=20).offset for f in first] == [0, 1, 2]
        assert [f.get(timeout=20).offset for f in second] == [0, 1, 2, 3, 4]
    finally:
        p.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        tps = [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)]
        assert consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}
        assert consumer.end_offsets(tps) == {tps[0]: 3, tps[1]: 5}
        consumer.assign(tps)
        consumer.seek(tps[1], 3)
        records = []
        wait_until(lambda: records.extend(
            r for batch in consumer.poll(timeout_ms=500).values() for r in batch) or
            len([r for r in records if r.partition == 1]) >= 2, what="records from offset 3")
        tail = [r for r in records if r.partition == 1]
        assert [(r.offset, r.value) for r in tail] == [(3, b"b3"), (4, b"b4")]
    finally:
        consumer.close()


def test_offsets_for_times(bootstrap, admin, topic_name):
    create(admin, topic_name)
    p = producer(bootstrap)
    try:
        for i in range(3):  # separate batches: one record per send + get
            p.send(topic_name, value=b"t%d" % i, timestamp_ms=T0_MS + 10 * i).get(timeout=20)
    finally:
        p.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    tp = TopicPartition(topic_name, 0)
    try:
        def lookup(ts):
            found = consumer.offsets_for_times({tp: ts})[tp]
            return None if found is None else (found.offset, found.timestamp)

        assert lookup(T0_MS - 1000) == (0, T0_MS)
        assert lookup(T0_MS) == (0, T0_MS)
        assert lookup(T0_MS + 5) == (1, T0_MS + 10)   # first record with timestamp >= target
        assert lookup(T0_MS + 20) == (2, T0_MS + 20)
        assert lookup(T0_MS + 21) is None
    finally:
        consumer.close()


def test_message_too_large(bootstrap, admin, topic_name):
    create(admin, topic_name)
    # The client allows 4 MiB so the broker's limit (message.max.bytes, 1 MiB + 12) decides.
    p = producer(bootstrap, max_request_size=4 * 1024 * 1024, retries=0)
    try:
        future = p.send(topic_name, value=b"x" * (1024 * 1024 + 100))  # accepted locally
        with pytest.raises(Errors.MessageSizeTooLargeError):
            future.get(timeout=20)
        # The producer and the partition keep working.
        assert p.send(topic_name, value=b"small").get(timeout=20).offset == 0
    finally:
        p.close()


@pytest.mark.parametrize("case", ["zero_partitions", "zero_replication", "replication_above_brokers",
                                  "already_exists", "invalid_name"])
def test_create_topic_errors(admin, topic_name, case):
    name, partitions, replication = topic_name, 1, 1
    expected = {
        "zero_partitions": Errors.InvalidPartitionsError,
        "zero_replication": Errors.InvalidReplicationFactorError,
        "replication_above_brokers": Errors.InvalidReplicationFactorError,
        "already_exists": Errors.TopicAlreadyExistsError,
        "invalid_name": Errors.InvalidTopicError,
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
    result = admin.create_topics(
        {name: {"num_partitions": partitions, "replication_factor": replication}},
        raise_errors=False)
    (topic,) = result["topics"]
    assert topic["name"] == name
    assert topic["error_code"] == expected.errno
    assert topic["error_message"]
    if case != "already_exists":
        assert name not in admin.list_topics()


@pytest.mark.parametrize("how", ["graceful", "sigkill"])
def test_acknowledged_records_survive_restart(broker, topic_name, how):
    bootstrap = broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        create(admin, topic_name, partitions=2)
    finally:
        admin.close()
    p = producer(bootstrap, acks="all")
    try:
        futures = [p.send(topic_name, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
                   for i in range(10)]
        p.flush(20)
        assert all(f.get(timeout=20) for f in futures)
    finally:
        p.close()

    broker.restart(hard=how == "sigkill")

    records = consume(bootstrap, topic_name, [0, 1], 10, timeout=60)
    assert sorted((r.partition, r.offset, r.key, r.value) for r in records) == \
        sorted((i % 2, i // 2, b"k%d" % i, b"v%d" % i) for i in range(10))
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        tps = [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)]
        assert consumer.end_offsets(tps) == {tps[0]: 5, tps[1]: 5}
    finally:
        consumer.close()


def test_auto_create_uses_num_partitions(broker_factory, topic_name):
    # A private broker with broker configs (Kafka names) passed to either target.
    private = broker_factory(**{"auto.create.topics.enable": "true", "num.partitions": "3"})
    p = producer(private.bootstrap_servers)
    try:
        # The producer's Metadata request allows auto-creation; the broker picks num.partitions.
        assert p.send(topic_name, value=b"first").get(timeout=30).offset == 0
        assert p.partitions_for(topic_name) == {0, 1, 2}
    finally:
        p.close()
