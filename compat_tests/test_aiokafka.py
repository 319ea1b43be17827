"""Behavioural compat tests with aiokafka (asyncio, its own protocol codec and admin client).

Each test drives its own `asyncio.run`. Consumers use assign() + seek except in the group test.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.admin.records_to_delete import RecordsToDelete
from aiokafka.errors import (KafkaError, MessageSizeTooLargeError, OffsetOutOfRangeError)
from aiokafka.structs import OffsetAndMetadata

from compat_tests.helpers import T0_MS

CLIENT = "aiokafka"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


class Admin:
    def __init__(self, bootstrap):
        self.client = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000,
                                          client_id="compat-aiokafka-admin")

    async def __aenter__(self):
        await self.client.start()
        return self.client

    async def __aexit__(self, *exc):
        await self.client.close()


async def create(bootstrap, topic, partitions=1, configs=None, replication_factor=1):
    """Create a topic; returns the (error code, message) of its entry in the response."""
    async with Admin(bootstrap) as admin:
        response = await admin.create_topics(
            [NewTopic(topic, partitions, replication_factor, topic_configs=configs or {})],
            timeout_ms=20000)
    (entry,) = response.topic_errors
    return entry[1], entry[2] if len(entry) > 2 else None


async def created(bootstrap, topic, partitions=1, configs=None):
    code, message = await create(bootstrap, topic, partitions, configs)
    assert code == 0, (code, message)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # until every partition has a leader
        async with Admin(bootstrap) as admin:
            (desc,) = await admin.describe_topics([topic])
        parts = desc.get("partitions") or []
        if desc.get("error_code") == 0 and len(parts) == partitions and \
                all(p["leader"] >= 0 for p in parts):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{topic} has no leaders")


async def produce(bootstrap, topic, items, **config):
    """items: (key, value, headers, timestamp, partition) → RecordMetadata list."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=20000,
                                client_id="compat-aiokafka-producer", **config)
    await producer.start()
    try:
        futures = [await producer.send(topic, value=v, key=k, headers=h or None,
                                       timestamp_ms=ts, partition=p)
                   for k, v, h, ts, p in items]
        return [await f for f in futures]
    finally:
        await producer.stop()


async def consume(bootstrap, topic, partitions, count, timeout=20.0, **config):
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                client_id="compat-aiokafka-consumer", **config)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        records = []
        deadline = time.monotonic() + timeout
        while len(records) < count and time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                records.extend(batch)
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        await consumer.stop()


