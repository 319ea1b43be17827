"""Exclusion per transactional id in the transaction coordinator (Kafka's ``pendingState``),
over raw frames to an in-process broker.

A request that writes a transactional id's state claims the id (``_Claim``: its metadata is
marked pending) and holds no coordinator-wide lock while its ``__transaction_state`` record
is appended and replicated. Meanwhile the requests for that id get Kafka's answers to a
pending transition -- CONCURRENT_TRANSACTIONS after the producer id and epoch checks --
and the requests for every other id are served. A single node replicates at once, so a write
in flight is made to wait at the coordinator's append (``_append`` gated by the test) or a
claim is taken by the test itself, as a request in flight holds it; the cluster test
(tests/cluster/test_txn_claims.py) makes a real append wait for a stopped follower.
"""
from __future__ import annotations

from contextlib import asynccontextmanager

import trio

from kbroker.server import serve
from kbroker.txn.coordinator import _Claim
from kbroker.txn.metadata import TxnState
from kbroker.txn.service import transactions
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient
from tests.support.waiting import until
from tests.txn.test_coordinator import add, config, create, end, fetch, init, produce, txn_batch
from tests.txn.test_tv2 import end as end_v5, produce as produce_v12

NO_TIMER = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "3600000"}


async def add_offsets(c, tid, pid, epoch, group):
    r = await c.request("AddOffsetsToTxn", 3, transactional_id=tid, producer_id=pid,
                        producer_epoch=epoch, group_id=group)
    return r.error_code


def gate_appends(coord, transactional_id):
    """Hold the coordinator's ``__transaction_state`` appends of ``transactional_id``'s
    partition until the returned event is set (as a write waiting for its replication);
    ``held`` counts the writes waiting."""
    release, held = trio.Event(), []
    real = coord._append
    part = coord.partition_for(transactional_id)

    async def append(p, batch, now):
        if p == part and not release.is_set():
            held.append(p)
            await release.wait()
        return await real(p, batch, now)

    coord._append = append
    return release, held


def other_partition_id(coord, tid: str = "a") -> str:
    """An id whose ``__transaction_state`` partition is not ``tid``'s (a gate holds only one)."""
    return next(f"b{i}" for i in range(100)
                if coord.partition_for(f"b{i}") != coord.partition_for(tid))


@asynccontextmanager
async def two_ids(tmp_path):
    """A broker without the timeout timer, a topic "t" of two partitions, and a second id on
    another ``__transaction_state`` partition than "a"'s: ``(nursery, server, coordinator,
    connection, id)``; the broker is shut down at the end."""
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path, NO_TIMER))
        coord = transactions(server.broker)   # before its first request
        c = await RawClient.connect(server)
        await create(c, "t", 2)
        yield n, server, coord, c, other_partition_id(coord)
        await c.aclose()
        server.request_shutdown()


async def open_transaction(c, tid, part):
    """InitProducerId, the partition ``("t", part)`` added and one record written in it."""
    _, pid, epoch = await init(c, tid)
    assert await add(c, tid, pid, epoch, "t", [part]) == {("t", part): 0}
    assert await produce(c, "t", part, txn_batch(pid, epoch, 0, tid.encode())) == (0, 0)
    return pid, epoch


async def commit_in_flight(nursery, server, tid, pid, epoch):
    """Start EndTxn(commit) for ``tid`` on a connection of its own and return once its
    PrepareCommit waits at the append: ``(release, answers, connection)``."""
    coord = server.broker.transactions
    release, held = gate_appends(coord, tid)
    c = await RawClient.connect(server)
    got = []

    async def commit():
        got.append(await end(c, tid, pid, epoch, True))

    nursery.start_soon(commit)
    await until(lambda: held)
    return release, got, c


