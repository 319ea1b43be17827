"""ReplicaManager reads: limits, long polling (trio), isolation, offsets, delete records,
leader epochs and metadata changes — on real log files."""
from __future__ import annotations

import pytest
import trio
import trio.testing

from kbroker.replica import (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP,
                             READ_COMMITTED, READ_UNCOMMITTED, FetchSpec, ReplicaError)
from kbroker.wire.error_codes import ErrorCode

from .conftest import T0, batch, decode_region


def spec(topic, part=0, offset=0, pmax=1 << 20, epoch=-1):
    return FetchSpec(topic, part, offset, pmax, epoch)


@pytest.fixture(params=["cancel scope", "purgatory"])
async def deadlines(request, replicas, nursery):
    """Who keeps a parked fetch's deadline: its own cancel scope (the manager's timer not
    running) or the replica manager's purgatory timer (``delayed.FetchPurgatory``)."""
    if request.param == "purgatory":
        nursery.start_soon(replicas.purgatory.run)
        await trio.testing.wait_all_tasks_blocked()
        assert replicas.purgatory.running
    return request.param


async def test_fetch_returns_available_data_at_once(replicas, cluster):
    cluster.create("t", 1)
    replicas.append("t", 0, batch(b"a", b"b"))
    replicas.append("t", 0, batch(b"c"))
    [r] = await replicas.fetch([spec("t", offset=1)], max_bytes=1 << 20, min_bytes=1,
                               max_wait_ms=10_000)
    assert r.error_code == 0 and (r.high_watermark, r.last_stable_offset, r.log_start_offset) == (3, 3, 0)
    # Mid-batch offsets return the whole batch; the client drops what it did not ask for.
    assert [x.offset for x in decode_region(r.records)] == [0, 1, 2]
    assert r.aborted_transactions is None


async def test_first_partition_with_data_gets_one_whole_batch(replicas, cluster):
    cluster.create("t", 3)
    for p in range(3):
        replicas.append("t", p, batch(b"x" * 1000))
    size = replicas.get_partition("t", 0).log.read(0, 1 << 20).length
    specs = [spec("t", 0, pmax=10), spec("t", 1, pmax=10), spec("t", 2)]
    rs = await replicas.fetch(specs, max_bytes=100, min_bytes=1, max_wait_ms=0)
    assert [r.size for r in rs] == [size, 0, 0]          # max_bytes used up by the first
    rs = await replicas.fetch(specs, max_bytes=3 * size, min_bytes=1, max_wait_ms=0)
    assert [r.size for r in rs] == [size, 0, size]       # partition 1 limited to 10 bytes
    # An empty first partition passes the "at least one batch" right to the next one.
    rs = await replicas.fetch([spec("t", 0, offset=1), spec("t", 1, pmax=10)], max_bytes=10,
                              min_bytes=1, max_wait_ms=0)
    assert [r.size for r in rs] == [0, size]


async def test_errors_per_partition(replicas, cluster):
    cluster.create("t", 1, epoch=5)
    replicas.append("t", 0, batch(b"a"))
    rs = await replicas.fetch([spec("t", offset=2), spec("nope"), spec("t", 1),
                               spec("t", epoch=4), spec("t", epoch=6), spec("t", epoch=5)],
                              max_bytes=1 << 20, min_bytes=1, max_wait_ms=60_000)
    assert [r.error_code for r in rs] == [
        ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH, 0]
    assert rs[-1].size > 0


async def test_long_poll_wakes_on_append(replicas, cluster, deadlines):
    cluster.create("t", 2)
    got = []

    async def consumer():
        rs = await replicas.fetch([spec("t", 0), spec("t", 1)], max_bytes=1 << 20, min_bytes=1,
                                  max_wait_ms=60_000)
        got.append((trio.current_time(), rs))

    async with trio.open_nursery() as n:
        n.start_soon(consumer)
        await trio.testing.wait_all_tasks_blocked()
        assert replicas.statistics()["parked_fetch_waiters"] == 2
        start = trio.current_time()
        replicas.append("t", 1, batch(b"wake"))
    (when, rs), = got
    assert when - start < 1.0
    assert [r.size > 0 for r in rs] == [False, True]
    assert replicas.statistics()["parked_fetch_waiters"] == 0