def test_round_trip_keys_headers_timestamps(bootstrap, topic_name):
    sent = [
        (b"k1", b"v1", [("h1", b"x"), ("h2", b"")], T0_MS, 1),
        (None, b"no key", [], T0_MS + 1, 1),
        (b"k3", None, [("only", b"header")], T0_MS + 2, 1),
        (b"k4", b"\x00\xff" * 50, [("h", b"1"), ("h", b"2")], T0_MS + 3, 0),
    ]

    async def go():
        await created(bootstrap, topic_name, 2)
        metas = await produce(bootstrap, topic_name, sent)
        records = await consume(bootstrap, topic_name, [0, 1], 4)
        return metas, records

    metas, records = run(go())
    assert [(m.partition, m.offset) for m in metas] == [(1, 0), (1, 1), (1, 2), (0, 0)]
    got = [(r.partition, r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in records]
    assert got == [
        (0, 0, b"k4", b"\x00\xff" * 50, [("h", b"1"), ("h", b"2")], T0_MS + 3),
        (1, 0, b"k1", b"v1", [("h1", b"x"), ("h2", b"")], T0_MS),
        (1, 1, None, b"no key", [], T0_MS + 1),
        (1, 2, b"k3", None, [("only", b"header")], T0_MS + 2),
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_compression(bootstrap, topic_name, codec):
    values = [(b"%d" % i, b"%s-%d-" % (codec.encode(), i) + b"z" * (i * 53 % 700))
              for i in range(80)]

    async def go():
        await created(bootstrap, topic_name)
        metas = await produce(bootstrap, topic_name, [(k, v, None, None, 0) for k, v in values],
                              compression_type=None if codec == "none" else codec, linger_ms=20)
        return metas, await consume(bootstrap, topic_name, [0], len(values))

    metas, records = run(go())
    assert [m.offset for m in metas] == list(range(80))
    assert [(r.offset, r.key, r.value) for r in records] == \
        [(i, k, v) for i, (k, v) in enumerate(values)]


def test_offsets_high_watermark_and_times(bootstrap, topic_name):
    async def go():
        await created(bootstrap, topic_name)
        await produce(bootstrap, topic_name,
                      [(None, b"v%d" % i, None, T0_MS + 10 * i, 0) for i in range(5)])
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition(topic_name, 0)
            consumer.assign([tp])
            begin = await consumer.beginning_offsets([tp])
            end = await consumer.end_offsets([tp])
            times = [await consumer.offsets_for_times({tp: ts})
                     for ts in (T0_MS - 5, T0_MS + 15, T0_MS + 40, T0_MS + 999)]
            consumer.seek(tp, 2)
            batch = await consumer.getmany(tp, timeout_ms=5000)
            highwater = consumer.highwater(tp)
            position = await consumer.position(tp)
            return begin[tp], end[tp], times, batch, highwater, position
        finally:
            await consumer.stop()

    begin, end, times, batch, highwater, position = run(go())
    assert (begin, end) == (0, 5)
    tp = TopicPartition(topic_name, 0)
    found = [t[tp] and (t[tp].offset, t[tp].timestamp) for t in times]
    assert found == [(0, T0_MS), (2, T0_MS + 20), (4, T0_MS + 40), None]
    assert [r.value for r in batch[tp]] == [b"v2", b"v3", b"v4"]
    assert highwater == 5 and position == 5


def test_out_of_range_offset(bootstrap, topic_name):
    async def go():
        await created(bootstrap, topic_name)
        await produce(bootstrap, topic_name, [(None, b"only", None, None, 0)])
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="none")
        await consumer.start()
        try:
            tp = TopicPartition(topic_name, 0)
            consumer.assign([tp])
            consumer.seek(tp, 50)
            with pytest.raises(OffsetOutOfRangeError):
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    await consumer.getmany(tp, timeout_ms=500)
        finally:
            await consumer.stop()

    run(go())


def test_message_too_large(bootstrap, topic_name):
    async def go():
        await created(bootstrap, topic_name, configs={"max.message.bytes": "2000"})
        with pytest.raises(MessageSizeTooLargeError):
            await produce(bootstrap, topic_name, [(None, b"x" * 5000, None, None, 0)])
        return await produce(bootstrap, topic_name, [(None, b"x" * 100, None, None, 0)])

    (meta,) = run(go())
    assert meta.offset == 0


def test_auto_create_on_produce(bootstrap, topic_name):
    """A producer's Metadata request creates an unknown topic (auto.create.topics.enable)."""
    async def go():
        metas = await produce(bootstrap, topic_name, [(None, b"v", None, None, None)])
        async with Admin(bootstrap) as admin:
            (desc,) = await admin.describe_topics([topic_name])
        return metas, desc

    (meta,), desc = run(go())
    assert (meta.partition, meta.offset) == (0, 0)
    assert desc["error_code"] == 0 and len(desc["partitions"]) == 1


@pytest.mark.parametrize("case", ["partitions", "replication_factor", "exists"])
def test_create_topic_errors(bootstrap, topic_name, case):
    async def go():
        if case == "partitions":
            return await create(bootstrap, topic_name, partitions=-5)
        if case == "replication_factor":
            return await create(bootstrap, topic_name, replication_factor=3)
        await created(bootstrap, topic_name)
        return await create(bootstrap, topic_name)

    code, _ = run(go())
    assert code == {"partitions": 37, "replication_factor": 38, "exists": 36}[case]


def test_topic_admin_and_configs(bootstrap, topic_name):
    def retention(responses):
        return configs(responses).get("retention.ms")

    def configs(responses):
        (response,) = responses
        (resource,) = response.resources
        assert resource[0] == 0, resource
        return {entry[0]: entry[1] for entry in resource[4]}

    async def go():
        await created(bootstrap, topic_name, configs={"retention.ms": "3600000"})
        async with Admin(bootstrap) as admin:
            resource = ConfigResource(ConfigResourceType.TOPIC, topic_name)
            before = await admin.describe_configs([resource])
            await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name,
                                                      {"retention.ms": "7200000"})])
            # A broker applies a committed config change when its metadata catches up (on
            # Kafka, asynchronously after AlterConfigs answers): read until it shows.
            deadline = time.monotonic() + 20
            while True:
                after = await admin.describe_configs([resource])
                if retention(after) == "7200000" or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            unknown = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic_name + "-missing")])
            grown = await admin.create_partitions({topic_name: NewPartitions(3)})
            deleted = await admin.delete_topics([topic_name])
            return before, after, unknown, grown, deleted

    before, after, unknown, grown, deleted = run(go())

    assert configs(before)["retention.ms"] == "3600000"
    assert configs(before)["cleanup.policy"] == "delete"
    assert configs(after)["retention.ms"] == "7200000"
    ((unknown_resource,),) = [r.resources for r in unknown]
    assert unknown_resource[0] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert [t[1] for t in grown.topic_errors] == [0]
    assert [t[1] for t in deleted.topic_error_codes] == [0]


