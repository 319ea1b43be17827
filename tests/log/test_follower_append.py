"""PartitionLog with leader epochs: leader appends, follower appends that copy a leader
log byte for byte, refusals, truncation, and the epoch cache across restarts."""
from __future__ import annotations

import os
import random

import pytest

from kbroker.log import LogConfig, PartitionLog
from kbroker.log.epoch_cache import FILE_NAME, LeaderEpochCache
from kbroker.log.errors import OffsetsOutOfOrder, UnexpectedAppendOffset
from kbroker.wire import records as rb
from kbroker.wire.errors import CorruptRecord

from .helpers import make_batch, small_config, stored_batches

NOW = 2_000_000


def new_log(path, cfg=None, **kw):
    kw.setdefault("now_ms", NOW)
    return PartitionLog(path, "t", 0, cfg or small_config(), **kw)


def data_batch(i: int, n: int = 3, size: int = 60, ts: int = NOW, **kw) -> bytes:
    return make_batch([(b"k%d-%d" % (i, j), bytes([i % 256]) * size, ts + j) for j in range(n)], **kw)


def txn_batch(pid, epoch, seq, i, n=2, **kw) -> bytes:
    return rb.build_batch([(b"t%d" % j, b"v%d" % i * 10, (), NOW) for j in range(n)],
                          producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                          is_transactional=True, **kw)


def idem_batch(pid, epoch, seq, i, n=2) -> bytes:
    return rb.build_batch([(b"i%d" % j, b"w%d" % i * 10, (), NOW) for j in range(n)],
                          producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def marker(pid, epoch, commit, coordinator_epoch=0) -> bytes:
    return rb.build_control_batch(commit=commit, producer_id=pid, producer_epoch=epoch,
                                  timestamp=NOW, coordinator_epoch=coordinator_epoch)


def build_leader(path, cfg=None, seed=0) -> PartitionLog:
    """A leader log written over several epochs with plain, idempotent and transactional
    batches, commit and abort markers (one transaction left open at the end)."""
    rng = random.Random(seed)
    log = new_log(path, cfg)
    seqs = {7: 0, 8: 0, 9: 0}
    i = 0
    for epoch in (0, 1, 3, 4, 7):
        log.assign_epoch_start(epoch, log.log_end_offset)
        for _ in range(rng.randint(3, 12)):
            kind = rng.choice(("plain", "idem", "txn"))
            i += 1
            if kind == "plain":
                log.append(data_batch(i, rng.randint(1, 5), rng.randint(0, 400)),
                           leader_epoch=epoch, now_ms=NOW)
            elif kind == "idem":
                log.append(idem_batch(7, 0, seqs[7], i), leader_epoch=epoch, now_ms=NOW)
                seqs[7] += 2
            else:
                pid = rng.choice((8, 9))
                log.append(txn_batch(pid, 0, seqs[pid], i), leader_epoch=epoch, now_ms=NOW)
                seqs[pid] += 2
                if rng.random() < 0.5:
                    log.append(marker(pid, 0, rng.random() < 0.5), leader_epoch=epoch, now_ms=NOW)
    log.append(txn_batch(8, 0, seqs[8], 999), leader_epoch=7, now_ms=NOW)  # left open
    log.high_watermark = log.log_end_offset
    return log


def replicate(leader: PartitionLog, follower: PartitionLog, rng: random.Random, *, upto=None) -> int:
    """Fetch from the leader into the follower the way a replica fetcher does."""
    calls = 0
    end = leader.log_end_offset if upto is None else upto
    while follower.log_end_offset < end:
        region = leader.read(follower.log_end_offset, rng.choice((1, 200, 700, 5000, 1 << 20)))
        assert region is not None
        data = region.read_bytes()
        info = follower.append_as_follower(data, now_ms=NOW)
        assert info.base_offset == rb.parse_header(data).base_offset
        calls += 1
    return calls


def aborted(log):
    return log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset)


def assert_same(leader: PartitionLog, follower: PartitionLog) -> None:
    assert follower.log_end_offset == leader.log_end_offset
    assert [d for _, d in stored_batches(follower)] == [d for _, d in stored_batches(leader)]
    assert follower.epochs.entries() == leader.epochs.entries()
    assert follower.producer_state.encode_snapshot() == leader.producer_state.encode_snapshot()
    assert follower.producer_state.ongoing == leader.producer_state.ongoing
    assert aborted(follower) == aborted(leader)