async def test_long_poll_waits_for_min_bytes_then_times_out(replicas, cluster, autojump_clock,
                                                            deadlines):
    cluster.create("t", 1)
    one = len(batch(b"x" * 10))
    result = []
    wakeups = replicas.stats["fetch_wakeups"]

    async def consumer():
        start = trio.current_time()
        rs = await replicas.fetch([spec("t")], max_bytes=1 << 20, min_bytes=3 * one,
                                  max_wait_ms=500)
        result.append((trio.current_time() - start, rs[0].size))

    async with trio.open_nursery() as n:
        n.start_soon(consumer)
        await trio.testing.wait_all_tasks_blocked()
        replicas.append("t", 0, batch(b"x" * 10))     # not enough: keeps waiting
    (waited, size), = result
    assert waited == pytest.approx(0.5) and size == one
    # woken once by the append; the deadline is not a wake-up by data
    assert replicas.stats["fetch_wakeups"] - wakeups == 1
    assert len(replicas.purgatory) == 0


async def test_purgatory_keeps_each_deadline_and_forgets_fetches_woken_early(
        replicas, cluster, nursery, autojump_clock):
    """A shorter wait parked after a longer one still ends on time (the timer's sleep is
    shortened); fetches woken by data leave entries that are dropped, not kept."""
    nursery.start_soon(replicas.purgatory.run)
    await trio.testing.wait_all_tasks_blocked()
    cluster.create("t", 1)
    ended = {}

    async def consumer(name, wait_ms):
        start = trio.current_time()
        [r] = await replicas.fetch([spec("t", offset=1)], max_bytes=1 << 20, min_bytes=1,
                                   max_wait_ms=wait_ms)
        ended[name] = (trio.current_time() - start, r.size)

    replicas.append("t", 0, batch(b"a"))
    async with trio.open_nursery() as n:
        n.start_soon(consumer, "long", 60_000)
        await trio.testing.wait_all_tasks_blocked()
        n.start_soon(consumer, "short", 300)
        await trio.testing.wait_all_tasks_blocked()
        assert len(replicas.purgatory) == 2
        await trio.sleep(1)
        assert "short" in ended and "long" not in ended
        replicas.append("t", 0, batch(b"b"))
    assert ended["short"] == (pytest.approx(0.3), 0)
    assert ended["long"][0] == pytest.approx(1.0) and ended["long"][1] > 0
    assert len(replicas.purgatory) == 0
    purgatory = replicas.purgatory
    entries = [purgatory.park(trio.current_time() + 3600, trio.Event()) for _ in range(3000)]
    for entry in entries:
        purgatory.leave(entry)
    assert len(purgatory) == 0 and len(purgatory._heap) < purgatory._REBUILD_MIN


async def test_a_fetch_parked_when_the_purgatory_stops_still_ends_at_its_deadline(
        replicas, cluster, autojump_clock):
    cluster.create("t", 1)
    result = []

    async def consumer():
        start = trio.current_time()
        [r] = await replicas.fetch([spec("t")], max_bytes=1 << 20, min_bytes=1,
                                   max_wait_ms=500)
        result.append((trio.current_time() - start, r.size))

    with trio.fail_after(10):      # (a fetch left parked with no deadline would hang)
        async with trio.open_nursery() as n:
            with trio.CancelScope() as timer:
                async with trio.open_nursery() as inner:
                    inner.start_soon(replicas.purgatory.run)
                    await trio.testing.wait_all_tasks_blocked()
                    n.start_soon(consumer)
                    await trio.testing.wait_all_tasks_blocked()
                    assert len(replicas.purgatory) == 1
                    timer.cancel()
            assert not replicas.purgatory.running
    # woken by the timer's stop, it parked again under its own cancel scope
    assert result == [(pytest.approx(0.5), 0)]


async def test_long_poll_min_bytes_reached_by_appends(replicas, cluster, deadlines):
    cluster.create("t", 1)
    one = len(batch(b"y" * 10))
    result = []

    async def consumer():
        rs = await replicas.fetch([spec("t")], max_bytes=1 << 20, min_bytes=2 * one,
                                  max_wait_ms=60_000)
        result.append(rs[0].size)

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(consumer)
            await trio.testing.wait_all_tasks_blocked()
            replicas.append("t", 0, batch(b"y" * 10))
            await trio.testing.wait_all_tasks_blocked()
            assert not result
            replicas.append("t", 0, batch(b"y" * 10))
    assert result == [2 * one]


