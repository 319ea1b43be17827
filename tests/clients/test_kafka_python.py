"""kafka-python 3.x against a real kbroker process: produce (every codec, keys, headers),
consume (earliest, latest, by timestamp), long polling, keyed partitioning, delete records,
too-large messages, auto-create on and off.

Consumers use assign + seek (no consumer group), so only the data plane is under test.
"""
from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaTimeoutError, MessageSizeTooLargeError
from kafka.partitioner.default import murmur2

from tests.support.broker_proc import BrokerProcess

from .conftest import PAYLOAD_CODECS, wait_parked

IDEMPOTENT = True   # kafka-python 3.x's default: InitProducerId first, producer ids on batches


def producer(bootstrap, **kw) -> KafkaProducer:
    kw.setdefault("enable_idempotence", IDEMPOTENT)
    kw.setdefault("acks", "all")
    kw.setdefault("request_timeout_ms", 10_000)
    kw.setdefault("max_block_ms", 20_000)
    return KafkaProducer(bootstrap_servers=bootstrap, **kw)


def consumer(bootstrap, **kw) -> KafkaConsumer:
    kw.setdefault("fetch_max_wait_ms", 200)
    kw.setdefault("request_timeout_ms", 30_000)
    return KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **kw)


def read_all(bootstrap, topic, partitions, expected, *, start="beginning", timeout=20, **kw):
    """Assign all partitions, seek, and poll until ``expected`` records arrived."""
    c = consumer(bootstrap, **kw)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        if start == "beginning":
            c.seek_to_beginning(*tps)
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("codec", PAYLOAD_CODECS)
def test_produce_and_consume_with_compression_keys_headers(bootstrap, make_topic, codec):
    topic = make_topic(1)
    p = producer(bootstrap, compression_type=None if codec == "none" else codec, linger_ms=20)
    futures = [p.send(topic, key=b"k%d" % i, value=b"value-%d-" % i + b"x" * 100,
                      headers=[("h", b"%d" % i), ("empty", b"")] if i % 2 else [])
               for i in range(200)]
    p.flush()
    metas = [f.get(timeout=10) for f in futures]
    p.close()
    assert [m.offset for m in metas] == list(range(200))
    recs = read_all(bootstrap, topic, 1, 200)
    assert [r.offset for r in recs] == list(range(200))
    assert [r.key for r in recs] == [b"k%d" % i for i in range(200)]
    assert recs[7].value.startswith(b"value-7-")
    assert list(recs[7].headers) == [("h", b"7"), ("empty", b"")]
    assert list(recs[8].headers) == []


def test_keyed_partitioning_matches_client_partitioner(bootstrap, make_topic):
    topic = make_topic(6)
    p = producer(bootstrap)
    keys = [b"key-%d" % (i % 17) for i in range(170)]
    metas = [p.send(topic, key=k, value=b"%d" % i) for i, k in enumerate(keys)]
    p.flush()
    metas = [m.get(timeout=10) for m in metas]
    p.close()
    for k, m in zip(keys, metas):   # Java's rule: murmur2(key) & 0x7fffffff % partitions
        assert m.partition == (murmur2(k) & 0x7FFFFFFF) % 6
    recs = read_all(bootstrap, topic, 6, 170)
    by_key: dict[bytes, set[int]] = {}
    for r in recs:
        by_key.setdefault(r.key, set()).add(r.partition)
    assert all(len(ps) == 1 for ps in by_key.values())
    assert {k: ps.pop() for k, ps in by_key.items()} == {k: m.partition for k, m in zip(keys, metas)}
    # Order within a partition is the send order.
    for pnum in range(6):
        values = [int(r.value) for r in recs if r.partition == pnum]
        assert values == sorted(values)


def test_offsets_earliest_latest_and_by_timestamp(bootstrap, make_topic):
    topic = make_topic(1)
    p = producer(bootstrap)
    base = int(time.time() * 1000) - 10_000
    for i in range(10):
        p.send(topic, value=b"%d" % i, timestamp_ms=base + i * 100)
    p.flush()
    p.close()
    c = consumer(bootstrap)
    tp = TopicPartition(topic, 0)
    try:
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: 10}
        found = c.offsets_for_times({tp: base + 250})
        assert (found[tp].offset, found[tp].timestamp) == (3, base + 300)
        assert c.offsets_for_times({tp: base + 10_000})[tp] is None
        c.assign([tp])
        c.seek(tp, found[tp].offset)
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 7 and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                got.extend(r.value for r in recs)
        assert got == [b"%d" % i for i in range(3, 10)]
        # "latest": a consumer positioned at the end sees only newer records.
        c.seek_to_end(tp)
        assert c.position(tp) == 10
    finally:
        c.close()


