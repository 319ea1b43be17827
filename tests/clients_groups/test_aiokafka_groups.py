"""aiokafka consumer groups against a real kbroker: two members split the partitions,
a leaving member's partitions move to the survivor, commits resume a new consumer."""
from __future__ import annotations

import asyncio
import time

import pytest

aiokafka = pytest.importorskip("aiokafka")
from aiokafka import AIOKafkaConsumer, TopicPartition  # noqa: E402
from aiokafka.structs import OffsetAndMetadata  # noqa: E402

from .conftest import SESSION_MS, create_topic, produce  # noqa: E402

P = 4
# Long enough that no session can expire while a test waits (the waits are bounded well
# below it): a member that is gone then was removed by its LeaveGroup.
LONG_SESSION_MS = 300_000


def consumer(bootstrap, group, topic, **extra):
    conf = dict(auto_offset_reset="earliest", enable_auto_commit=False,
                session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500,
                max_poll_interval_ms=20000, rebalance_timeout_ms=20000)
    conf.update(extra)
    return AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, **conf)


async def until(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def pump(c, seen):
    while True:
        batch = await c.getmany(timeout_ms=100)
        for tp, recs in batch.items():
            seen.update(r.value for r in recs)


def parts(c):
    return {tp.partition for tp in c.assignment()}


def test_two_members_split_then_survivor_takes_over(bootstrap, names):
    topic, group = names
    create_topic(bootstrap, topic, P)
    produce(bootstrap, topic, 40, P)

    async def main():
        a, b = (consumer(bootstrap, group, topic, session_timeout_ms=LONG_SESSION_MS)
                for _ in range(2))
        seen: set = set()
        await a.start()
        await b.start()
        tasks = [asyncio.create_task(pump(c, seen)) for c in (a, b)]
        try:
            await until(lambda: parts(a) and parts(b) and not (parts(a) & parts(b))
                        and parts(a) | parts(b) == set(range(P)), 30, "split")
            await until(lambda: len(seen) == 40, 20, "all records")
            tasks[1].cancel()
            await b.stop()                        # LeaveGroup
            # b's session (LONG_SESSION_MS) cannot expire within this wait: only its
            # LeaveGroup can hand its partitions to a
            await until(lambda: parts(a) == set(range(P)), 60, "takeover")
        finally:
            for t in tasks:
                t.cancel()
            await a.stop()
            await b.stop()
    asyncio.run(main())


def test_commit_then_restarted_consumer_resumes(bootstrap, names):
    topic, group = names
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, 10, 1)
    tp = TopicPartition(topic, 0)

    async def main():
        c = consumer(bootstrap, group, topic)
        await c.start()
        got = []
        try:
            while len(got) < 10:
                for recs in (await c.getmany(timeout_ms=500)).values():
                    got.extend(recs)
            await c.commit({tp: OffsetAndMetadata(6, "aio-meta")})
            assert await c.committed(tp) == 6
        finally:
            await c.stop()
        c2 = consumer(bootstrap, group, topic)
        await c2.start()
        try:
            rest = []
            while len(rest) < 4:
                for recs in (await c2.getmany(timeout_ms=500)).values():
                    rest.extend(recs)
            assert [r.offset for r in rest] == [6, 7, 8, 9]
        finally:
            await c2.stop()
    asyncio.run(main())