async def test_long_poll_wakes_when_topic_is_deleted(replicas, cluster, deadlines):
    cluster.create("gone", 1)
    result = []

    async def consumer():
        rs = await replicas.fetch([spec("gone")], max_bytes=1 << 20, min_bytes=1,
                                  max_wait_ms=60_000)
        result.append(rs[0].error_code)

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(consumer)
            await trio.testing.wait_all_tasks_blocked()
            cluster.delete("gone")
    assert result == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


async def test_read_committed_reads_up_to_lso(replicas, cluster):
    cluster.create("t", 1)
    for v in (b"a", b"b", b"c"):
        replicas.append("t", 0, batch(v))
    replicas.lso_hook = lambda part: 1          # an open transaction starting at offset 1
    [r] = await replicas.fetch([spec("t")], max_bytes=1 << 20, min_bytes=1, max_wait_ms=0,
                               isolation_level=READ_COMMITTED)
    assert (r.high_watermark, r.last_stable_offset) == (3, 1)
    assert r.aborted_transactions == []
    assert [x.offset for x in decode_region(r.records)] == [0]
    assert replicas.list_offset("t", 0, LATEST_TIMESTAMP, isolation_level=READ_COMMITTED)[1] == 1
    assert replicas.list_offset("t", 0, LATEST_TIMESTAMP, isolation_level=READ_UNCOMMITTED)[1] == 3
    replicas.lso_hook = None
    [r] = await replicas.fetch([spec("t")], max_bytes=1 << 20, min_bytes=1, max_wait_ms=0,
                               isolation_level=READ_COMMITTED)
    assert r.last_stable_offset == 3 and len(decode_region(r.records)) == 3


def test_list_offsets(replicas, cluster):
    cluster.create("t", 1, epoch=2)
    assert replicas.list_offset("t", 0, LATEST_TIMESTAMP) == (-1, 0, 2)
    assert replicas.list_offset("t", 0, MAX_TIMESTAMP) == (-1, -1, -1)
    assert replicas.list_offset("t", 0, T0) == (-1, -1, -1)
    replicas.append("t", 0, batch(b"a", b"b", timestamps=[T0 + 10, T0 + 30]))
    replicas.append("t", 0, batch(b"c", timestamps=[T0 + 20]))
    assert replicas.list_offset("t", 0, EARLIEST_TIMESTAMP) == (-1, 0, 2)
    assert replicas.list_offset("t", 0, LATEST_TIMESTAMP) == (-1, 3, 2)
    assert replicas.list_offset("t", 0, T0) == (T0 + 10, 0, 2)
    assert replicas.list_offset("t", 0, T0 + 11) == (T0 + 30, 1, 2)
    assert replicas.list_offset("t", 0, T0 + 31) == (-1, -1, -1)
    assert replicas.list_offset("t", 0, MAX_TIMESTAMP) == (T0 + 30, 1, 2)
    with pytest.raises(ReplicaError) as e:
        replicas.list_offset("t", 0, LATEST_TIMESTAMP, current_leader_epoch=1)
    assert e.value.error_code == ErrorCode.FENCED_LEADER_EPOCH
    with pytest.raises(ReplicaError) as e:
        replicas.list_offset("x", 0, LATEST_TIMESTAMP)
    assert e.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_delete_records(replicas, cluster):
    cluster.create("t", 1)
    cluster.create("c", 1, {"cleanup.policy": "compact"})
    for v in (b"a", b"b", b"c", b"d"):
        replicas.append("t", 0, batch(v))
    assert replicas.delete_records("t", 0, 2) == 2
    assert replicas.delete_records("t", 0, 1) == 2       # never moves backwards
    with pytest.raises(ReplicaError) as e:
        replicas.delete_records("t", 0, 5)
    assert e.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert replicas.list_offset("t", 0, EARLIEST_TIMESTAMP)[1] == 2
    [r] = await replicas.fetch([spec("t", offset=1)], max_bytes=1 << 20, min_bytes=1, max_wait_ms=0)
    assert r.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    [r] = await replicas.fetch([spec("t", offset=2)], max_bytes=1 << 20, min_bytes=1, max_wait_ms=0)
    assert r.log_start_offset == 2 and [x.value for x in decode_region(r.records)] == [b"c", b"d"]
    assert replicas.delete_records("t", 0, -1) == 4
    with pytest.raises(ReplicaError) as e:
        replicas.delete_records("c", 0, -1)
    assert e.value.error_code == ErrorCode.POLICY_VIOLATION


