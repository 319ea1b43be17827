"""The wake-ups of one acks=all record on three replicas, counted (issue 32, item 3).

A record's replication round on the leader: the append wakes the two parked follower
fetches, which answer with the record; each follower's next fetch acknowledges it, and the
one that moves the high watermark wakes the parked consumer fetch and the acks=all produce.
Nothing else is woken: the consumer's fetch waits for the high watermark, not for the
append, and a follower fetch parked before the high watermark moved stays parked (it answers
with records, as Kafka's DelayedFetch of a follower waits for the log end offset), so no
wake-up in the round re-reads the log only to park again. Counted with the manager's
``fetch_wakeups`` and the tasks' own progress; no time is measured.
"""
from __future__ import annotations

import pytest
import trio
import trio.testing

from kbroker.replica import FetchSpec
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode

from .replication_harness import Cluster

T = "wake"
WAIT_MS = 60_000          # longer than any test: a parked fetch returns only when woken


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


def _batch(value: bytes) -> bytes:
    return rec.build_batch([rec.SimpleRecord(None, value, (), 1_700_000_000_000)])


async def _follower_fetch(cluster, nid: int, done: list) -> None:
    """One long-polled follower fetch from the leader, applied as the fetcher applies it."""
    part = cluster.nodes[nid].replica(T, 0)
    log = part.log
    spec = FetchSpec(T, 0, log.log_end_offset, 1 << 20, current_leader_epoch=part.leader_epoch,
                     last_fetched_epoch=log.latest_epoch, log_start_offset=log.log_start_offset)
    [res] = await cluster.nodes[1].replicas.fetch([spec], max_bytes=1 << 20, min_bytes=1,
                                                  max_wait_ms=WAIT_MS, replica_id=nid)
    assert cluster.nodes[nid].replicas.fetchers.follower_log.process(part, spec.fetch_offset, res) == "ok"
    done.append((nid, res.size))


async def _consumer_fetch(cluster, offset: int, done: list) -> None:
    [res] = await cluster.nodes[1].replicas.fetch(
        [FetchSpec(T, 0, offset, 1 << 20, current_leader_epoch=-1)], max_bytes=1 << 20,
        min_bytes=1, max_wait_ms=WAIT_MS)
    done.append(("consumer", res.size, res.high_watermark))


async def test_one_acks_all_record_wakes_each_waiter_once(cluster):
    cluster.create(T, leader=1)
    leader = cluster.nodes[1].replicas
    part = leader.get_replica(T, 0)
    assert part.isr == (1, 2, 3)
    stats = leader.stats
    followers, consumer, produced = [], [], []

    async def produce_acks_all():
        res = leader.append(T, 0, _batch(b"r"), required_acks=-1)
        produced.append(await leader.wait_replicated(T, 0, res.last_offset + 1, WAIT_MS))

    async with trio.open_nursery() as n:
        n.start_soon(_follower_fetch, cluster, 2, followers)
        n.start_soon(_follower_fetch, cluster, 3, followers)
        n.start_soon(_consumer_fetch, cluster, 0, consumer)
        await trio.testing.wait_all_tasks_blocked()
        assert len(part.log_end_waiters) == 2 and len(part.waiters) == 1
        woken = stats["fetch_wakeups"]

        # the append wakes the two follower fetches, and only them
        n.start_soon(produce_acks_all)
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(nid for nid, _ in followers) == [2, 3]
        assert all(size > 0 for _, size in followers)
        assert stats["fetch_wakeups"] - woken == 2
        assert consumer == [] and produced == []
        assert part.log.high_watermark == 0

        # follower 2 acknowledges: the high watermark waits for follower 3, nothing wakes
        followers.clear()
        n.start_soon(_follower_fetch, cluster, 2, followers)
        await trio.testing.wait_all_tasks_blocked()
        assert part.log.high_watermark == 0
        assert stats["fetch_wakeups"] - woken == 2
        assert len(part.log_end_waiters) == 1 and followers == []

        # follower 3 acknowledges: the high watermark moves; the consumer and the produce
        # are woken and answered, follower 2's parked fetch is not woken
        n.start_soon(_follower_fetch, cluster, 3, followers)
        await trio.testing.wait_all_tasks_blocked()
        assert part.log.high_watermark == 1
        assert produced == [ErrorCode.NONE]
        assert consumer and consumer[0][1] > 0 and consumer[0][2] == 1
        assert stats["fetch_wakeups"] - woken == 3
        assert followers == [] and len(part.log_end_waiters) == 2
        n.cancel_scope.cancel()


async def test_a_high_watermark_move_wakes_no_follower_fetch(cluster):
    """A follower fetch parked at the log end stays parked through a high-watermark move;
    the next append wakes it."""
    cluster.create(T, leader=1)
    leader = cluster.nodes[1].replicas
    part = leader.get_replica(T, 0)
    leader.append(T, 0, _batch(b"a"), required_acks=-1)
    await cluster.fetch_once(2, T)
    await cluster.fetch_once(3, T)
    done = []
    async with trio.open_nursery() as n:
        n.start_soon(_follower_fetch, cluster, 2, done)     # at the log end: parks
        await trio.testing.wait_all_tasks_blocked()
        assert len(part.log_end_waiters) == 1
        before = leader.stats["fetch_wakeups"]
        await cluster.fetch_once(3, T)                     # acknowledges: HW 0 -> 1
        assert part.log.high_watermark == 1
        await trio.testing.wait_all_tasks_blocked()
        assert done == [] and leader.stats["fetch_wakeups"] == before
        leader.append(T, 0, _batch(b"b"), required_acks=-1)
        await trio.testing.wait_all_tasks_blocked()
        assert [nid for nid, _ in done] == [2] and done[0][1] > 0
        assert leader.stats["fetch_wakeups"] == before + 1