def test_delete_records(bootstrap, topic_name):
    async def go():
        await created(bootstrap, topic_name)
        await produce(bootstrap, topic_name, [(None, b"v%d" % i, None, None, 0) for i in range(5)])
        tp = TopicPartition(topic_name, 0)
        async with Admin(bootstrap) as admin:
            low = await admin.delete_records({tp: RecordsToDelete(3)})
        records = await consume(bootstrap, topic_name, [0], 2)
        return low[tp], records

    low, records = run(go())
    assert low == 3
    assert [(r.offset, r.value) for r in records] == [(3, b"v3"), (4, b"v4")]


def test_group_subscribe_commit_describe(bootstrap, topic_name):
    group = f"g-{topic_name}"

    async def go():
        await created(bootstrap, topic_name, 2)
        await produce(bootstrap, topic_name, [(None, b"v%d" % i, None, None, i % 2) for i in range(6)])
        consumer = AIOKafkaConsumer(topic_name, bootstrap_servers=bootstrap, group_id=group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    session_timeout_ms=10000, heartbeat_interval_ms=500)
        await consumer.start()
        try:
            records = []
            deadline = time.monotonic() + 30
            while len(records) < 6 and time.monotonic() < deadline:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    records.extend(batch)
            assignment = sorted(tp.partition for tp in consumer.assignment())
            await consumer.commit({TopicPartition(topic_name, 0): OffsetAndMetadata(3, "meta-0"),
                                   TopicPartition(topic_name, 1): OffsetAndMetadata(2, "")})
            committed = await consumer.committed(TopicPartition(topic_name, 0))
            async with Admin(bootstrap) as admin:
                stable = await admin.describe_consumer_groups([group])
        finally:
            await consumer.stop()
        async with Admin(bootstrap) as admin:
            offsets = await admin.list_consumer_group_offsets(group)
            empty = await admin.describe_consumer_groups([group])
            listed = await admin.list_consumer_groups()
        return records, assignment, committed, stable, offsets, empty, listed

    records, assignment, committed, stable, offsets, empty, listed = run(go(), timeout=90)
    assert len(records) == 6 and assignment == [0, 1] and committed == 3
    (stable_group,) = stable[0].groups
    # (error, group id, state, protocol type, protocol, members, ...)
    assert stable_group[:5] == (0, group, "Stable", "consumer", "roundrobin")
    assert len(stable_group[5]) == 1
    assert {tp.partition: (om.offset, om.metadata) for tp, om in offsets.items()} == \
        {0: (3, "meta-0"), 1: (2, "")}
    (empty_group,) = empty[0].groups
    assert empty_group[:4] == (0, group, "Empty", "consumer") and empty_group[5] == []
    assert (group, "consumer") in [tuple(g[:2]) for g in listed]


def test_idempotent_producer(bootstrap, topic_name):
    async def go():
        await created(bootstrap, topic_name)
        metas = await produce(bootstrap, topic_name, [(None, b"v%d" % i, None, None, 0)
                                                      for i in range(10)],
                              enable_idempotence=True, acks="all")
        return metas, await consume(bootstrap, topic_name, [0], 10)

    metas, records = run(go())
    assert [m.offset for m in metas] == list(range(10))
    assert [r.value for r in records] == [b"v%d" % i for i in range(10)]


def test_transactions_read_committed(bootstrap, topic_name):
    txn = f"txn-{uuid.uuid4().hex[:8]}"

    async def transact(values, commit):
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn,
                                    request_timeout_ms=10000)
        await asyncio.wait_for(producer.start(), 15)
        try:
            async with producer.transaction():
                for v in values:
                    await producer.send_and_wait(topic_name, v, partition=0)
                if not commit:
                    raise KafkaError("abort on purpose")
        except KafkaError as exc:
            if commit or "abort on purpose" not in str(exc):
                raise
        finally:
            await producer.stop()

    async def go():
        await created(bootstrap, topic_name)
        await transact([b"c1", b"c2"], commit=True)
        await transact([b"aborted"], commit=False)
        await produce(bootstrap, topic_name, [(None, b"plain", None, None, 0)])
        committed = await consume(bootstrap, topic_name, [0], 3, timeout=8,
                                  isolation_level="read_committed")
        uncommitted = await consume(bootstrap, topic_name, [0], 4, timeout=8,
                                    isolation_level="read_uncommitted")
        return committed, uncommitted

    committed, uncommitted = run(go())
    assert [r.value for r in committed] == [b"c1", b"c2", b"plain"]
    assert [r.value for r in uncommitted] == [b"c1", b"c2", b"aborted", b"plain"]