def test_leader_epochs(replicas, cluster):
    cluster.create("t", 1, epoch=0)
    replicas.append("t", 0, batch(b"a", b"b"))
    cluster.bump_epoch("t")
    replicas.append("t", 0, batch(b"c"))
    assert replicas.end_offset_for_epoch("t", 0, 1) == (1, 3)
    assert replicas.end_offset_for_epoch("t", 0, 0) == (0, 2)
    assert replicas.end_offset_for_epoch("t", 0, 2) == (-1, -1)
    with pytest.raises(ReplicaError) as e:
        replicas.end_offset_for_epoch("t", 0, 0, current_leader_epoch=0)
    assert e.value.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert replicas.list_offset("t", 0, EARLIEST_TIMESTAMP)[2] == 0
    assert replicas.list_offset("t", 0, LATEST_TIMESTAMP)[2] == 1


def test_apply_image_lifecycle(replicas, cluster, broker):
    t = cluster.create("t", 2)
    replicas.append("t", 0, batch(b"a"))
    cluster.set_configs("t", {"max.message.bytes": "100"})
    assert replicas.get_partition("t", 0).config.max_message_bytes == 100
    assert replicas.get_partition("t", 0).log.config.max_message_bytes == 100
    with pytest.raises(ReplicaError):
        replicas.append("t", 0, batch(b"x" * 200))
    cluster.delete("t")
    assert broker.logs.get("t", 0) is None
    with pytest.raises(ReplicaError) as e:
        replicas.get_partition("t", 0)
    assert e.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    t2 = cluster.create("t", 1)
    assert t2.topic_id != t.topic_id
    assert replicas.get_partition("t", 0).log_end_offset == 0


def test_describe_log_dirs_and_statistics(replicas, cluster, tmp_path):
    cluster.create("a", 2)
    cluster.create("b", 1)
    replicas.append("a", 1, batch(b"x" * 100))
    [(d, err, topics, total, usable)] = replicas.describe_log_dirs(None)
    assert d == str((tmp_path / "data").resolve()) and err == 0 and total > 0 and usable > 0
    sizes = dict((name, {i: size for i, size, _ in parts}) for name, parts in topics)
    assert sizes["a"][0] == 0 and sizes["a"][1] > 100 and sizes["b"] == {0: 0}
    assert all(lag == 0 for _, parts in topics for _, _, lag in parts)
    [(_, _, topics, _, _)] = replicas.describe_log_dirs({"a": {1}})
    assert topics == [("a", [(1, sizes["a"][1], 0)])]
    stats = replicas.statistics()
    assert stats["partitions"] == 3 and stats["appends"] == 1


def test_stale_log_of_a_deleted_topic_is_not_reused(replicas, cluster, broker):
    """A log whose partition.metadata names another topic id (the topic was deleted and
    re-created while this node did not see it) is removed, not served."""
    from kbroker.replica import read_partition_metadata
    t = cluster.create("t", 1)
    replicas.append("t", 0, batch(b"old"))
    assert read_partition_metadata(broker.logs.get("t", 0).dir) == t.topic_id
    fresh = type(replicas)(broker)      # a restarted node: knows nothing in memory
    cluster.replicas = fresh
    cluster.delete("t")                 # not seen by the old manager: log stays on disk
    assert broker.logs.get("t", 0) is not None
    t2 = cluster.create("t", 1)
    assert fresh.get_partition("t", 0).log_end_offset == 0
    assert read_partition_metadata(broker.logs.get("t", 0).dir) == t2.topic_id
    # Same topic id again (a plain restart): the data is kept.
    fresh.append("t", 0, batch(b"new"))
    again = type(replicas)(broker)
    cluster.replicas = again
    cluster.push()
    assert again.get_partition("t", 0).log_end_offset == 1