# -- leader side ---------------------------------------------------------------------------

def test_leader_append_assigns_epochs(tmp_path):
    log = new_log(tmp_path / "t-0")
    log.append(data_batch(1), now_ms=NOW)                       # no epoch: nothing recorded
    assert log.latest_epoch == -1 and log.epochs.entries() == []
    log.append(data_batch(2), leader_epoch=0, now_ms=NOW)       # offsets 3..5
    log.append(data_batch(3), leader_epoch=0, now_ms=NOW)
    log.append(data_batch(4), leader_epoch=2, now_ms=NOW)       # offsets 9..11
    assert log.epochs.entries() == [(0, 3), (2, 9)]
    assert log.latest_epoch == 2
    assert log.end_offset_for_epoch(2) == (2, 12)
    assert log.end_offset_for_epoch(1) == (0, 9)
    assert log.end_offset_for_epoch(0) == (0, 9)
    assert log.end_offset_for_epoch(3) == (-1, -1)
    assert [log.epoch_for_offset(o) for o in (0, 3, 8, 9, 11)] == [-1, 0, 0, 2, 2]
    # every stored batch carries the epoch it was appended with
    assert [h.partition_leader_epoch for h, _ in stored_batches(log)] == [-1, 0, 0, 2]


def test_new_leader_epoch_starts_at_log_end(tmp_path):
    log = new_log(tmp_path / "t-0")
    log.append(data_batch(1), leader_epoch=1, now_ms=NOW)
    assert log.assign_epoch_start(4, log.log_end_offset)
    assert not log.assign_epoch_start(4, log.log_end_offset)
    # before anything is written in epoch 4, epoch 1 ends where epoch 4 starts
    assert log.end_offset_for_epoch(1) == (1, 3)
    assert log.end_offset_for_epoch(4) == (4, 3)
    log.append(data_batch(2), leader_epoch=4, now_ms=NOW)
    assert log.epochs.entries() == [(1, 0), (4, 3)]
    assert log.end_offset_for_epoch(4) == (4, 6)
    # a new leader's epoch start is written with the next flush (before the recovery point
    # passes epoch 4's data), not at once
    assert LeaderEpochCache(log.dir).entries() == [(1, 0)]
    log.flush(now_ms=NOW)
    assert LeaderEpochCache(log.dir).entries() == [(1, 0), (4, 3)]


# -- follower copies ------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_follower_copies_leader_byte_for_byte(tmp_path, seed):
    rng = random.Random(seed)
    leader = build_leader(tmp_path / "leader" / "t-0", seed=seed)
    assert len(leader.epochs) == 5 and len(leader.segments) > 2
    assert aborted(leader) or seed  # most seeds abort something
    follower = new_log(tmp_path / "follower" / "t-0")
    assert replicate(leader, follower, rng) > 1
    assert_same(leader, follower)
    follower.high_watermark = leader.high_watermark
    assert follower.last_stable_offset == leader.last_stable_offset < leader.log_end_offset
    # every offset reads back the same batch on both sides
    for off in range(0, leader.log_end_offset, 2):
        assert follower.read(off, 1).read_bytes() == leader.read(off, 1).read_bytes()
    assert [follower.epoch_for_offset(o) for o in range(leader.log_end_offset)] == \
        [leader.epoch_for_offset(o) for o in range(leader.log_end_offset)]
    # and the copy survives a clean reopen
    follower.close()
    again = new_log(tmp_path / "follower" / "t-0", clean_shutdown=True)
    assert_same(leader, again)


def test_follower_whole_log_in_one_call_rolls_segments(tmp_path):
    leader = build_leader(tmp_path / "leader" / "t-0", small_config(segment_bytes=1 << 20), seed=3)
    assert len(leader.segments) == 1
    data = b"".join(d for _, d in stored_batches(leader))
    cfg = small_config(segment_bytes=1024)
    follower = new_log(tmp_path / "follower" / "t-0", cfg)
    info = follower.append_as_follower(data, now_ms=NOW)
    assert (info.base_offset, info.last_offset) == (0, leader.log_end_offset - 1)
    assert_same(leader, follower)
    assert len(follower.segments) > 3
    assert all(s.size <= 1024 or len(list(s.batches(0))) == 1 for s in follower.segments)
    for off in range(follower.log_end_offset):
        h = rb.parse_header(follower.read(off, 1).read_bytes())
        assert h.base_offset <= off <= h.last_offset


