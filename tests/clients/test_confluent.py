"""confluent-kafka (librdkafka) against a real kbroker process: every codec with keys and
headers, keyed partitioning (librdkafka's consistent_random and murmur2_random), offsets
(watermarks, offsets_for_times), read_committed (librdkafka's default) and long polling,
MSG_SIZE_TOO_LARGE. Consumers use assign() with explicit offsets (no group needed).
"""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from kafka.partitioner.default import murmur2

from .conftest import PAYLOAD_CODECS, wait_parked


def producer(bootstrap, **conf) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                     "message.timeout.ms": 20_000, **conf})


def produce_all(p: Producer, topic: str, items) -> list:
    """items: dicts of produce() kwargs; returns the delivered messages in order."""
    delivered = [None] * len(items)

    def cb(i):
        def done(err, msg):
            delivered[i] = (err, msg)
        return done

    for i, kw in enumerate(items):
        p.produce(topic, on_delivery=cb(i), **kw)
        p.poll(0)
    assert p.flush(30) == 0
    return delivered


def consumer(bootstrap, **conf) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "kbroker-tests-unused",
                     "enable.auto.commit": False, "fetch.wait.max.ms": 100, **conf})


def read_all(bootstrap, topic, partitions, expected, timeout=20, **conf):
    c = consumer(bootstrap, **conf)
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            out.append(m)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("codec", PAYLOAD_CODECS)
def test_compression_keys_headers(bootstrap, make_topic, codec):
    topic = make_topic(1)
    p = producer(bootstrap, **{"compression.type": codec})
    items = [dict(key=b"k%d" % i, value=b"payload-%d" % i * 10,
                  headers=[("a", b"%d" % i), ("b", None)] if i % 2 else None)
             for i in range(150)]
    delivered = produce_all(p, topic, items)
    assert all(err is None for err, _ in delivered)
    assert [m.offset() for _, m in delivered] == list(range(150))
    msgs = read_all(bootstrap, topic, 1, 150)
    assert [m.offset() for m in msgs] == list(range(150))
    assert [m.key() for m in msgs] == [b"k%d" % i for i in range(150)]
    assert msgs[5].headers() == [("a", b"5"), ("b", None)]
    assert msgs[6].headers() is None


@pytest.mark.parametrize("partitioner", ["consistent_random", "murmur2_random"])
def test_keyed_partitioning(bootstrap, make_topic, partitioner):
    topic = make_topic(7)
    p = producer(bootstrap, partitioner=partitioner)
    keys = [b"order-%d" % (i % 13) for i in range(130)]
    delivered = produce_all(p, topic, [dict(key=k, value=b"%d" % i) for i, k in enumerate(keys)])
    chosen = {}
    for k, (err, m) in zip(keys, delivered):
        assert err is None
        assert chosen.setdefault(k, m.partition()) == m.partition()
        if partitioner == "murmur2_random":
            assert m.partition() == (murmur2(k) & 0x7FFFFFFF) % 7
    msgs = read_all(bootstrap, topic, 7, 130)
    assert {m.key(): m.partition() for m in msgs} == chosen
    for part in range(7):
        vals = [int(m.value()) for m in msgs if m.partition() == part]
        assert vals == sorted(vals)


def test_watermarks_and_offsets_for_times(bootstrap, make_topic):
    topic = make_topic(1)
    base = int(time.time() * 1000) - 60_000
    p = producer(bootstrap)
    produce_all(p, topic, [dict(value=b"%d" % i, timestamp=base + 1000 * i) for i in range(8)])
    c = consumer(bootstrap)
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 8)
        [found] = c.offsets_for_times([TopicPartition(topic, 0, base + 4500)], timeout=10)
        assert found.offset == 5
        [none] = c.offsets_for_times([TopicPartition(topic, 0, base + 100_000)], timeout=10)
        assert none.offset == -1   # librdkafka: OFFSET_END for "no such record"
        c.assign([TopicPartition(topic, 0, found.offset)])
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 3 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.offset(), m.timestamp()[1]))
        assert got == [(5, base + 5000), (6, base + 6000), (7, base + 7000)]
    finally:
        c.close()


def test_long_poll_read_committed(kbroker, bootstrap, make_topic):
    topic = make_topic(1)
    # the broker would hold the fetch 240 s without the wake: longer than the wait below
    c = consumer(bootstrap, **{"fetch.wait.max.ms": 240_000, "socket.timeout.ms": 300_000,
                               "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    assert c.poll(1.0) is None
    wait_parked(kbroker, topic)          # its fetch waits on the broker now
    p = producer(bootstrap)

    def later():
        produce_all(p, topic, [dict(value=b"now")])

    t = threading.Thread(target=later)
    t.start()
    start = time.monotonic()
    msg = None
    while msg is None and time.monotonic() - start < 120:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            msg = m
    t.join()
    c.close()
    assert msg is not None and msg.value() == b"now"     # answered on arrival


def test_message_too_large(bootstrap, make_topic):
    topic = make_topic(1, {"max.message.bytes": "2000"})
    p = producer(bootstrap, **{"message.send.max.retries": 0})
    [(err, _)] = produce_all(p, topic, [dict(value=b"x" * 5000)])
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    [(err, msg)] = produce_all(p, topic, [dict(value=b"fits")])
    assert err is None and msg.offset() == 0