async def test_a_claimed_id_answers_concurrent_transactions_and_others_go_on(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path, NO_TIMER))
        coord = transactions(server.broker)   # before its first request
        c = await RawClient.connect(server)
        await create(c, "t", 2)
        _, pa, ea = await init(c, "a")
        _, pb, eb = await init(c, "b")
        assert await add(c, "a", pa, ea, "t", [0]) == {("t", 0): 0}
        claim = _Claim(coord.txns["a"])           # as a request whose write is in flight
        with claim:
            # Kafka's order: the producer id, then the epoch, then the pending transition
            assert await add(c, "a", pa + 7, ea, "t", [1]) == {("t", 1): E.INVALID_PRODUCER_ID_MAPPING}
            assert await add(c, "a", pa, ea + 1, "t", [1]) == {("t", 1): E.PRODUCER_FENCED}
            assert await add(c, "a", pa, ea, "t", [1]) == {("t", 1): E.CONCURRENT_TRANSACTIONS}
            assert await add_offsets(c, "a", pa, ea, "g") == E.CONCURRENT_TRANSACTIONS
            assert await end(c, "a", pa, ea, True) == E.CONCURRENT_TRANSACTIONS
            assert await end(c, "a", pa, ea + 1, True) == E.PRODUCER_FENCED
            assert await init(c, "a") == (E.CONCURRENT_TRANSACTIONS, -1, -1)
            assert await init(c, "a", pid=pa, epoch=ea) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
            # a read is answered from the state as it is
            r = await c.request("DescribeTransactions", 0, transactional_ids=["a"])
            assert r.transaction_states[0].transaction_state == "Ongoing"
            # another id is served meanwhile: a whole transaction
            assert await add(c, "b", pb, eb, "t", [1]) == {("t", 1): 0}
            assert await produce(c, "t", 1, txn_batch(pb, eb, 0, b"b")) == (0, 0)
            assert await end(c, "b", pb, eb, True) == 0
            assert coord.txns["b"].state == TxnState.COMPLETE_COMMIT
            assert coord.txns["a"].state == TxnState.ONGOING
        # released: the id's own requests go on
        assert await produce(c, "t", 0, txn_batch(pa, ea, 0, b"a")) == (0, 0)
        assert await end(c, "a", pa, ea, True) == 0
        assert coord.txns["a"].state == TxnState.COMPLETE_COMMIT and not coord.txns["a"].pending
        for p in (0, 1):
            part = await fetch(c, "t", p, 1)
            assert part.last_stable_offset == part.high_watermark == 2    # data + commit marker
        await c.aclose()
        server.request_shutdown()


async def test_tv2_end_txn_and_add_of_a_claimed_id(tmp_path):
    """EndTxn v5 checks the pending transition after the epoch (Kafka's endTransaction);
    a TV2 Produce's implicit add that meets a pending transition is asked again for up to
    ``add.partitions.to.txn.retry.backoff.max.ms`` (Kafka's ReplicaManager), then the
    producer gets NOT_ENOUGH_REPLICAS (retriable); one released meanwhile is served."""
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path, NO_TIMER))
        coord = transactions(server.broker)   # before its first request
        stats = coord.verifier.stats
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        _, pid, e = await init(c, "tx", version=5)
        assert await produce_v12(c, "tx", "t", 0, txn_batch(pid, e, 0, b"a")) == 0
        with _Claim(coord.txns["tx"]):
            assert await end_v5(c, "tx", pid, e + 5, True) == (E.PRODUCER_FENCED, -1, -1)
            assert await end_v5(c, "tx", pid, e, True) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        assert await end_v5(c, "tx", pid, e, True) == (0, pid, e + 1)
        e += 1
        # the next transaction's first batch: its add waits out the claim, within the budget
        with _Claim(coord.txns["tx"]):
            assert await produce_v12(c, "tx", "t", 0, txn_batch(pid, e, 0, b"x")) == \
                E.NOT_ENOUGH_REPLICAS
            assert stats["add_retries"] >= 1
        retries = stats["add_retries"]
        got = []
        claim = _Claim(coord.txns["tx"])

        async def send():
            got.append(await produce_v12(c, "tx", "t", 0, txn_batch(pid, e, 0, b"b")))

        with trio.fail_after(30):
            n.start_soon(send)
            await until(lambda: stats["add_retries"] > retries)
            claim.release()
            await until(lambda: got)
        assert got == [0]
        assert await end_v5(c, "tx", pid, e, True) == (0, pid, e + 1)
        await c.aclose()
        server.request_shutdown()