def test_follower_keeps_log_append_time_and_ignores_max_message_bytes(tmp_path):
    leader = new_log(tmp_path / "leader" / "t-0",
                     small_config(message_timestamp_type="LogAppendTime"))
    leader.append(data_batch(1, size=900), leader_epoch=2, now_ms=NOW + 5)
    leader.append(data_batch(2, size=900), leader_epoch=2, now_ms=NOW + 9)
    stamped = [d for _, d in stored_batches(leader)]
    assert all(rb.parse_header(d).timestamp_type == rb.TIMESTAMP_LOG_APPEND_TIME for d in stamped)
    follower = new_log(tmp_path / "follower" / "t-0", small_config(max_message_bytes=200))
    follower.append_as_follower(b"".join(stamped), now_ms=NOW + 1000)
    assert [d for _, d in stored_batches(follower)] == stamped
    assert follower.max_timestamp_offset() == leader.max_timestamp_offset()


def test_follower_accepts_gaps_of_a_compacted_leader(tmp_path):
    cfg = small_config(segment_bytes=1 << 20)
    batches = [data_batch(1, base_offset=0), data_batch(2, base_offset=3, partition_leader_epoch=1),
               data_batch(3, base_offset=10, partition_leader_epoch=1),      # gap 6..9
               data_batch(4, base_offset=40, partition_leader_epoch=2)]      # gap 13..39
    follower = new_log(tmp_path / "t-0", cfg)
    follower.append_as_follower(b"".join(batches[:2]), now_ms=NOW)
    info = follower.append_as_follower(b"".join(batches[2:]), now_ms=NOW)
    assert (info.base_offset, info.last_offset) == (10, 42)
    assert follower.log_end_offset == 43
    assert follower.epochs.entries() == [(1, 3), (2, 40)]
    assert follower.read(7, 1).read_bytes() == batches[2]       # an offset in a gap
    assert follower.read(20, 1).read_bytes() == batches[3]
    # flushed, then reopened after a crash: the gaps are not mistaken for damage
    follower.flush(now_ms=NOW)
    rp = follower.recovery_point
    follower.close_without_flush()
    again = new_log(tmp_path / "t-0", cfg, recovery_point=rp)
    assert [d for _, d in stored_batches(again)] == batches
    assert again.epochs.entries() == [(1, 3), (2, 40)]


def test_follower_takes_compacted_and_emptied_batches(tmp_path):
    # What a compacted leader serves: a batch that lost records (offset deltas with holes,
    # fewer records than its offset span) and one emptied by compaction (no records).
    holes = rb.build_batch([(b"a", b"1", (), NOW), (b"b", b"2", (), NOW)], base_offset=0,
                           offset_deltas=[1, 4], last_offset_delta=5, partition_leader_epoch=2)
    empty = rb.build_batch([], base_offset=6, last_offset_delta=3, producer_id=4,
                           producer_epoch=1, base_sequence=8, partition_leader_epoch=3)
    tail = data_batch(1, base_offset=10, partition_leader_epoch=3)
    follower = new_log(tmp_path / "t-0")
    info = follower.append_as_follower(holes + empty + tail, now_ms=NOW)
    assert (info.base_offset, info.last_offset) == (0, 12)
    assert [d for _, d in stored_batches(follower)] == [holes, empty, tail]
    assert follower.epochs.entries() == [(2, 0), (3, 6)]
    assert follower.producer_state.entry(4).last_seq == 11
    assert follower.read(7, 1).read_bytes() == empty


def test_follower_huge_gap_starts_a_segment_at_the_batch(tmp_path):
    far = (1 << 31) + 12345
    follower = new_log(tmp_path / "t-0")
    follower.append_as_follower(data_batch(1, base_offset=0), now_ms=NOW)
    follower.append_as_follower(data_batch(2, base_offset=far), now_ms=NOW)
    assert follower.segments[-1].base_offset == far
    assert follower.log_end_offset == far + 3
    fresh = new_log(tmp_path / "u-0")      # empty active segment at 0: replaced
    fresh.append_as_follower(data_batch(3, base_offset=far), now_ms=NOW)
    assert [s.base_offset for s in fresh.segments] == [far]
    assert rb.parse_header(fresh.read(far + 1, 1).read_bytes()).base_offset == far


