"""aiokafka against a real kbroker process: every codec with keys and headers, keyed
partitioning (murmur2, as the Java client), offsets (earliest/latest/by timestamp),
read_committed last stable offset, long polling, too-large messages, delete records
visibility. aiokafka runs on asyncio, so each test drives its own ``asyncio.run``.
"""
from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import MessageSizeTooLargeError
from aiokafka.partitioner import murmur2

from .conftest import PAYLOAD_CODECS, wait_parked


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def produce(bootstrap, topic, items, **kw):
    """items: (key, value, headers, partition|None) → list of RecordMetadata."""
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=10_000, **kw)
    await p.start()
    try:
        futs = [await p.send(topic, value=v, key=k, headers=h or None, partition=part)
                for k, v, h, part in items]
        return [await f for f in futs]
    finally:
        await p.stop()


async def consume(bootstrap, topic, partitions, expected, **kw):
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                         auto_offset_reset="earliest", **kw)
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        out = []
        deadline = time.monotonic() + 20
        while len(out) < expected and time.monotonic() < deadline:
            for recs in (await c.getmany(timeout_ms=500)).values():
                out.extend(recs)
        return out
    finally:
        await c.stop()


@pytest.mark.parametrize("codec", PAYLOAD_CODECS)
def test_compression_keys_headers(bootstrap, make_topic, codec):
    topic = make_topic(1)

    async def go():
        items = [(b"k%d" % i, b"v%d" % i * 20, [("n", b"%d" % i)] if i % 3 == 0 else None, None)
                 for i in range(100)]
        metas = await produce(bootstrap, topic, items,
                              compression_type=None if codec == "none" else codec, linger_ms=10)
        assert [m.offset for m in metas] == list(range(100))
        recs = await consume(bootstrap, topic, 1, 100)
        assert [r.offset for r in recs] == list(range(100))
        assert [r.key for r in recs] == [b"k%d" % i for i in range(100)]
        assert recs[3].value == b"v3" * 20 and list(recs[3].headers) == [("n", b"3")]
        assert list(recs[4].headers) == []
    run(go())


def test_keyed_partitioning(bootstrap, make_topic):
    topic = make_topic(5)

    async def go():
        keys = [b"user-%d" % (i % 11) for i in range(110)]
        metas = await produce(bootstrap, topic, [(k, b"%d" % i, None, None) for i, k in enumerate(keys)])
        for k, m in zip(keys, metas):
            assert m.partition == (murmur2(k) & 0x7FFFFFFF) % 5
        recs = await consume(bootstrap, topic, 5, 110)
        seen = {}
        for r in recs:
            assert seen.setdefault(r.key, r.partition) == r.partition
        assert seen == {k: m.partition for k, m in zip(keys, metas)}
        for p in range(5):
            vals = [int(r.value) for r in recs if r.partition == p]
            assert vals == sorted(vals)
    run(go())


def test_offsets_and_isolation(bootstrap, make_topic):
    topic = make_topic(2)

    async def go():
        base = int(time.time() * 1000) - 5000
        p = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await p.start()
        try:
            for i in range(6):
                await p.send_and_wait(topic, b"%d" % i, partition=1, timestamp_ms=base + 10 * i)
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False)
        await c.start()
        try:
            tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
            assert await c.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
            assert await c.end_offsets([tp0, tp1]) == {tp0: 0, tp1: 6}
            found = await c.offsets_for_times({tp1: base + 25, tp0: base})
            assert found[tp0] is None
            assert (found[tp1].offset, found[tp1].timestamp) == (3, base + 30)
            c.assign([tp1])
            c.seek(tp1, 3)
            got = []
            deadline = time.monotonic() + 10
            while len(got) < 3 and time.monotonic() < deadline:
                for recs in (await c.getmany(timeout_ms=500)).values():
                    got.extend(r.value for r in recs)
            assert got == [b"3", b"4", b"5"]
            assert c.highwater(tp1) == 6 and c.last_stable_offset(tp1) == 6
        finally:
            await c.stop()
    run(go())


def test_long_poll_wakes_on_produce(kbroker, bootstrap, make_topic):
    topic = make_topic(1)

    async def go():
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=30_000,
                             enable_auto_commit=False)
        await c.start()
        p = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await p.start()
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            c.seek(tp, 0)
            assert await c.getmany(timeout_ms=300) == {}

            async def later():
                # its fetch waits on the broker (the event loop keeps running meanwhile)
                await asyncio.to_thread(wait_parked, kbroker, topic)
                await p.send_and_wait(topic, b"ping")

            task = asyncio.create_task(later())
            start = time.monotonic()
            msg = await asyncio.wait_for(c.getone(), 25)
            waited = time.monotonic() - start
            await task
            assert msg.value == b"ping" and waited < 25
        finally:
            await p.stop()
            await c.stop()
    run(go())


def test_message_too_large(bootstrap, make_topic):
    topic = make_topic(1, {"max.message.bytes": "1500"})

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=5_000_000)
        await p.start()
        try:
            with pytest.raises(MessageSizeTooLargeError):
                await p.send_and_wait(topic, b"z" * 4000)
            assert (await p.send_and_wait(topic, b"ok")).offset == 0
        finally:
            await p.stop()
    run(go())