async def test_two_ids_progress_while_one_write_is_in_flight(tmp_path):
    """A's EndTxn waits at its ``__transaction_state`` append; B's InitProducerId,
    AddPartitionsToTxn and EndTxn are answered meanwhile (they were queued behind A's write
    under the coordinator-wide lock), A's own requests get CONCURRENT_TRANSACTIONS, and A's
    state changes only once its record is stored. Both commits are then visible."""
    async with two_ids(tmp_path) as (n, server, coord, c, b_id):
        pa, ea = await open_transaction(c, "a", 0)
        with trio.fail_after(30):
            release, got, c2 = await commit_in_flight(n, server, "a", pa, ea)
            assert coord.txns["a"].pending and coord.txns["a"].state == TxnState.ONGOING
            pb, eb = await open_transaction(c, b_id, 1)
            assert await end(c, b_id, pb, eb, True) == 0
            assert await end(c, "a", pa, ea, True) == E.CONCURRENT_TRANSACTIONS
            assert got == [] and coord.txns["a"].state == TxnState.ONGOING
            release.set()
            await until(lambda: got)
        assert got == [0]
        meta = coord.txns["a"]
        assert meta.state == TxnState.COMPLETE_COMMIT and not meta.pending
        for p in (0, 1):
            part = await fetch(c, "t", p, 1)
            assert part.last_stable_offset == part.high_watermark == 2
        await c2.aclose()


async def test_a_write_that_replicated_across_an_unload_is_not_applied(tmp_path):
    """The id's partition is unloaded while its PrepareCommit is in flight (leadership
    moved, or a new leader epoch): the answer is NOT_COORDINATOR, as Kafka's append
    callback gives when the coordinator epoch changed, and the state the unload forgot is
    not brought back by the late write. The record itself is in the log: the reload replays
    it and finishes the commit, and the client's retry is answered from there."""
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path, NO_TIMER))
        coord = transactions(server.broker)   # before its first request
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        pid, epoch = await open_transaction(c, "tx", 0)
        with trio.fail_after(30):
            release, got, c2 = await commit_in_flight(n, server, "tx", pid, epoch)
            coord._unload(coord.partition_for("tx"))      # what such an image does
            release.set()
            await until(lambda: got)
        assert got == [E.NOT_COORDINATOR]
        assert "tx" not in coord.txns
        # the next request reloads the partition: PrepareCommit replayed and completed
        assert await end(c, "tx", pid, epoch, True) == 0
        meta = coord.txns["tx"]
        assert (meta.producer_epoch, meta.state, meta.pending) == (epoch, TxnState.COMPLETE_COMMIT, False)
        part = await fetch(c, "t", 0, 1)
        assert part.last_stable_offset == part.high_watermark == 2
        await c.aclose()
        await c2.aclose()
        server.request_shutdown()


async def test_timed_out_transactions_are_aborted_each_on_its_own(tmp_path):
    """The timer aborts every timed-out transaction at once: A's fencing write waits at its
    append while B's abort is written, its markers appended and its state completed; A is
    aborted once its write is stored (one at a time, B waited for A's replication)."""
    async with two_ids(tmp_path) as (n, server, coord, c, b_id):
        ids = {}
        for tid, part in (("a", 0), (b_id, 1)):          # A first: the timer meets it first
            _, pid, epoch = await init(c, tid, timeout=1)
            assert await add(c, tid, pid, epoch, "t", [part]) == {("t", part): 0}
            assert await produce(c, "t", part, txn_batch(pid, epoch, 0, tid.encode())) == (0, 0)
            ids[tid] = epoch
        with trio.fail_after(30):
            await until(lambda: all(coord.now_ms() > m.start_ms + m.timeout_ms
                                         for m in coord.txns.values()))
        release, held = gate_appends(coord, "a")
        aborted = []

        async def timer_round():
            aborted.append(await coord.abort_timed_out())

        n.start_soon(timer_round)
        with trio.fail_after(10):
            await until(lambda: held)
            await until(lambda: coord.txns[b_id].state == TxnState.COMPLETE_ABORT)
        a = coord.txns["a"]
        assert a.state == TxnState.ONGOING and a.pending and aborted == []
        release.set()
        with trio.fail_after(30):
            await until(lambda: aborted)
        assert aborted == [2] and coord.stats["timeouts"] == 2
        for tid, part in (("a", 0), (b_id, 1)):
            meta = coord.txns[tid]
            assert (meta.state, meta.producer_epoch, meta.pending) == \
                (TxnState.COMPLETE_ABORT, ids[tid] + 1, False)
            p = await fetch(c, "t", part, 1)
            assert p.last_stable_offset == p.high_watermark == 2      # data + abort marker