def test_long_poll_wakes_when_data_arrives(kbroker, bootstrap, make_topic):
    topic = make_topic(1)
    # the broker would hold the fetch 300 s without the wake: longer than the wait below
    c = consumer(bootstrap, fetch_max_wait_ms=300_000, fetch_min_bytes=1,
                 request_timeout_ms=400_000)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek(tp, 0)
    # polled until its fetch waits on the broker (nothing to return: the topic is empty)
    wait_parked(kbroker, topic, poll=lambda: c.poll(timeout_ms=100))
    p = producer(bootstrap)

    def later():
        p.send(topic, value=b"wake up")
        p.flush()

    t = threading.Thread(target=later)
    t.start()
    start = time.monotonic()
    got = []
    while not got and time.monotonic() - start < 120:
        for recs in c.poll(timeout_ms=1000).values():
            got.extend(recs)
    t.join()
    p.close()
    c.close()
    assert [r.value for r in got] == [b"wake up"]      # the broker answered on arrival


def test_delete_records_moves_log_start(bootstrap, make_topic):
    topic = make_topic(1)
    p = producer(bootstrap)
    for i in range(10):
        p.send(topic, value=b"%d" % i)
    p.flush()
    p.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    tp = TopicPartition(topic, 0)
    try:
        result = admin.delete_records({tp: 4})
        assert result[tp]["low_watermark"] == 4
    finally:
        admin.close()
    recs = read_all(bootstrap, topic, 1, 6)
    assert [r.offset for r in recs] == list(range(4, 10))
    c = consumer(bootstrap)
    try:
        assert c.beginning_offsets([tp]) == {tp: 4}
    finally:
        c.close()


def test_too_large_message_is_rejected(bootstrap, make_topic):
    topic = make_topic(1, {"max.message.bytes": "2000"})
    p = producer(bootstrap, max_request_size=10_000_000)
    try:
        with pytest.raises(MessageSizeTooLargeError):
            p.send(topic, value=b"x" * 5000).get(timeout=10)
    finally:
        p.close()
    # kafka-python 3.x makes any non-retriable error fatal for an idempotent producer, so
    # the follow-up send uses a new one.
    p = producer(bootstrap)
    try:
        assert p.send(topic, value=b"small").get(timeout=10).offset == 0
    finally:
        p.close()


def test_auto_create_enabled_by_default(bootstrap, topic_name):
    p = producer(bootstrap)
    try:
        meta = p.send(topic_name + "-auto", value=b"hello").get(timeout=20)
    finally:
        p.close()
    assert meta.offset == 0
    recs = read_all(bootstrap, topic_name + "-auto", 1, 1)
    assert [r.value for r in recs] == [b"hello"]


def test_auto_create_disabled(tmp_path, topic_name):
    proc = BrokerProcess(tmp_path / "noauto", overrides={"auto.create.topics.enable": "false"})
    proc.start()
    try:
        p = producer(proc.bootstrap, max_block_ms=3000)
        try:
            with pytest.raises(KafkaTimeoutError):
                p.send(topic_name, value=b"nope").get(timeout=10)
        finally:
            p.close(timeout=1)
        c = consumer(proc.bootstrap)
        try:
            assert not c.partitions_for_topic(topic_name)
        finally:
            c.close()
    finally:
        proc.stop()


def test_describe_log_dirs_reports_partition_sizes(bootstrap, make_topic):
    topic = make_topic(2)
    p = producer(bootstrap)
    for i in range(20):
        p.send(topic, value=b"x" * 100, partition=1)
    p.flush()
    p.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        result = admin.describe_log_dirs({topic: [0, 1]})
    finally:
        admin.close()
    text = repr(result)
    assert topic in text
    sizes = {}

    def walk(obj):
        if isinstance(obj, dict):
            if "partition_index" in obj and "partition_size" in obj:
                sizes[obj["partition_index"]] = obj["partition_size"]
            for v in obj.values():
                walk(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v)
    walk(result)
    assert sizes.get(0) == 0 and sizes.get(1, 0) > 2000, result
