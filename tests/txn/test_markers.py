"""The marker channel (``kbroker.txn.markers.MarkerChannel``) against a real broker.

The leader is a real in-process kbroker with an open transaction on two partitions; the
channel sends it WriteTxnMarkers over a real socket, as a coordinator on another node would.
What the sending node knows of the cluster is a metadata image (the leader's own image with
the leaders and brokers a test wants), so leadership can move between rounds: a partition
whose leader is a dead endpoint waits, and gets its marker once the image names the real
leader; an obsolete or fenced delivery stops without completing; a partition gone from the
image needs no marker.
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType

import trio

from kbroker.server import serve
from kbroker.txn.markers import MarkerChannel
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient
from tests.support.broker_proc import free_port

from .test_coordinator import add, config, create, fetch, init, produce, txn_batch

DEAD = 7


class SenderView:
    """What the coordinator's node knows: its id, its config and the image (settable)."""

    def __init__(self, server, image):
        self.node_id = 99
        self.config = server.broker.config
        self.metadata = image
        self.replicas = None          # leads nothing: every marker goes over the wire


def image_with(server, leaders: dict[tuple[str, int], int], *, drop=()):
    """The leader's image with partition leaders replaced, a dead broker added and
    ``drop`` partitions removed."""
    image = server.broker.metadata
    me = image.brokers[server.broker.node_id]
    dead = dataclasses.replace(me, node_id=DEAD, endpoints=(("PLAINTEXT", "127.0.0.1", free_port()),))
    topics = dict(image.topics)
    for name in {t for t, _ in leaders} | {t for t, _ in drop}:
        t = topics[name]
        parts = {i: dataclasses.replace(p, leader=leaders.get((name, i), p.leader))
                 for i, p in t.partitions.items() if (name, i) not in drop}
        topics[name] = dataclasses.replace(t, partitions=MappingProxyType(parts))
    brokers = dict(image.brokers)
    brokers[DEAD] = dead
    return dataclasses.replace(image, topics=MappingProxyType(topics),
                               brokers=MappingProxyType(brokers))


async def open_transaction(c, tid="tx"):
    await create(c, "t", 2)
    await init(c, tid)
    _, pid, epoch = await init(c, tid)                 # epoch 1: an older one exists
    assert epoch == 1
    assert await add(c, tid, pid, epoch, "t", [0, 1]) == {("t", 0): 0, ("t", 1): 0}
    assert (await produce(c, "t", 0, txn_batch(pid, epoch, 0, b"a", b"b")))[0] == 0
    assert (await produce(c, "t", 1, txn_batch(pid, epoch, 0, b"c")))[0] == 0
    return pid, epoch


async def lso(c, part):
    return (await fetch(c, "t", part, 1)).last_stable_offset


async def test_markers_reach_the_leader_after_a_dead_one(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        pid, epoch = await open_transaction(c)
        assert (await lso(c, 0), await lso(c, 1)) == (0, 0)
        leader = server.broker.node_id
        view = SenderView(server, image_with(server, {("t", 0): DEAD}))
        stats: dict = {}
        channel = MarkerChannel(view, stats, min_backoff_s=0.01, max_backoff_s=0.05)
        done = trio.Event()
        result = []

        async def deliver():
            result.append(await channel.deliver(pid, epoch, True, [("t", 0), ("t", 1)], 0))
            done.set()
        n.start_soon(deliver)
        with trio.fail_after(20):
            while await lso(c, 1) != 2:                  # data + commit marker
                await trio.sleep(0.02)
            while stats.get("marker_request_failures", 0) < 2:
                await trio.sleep(0.02)
        # the dead leader's partition has no marker yet: its transaction is still open
        assert not done.is_set() and await lso(c, 0) == 0
        view.metadata = image_with(server, {("t", 0): leader})   # leadership moved
        with trio.fail_after(20):
            await done.wait()
        assert result == [True]
        p0 = await fetch(c, "t", 0, 1)
        assert (p0.high_watermark, p0.last_stable_offset) == (3, 3)
        assert p0.aborted_transactions == []
        assert stats["marker_retries"] >= 2
        await channel.aclose()
        await c.aclose()
        server.request_shutdown()


async def test_fenced_obsolete_and_deleted(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        pid, epoch = await open_transaction(c)
        view = SenderView(server, image_with(server, {}))
        stats: dict = {}
        channel = MarkerChannel(view, stats, min_backoff_s=0.01, max_backoff_s=0.05)
        with trio.fail_after(20):
            # no longer this coordinator's to send: nothing is sent
            assert await channel.deliver(pid, epoch, True, [("t", 0)], 0, lambda: False) is False
            assert stats.get("marker_requests", 0) == 0
            # a partition gone from the image needs no marker
            view.metadata = image_with(server, {}, drop=[("t", 0), ("t", 1)])
            assert await channel.deliver(pid, epoch, True, [("t", 0), ("t", 1)], 0) is True
            assert stats.get("marker_requests", 0) == 0
            assert (await lso(c, 0), await lso(c, 1)) == (0, 0)
            # an older producer epoch than the partition's is fenced: the delivery stops
            view.metadata = image_with(server, {})
            assert await channel.deliver(pid, epoch - 1, True, [("t", 0)], 0) is False
            assert (await lso(c, 0), await lso(c, 1)) == (0, 0)
            # the real one aborts both
            assert await channel.deliver(pid, epoch, False, [("t", 0), ("t", 1)], 0) is True
        assert stats["marker_requests"] >= 1 and (await lso(c, 0), await lso(c, 1)) == (3, 2)
        p0 = await fetch(c, "t", 0, 1)
        assert [(a.producer_id, a.first_offset) for a in p0.aborted_transactions] == [(pid, 0)]
        await channel.aclose()
        await c.aclose()
        server.request_shutdown()