def test_follower_partial_tail_is_left_out(tmp_path):
    a, b = data_batch(1), data_batch(2, base_offset=3)
    follower = new_log(tmp_path / "t-0")
    info = follower.append_as_follower(a + b[:40], now_ms=NOW)
    assert (info.base_offset, info.last_offset, follower.log_end_offset) == (0, 2, 3)
    info = follower.append_as_follower(b[:70], now_ms=NOW)        # nothing whole
    assert follower.log_end_offset == 3 and info.last_offset == 2
    follower.append_as_follower(b, now_ms=NOW)
    assert [d for _, d in stored_batches(follower)] == [a, b]


def test_follower_empty_input_is_a_no_op(tmp_path):
    follower = new_log(tmp_path / "t-0")
    follower.append_as_follower(data_batch(1), now_ms=NOW)
    info = follower.append_as_follower(b"", now_ms=NOW)
    assert info == (3, 2, -1, 0)
    assert follower.log_end_offset == 3


def test_follower_honours_flush_messages(tmp_path):
    follower = new_log(tmp_path / "t-0", small_config(flush_messages=1))
    follower.append_as_follower(data_batch(1), now_ms=NOW)
    assert follower.recovery_point == follower.log_end_offset == 3


# -- refusals ---------------------------------------------------------------------------------

def snapshot_state(log: PartitionLog):
    files = {p.name: p.read_bytes() for p in sorted(log.dir.iterdir()) if p.is_file()}
    return (log.log_end_offset, log.epochs.entries(), log.producer_state.encode_snapshot(),
            [d for _, d in stored_batches(log)], files)


def test_refusals_leave_the_log_unchanged(tmp_path):
    follower = new_log(tmp_path / "t-0")
    follower.append_as_follower(data_batch(1, partition_leader_epoch=1), now_ms=NOW)   # 0..2
    before = snapshot_state(follower)
    good = data_batch(2, base_offset=3, partition_leader_epoch=2)
    bad_crc = bytearray(data_batch(3, base_offset=6, partition_leader_epoch=2))
    bad_crc[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        follower.append_as_follower(good + bytes(bad_crc), now_ms=NOW)
    with pytest.raises(UnexpectedAppendOffset) as exc:
        follower.append_as_follower(data_batch(4, base_offset=2), now_ms=NOW)
    assert exc.value.first_offset == 2
    with pytest.raises(OffsetsOutOfOrder):
        follower.append_as_follower(good + data_batch(5, base_offset=4), now_ms=NOW)
    with pytest.raises(OffsetsOutOfOrder):
        follower.append_as_follower(good + good, now_ms=NOW)
    bad_magic = bytearray(good)
    bad_magic[16] = 1
    with pytest.raises(CorruptRecord):
        follower.append_as_follower(bytes(bad_magic), now_ms=NOW)
    assert snapshot_state(follower) == before
    follower.append_as_follower(good, now_ms=NOW)
    assert follower.log_end_offset == 6 and follower.epochs.entries() == [(1, 0), (2, 3)]


def test_follower_applies_no_producer_checks(tmp_path):
    # The leader accepted these (e.g. after a producer epoch bump); a follower just mirrors.
    follower = new_log(tmp_path / "t-0")
    follower.append_as_follower(idem_batch(5, 3, 10, 1), now_ms=NOW)
    follower.append_as_follower(rb.build_batch([(b"x", b"y", (), NOW)], base_offset=2,
                                               producer_id=5, producer_epoch=3, base_sequence=40),
                                now_ms=NOW)
    e = follower.producer_state.entry(5)
    assert e.producer_epoch == 3 and e.last_seq == 40


# -- truncation and log start -------------------------------------------------------------------

def epoch_log(path, cfg=None):
    log = new_log(path, cfg)
    for i, epoch in enumerate((0, 0, 1, 1, 2, 2)):      # 3 records per batch
        log.append(data_batch(i), leader_epoch=epoch, now_ms=NOW)
    log.high_watermark = log.log_end_offset
    assert log.epochs.entries() == [(0, 0), (1, 6), (2, 12)]
    return log


def test_truncate_to_keeps_cache_right(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.truncate_to(14)              # inside the batch 12..14: cut at 12
    assert log.log_end_offset == 12
    assert log.epochs.entries() == [(0, 0), (1, 6)]
    assert LeaderEpochCache(log.dir).entries() == [(0, 0), (1, 6)]
    log.truncate_to(9)
    assert log.epochs.entries() == [(0, 0), (1, 6)]
    log.truncate_to(6)
    assert log.epochs.entries() == [(0, 0)]
    # a new leader's epoch then starts where the log was cut
    log.append_as_follower(data_batch(9, base_offset=6, partition_leader_epoch=5), now_ms=NOW)
    assert log.epochs.entries() == [(0, 0), (5, 6)]
    assert log.end_offset_for_epoch(0) == (0, 6)


def test_truncate_at_log_end_drops_an_epoch_started_without_data(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.assign_epoch_start(6, log.log_end_offset)      # became leader, wrote nothing
    assert log.epochs.entries()[-1] == (6, 18)
    log.truncate_to(log.log_end_offset + 5)            # now a follower: nothing to cut
    assert log.log_end_offset == 18
    assert log.epochs.entries() == [(0, 0), (1, 6), (2, 12)]
    assert LeaderEpochCache(log.dir).entries() == [(0, 0), (1, 6), (2, 12)]


def test_truncate_fully_clears_cache(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.truncate_fully_and_start_at(100)
    assert log.epochs.entries() == [] and log.latest_epoch == -1
    assert LeaderEpochCache(log.dir).entries() == []
    log.append_as_follower(data_batch(1, base_offset=100, partition_leader_epoch=3), now_ms=NOW)
    assert log.epochs.entries() == [(3, 100)]


def test_log_start_moves_truncate_cache_from_start(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    assert log.delete_records_before(8, now_ms=NOW) == 8
    assert log.epochs.entries() == [(1, 8), (2, 12)]
    assert log.maybe_increment_log_start_offset(13, now_ms=NOW)
    assert not log.maybe_increment_log_start_offset(10, now_ms=NOW)
    assert log.epochs.entries() == [(2, 13)]
    assert LeaderEpochCache(log.dir).entries() == [(2, 13)]


def test_follower_log_start_ignores_cleanup_policy(tmp_path):
    log = epoch_log(tmp_path / "t-0", small_config(cleanup_policy="compact"))
    assert log.maybe_increment_log_start_offset(7, now_ms=NOW)
    assert log.log_start_offset == 7 and log.epochs.entries() == [(1, 7), (2, 12)]


def test_retention_truncates_cache_from_start(tmp_path):
    cfg = small_config(segment_bytes=600, retention_bytes=3000)
    log = new_log(tmp_path / "t-0", cfg)
    for i in range(20):
        log.append(data_batch(i, n=2, size=100), leader_epoch=i // 5, now_ms=NOW)
    log.high_watermark = log.log_end_offset
    assert log.epochs.entries() == [(0, 0), (1, 10), (2, 20), (3, 30)]
    assert log.maybe_run_retention(NOW) > 0
    start = log.log_start_offset
    assert 0 < start < 30
    full = [(0, 0), (1, 10), (2, 20), (3, 30)]
    want = [(e, max(o, start)) for (e, o), nxt in zip(full, full[1:] + [(9, 1 << 40)])
            if nxt[1] > start]
    assert len(want) >= 2 and want[0][1] == start
    assert log.epochs.entries() == want


# -- opening ---------------------------------------------------------------------------------

def test_clean_reopen_restores_cache(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.close()
    again = new_log(tmp_path / "t-0", clean_shutdown=True)
    assert again.epochs.entries() == [(0, 0), (1, 6), (2, 12)]
    assert again.epochs.loaded


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_missing_or_corrupt_file_is_rebuilt_from_headers(tmp_path, damage):
    log = epoch_log(tmp_path / "t-0", small_config(segment_bytes=600))
    assert len(log.segments) > 2
    log.close()
    path = tmp_path / "t-0" / FILE_NAME
    if damage == "missing":
        path.unlink()
    else:
        path.write_text("0\n7\n1 2\n")
    again = new_log(tmp_path / "t-0", small_config(segment_bytes=600), clean_shutdown=True)
    assert again.epochs.entries() == [(0, 0), (1, 6), (2, 12)]
    assert LeaderEpochCache(tmp_path / "t-0").entries() == [(0, 0), (1, 6), (2, 12)]


def test_cache_beyond_recovered_log_end_is_dropped(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.flush(now_ms=NOW)
    rp = log.recovery_point
    log.append(data_batch(7), leader_epoch=4, now_ms=NOW)       # 18..20, cache says (4, 18)
    assert log.epochs.entries()[-1] == (4, 18)
    log.close_without_flush()
    # the crash lost the unflushed tail (the cache file had been written already)
    seg = sorted((tmp_path / "t-0").glob("*.log"))[-1]
    os.truncate(seg, seg.stat().st_size - 30)
    again = new_log(tmp_path / "t-0", recovery_point=rp)
    assert again.log_end_offset == 18
    assert again.epochs.entries() == [(0, 0), (1, 6), (2, 12)]
    assert LeaderEpochCache(tmp_path / "t-0").entries() == [(0, 0), (1, 6), (2, 12)]


def test_unclean_recovery_rereads_epochs_of_recovered_batches(tmp_path):
    log = epoch_log(tmp_path / "t-0", small_config(segment_bytes=300))
    log.flush(now_ms=NOW)
    rp = log.recovery_point
    log.append(data_batch(7), leader_epoch=4, now_ms=NOW)       # 18..20
    log.close_without_flush()
    # a cache file that missed the newest epoch (written after the data, then a crash)
    LeaderEpochCache(tmp_path / "t-0").truncate_from_end(18)
    again = new_log(tmp_path / "t-0", small_config(segment_bytes=300), recovery_point=rp)
    assert again.log_end_offset == 21
    assert again.epochs.entries() == [(0, 0), (1, 6), (2, 12), (4, 18)]


# -- property: truncate and re-fetch converges --------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000),
       steps=st.lists(st.tuples(st.floats(0, 1), st.sampled_from((1, 300, 2000, 1 << 20))),
                      min_size=1, max_size=6))
def test_truncate_and_refetch_converges(tmp_path_factory, seed, steps):
    """A follower that truncates anywhere (a divergence, a restart below the high
    watermark) and fetches again always ends up a copy of the leader."""
    d = tmp_path_factory.mktemp("conv")
    rng = random.Random(seed)
    leader = build_leader(d / "leader" / "t-0", small_config(segment_bytes=4096), seed=seed)
    follower = new_log(d / "follower" / "t-0", small_config(segment_bytes=1024))
    for frac, size in steps:
        replicate(leader, follower, rng)
        cut = int(leader.log_end_offset * frac)
        follower.truncate_to(cut)
        assert follower.log_end_offset <= cut
        assert all(o < follower.log_end_offset for _, o in follower.epochs.entries())
        region = leader.read(follower.log_end_offset, size) if follower.log_end_offset < leader.log_end_offset else None
        if region is not None:
            follower.append_as_follower(region.read_bytes(), now_ms=NOW)
    replicate(leader, follower, rng)
    assert_same(leader, follower)


def test_a_new_leaders_epoch_is_made_durable_by_the_next_flush(tmp_path):
    """assign_epoch_start (every partition of a broker at a leader change) leaves the file
    alone; flush() writes and syncs it before the recovery point passes that epoch's data,
    and a log without epochs writes no file at all."""
    log = new_log(tmp_path / "t-0")
    assert not (tmp_path / "t-0" / FILE_NAME).exists()
    assert log.assign_epoch_start(3, log.log_end_offset)
    assert log.epochs.unsynced and log.end_offset_for_epoch(3) == (3, 0)
    assert not (tmp_path / "t-0" / FILE_NAME).exists()
    log.append(data_batch(1), leader_epoch=3, now_ms=NOW)
    log.flush(now_ms=NOW)
    assert not log.epochs.unsynced and log.recovery_point == log.log_end_offset
    assert not log.assign_epoch_start(3, log.log_end_offset)           # nothing new: no write
    log.close()
    reopened = new_log(tmp_path / "t-0", clean_shutdown=True)
    assert reopened.epochs.entries() == [(3, 0)] and not reopened.epochs.unsynced
    reopened.close()
    empty = new_log(tmp_path / "t-1")
    empty.close()
    again = new_log(tmp_path / "t-1")
    again.close()
    assert not (tmp_path / "t-1" / FILE_NAME).exists()
