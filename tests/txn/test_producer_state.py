"""ProducerStateManager: Kafka's sequence/epoch rules, duplicates, open transactions and
snapshots, on the pure state and on real partition logs (append, roll, restart, crash)."""
from __future__ import annotations

import os

import pytest

from kbroker.log.producer_state import (INT32_MAX, ProducerStateError, ProducerStateManager)
from kbroker.wire import records as rb
from kbroker.wire.error_codes import ErrorCode

from .helpers import T0, header, marker, open_log, pbatch, values


def stored(ps: ProducerStateManager, data: bytes, base_offset: int):
    h = header(data)._replace(base_offset=base_offset)
    m = None
    if h.is_control:
        m = rb.parse_control_record(rb.decode_records(data, 0, header(data))[0])
    return ps.append(h, m)


def code(excinfo) -> int:
    return excinfo.value.error_code


def test_in_sequence_batches_and_duplicates():
    ps = ProducerStateManager(None)
    b0, b1 = pbatch(7, 0, 0, 3), pbatch(7, 0, 3, 2)
    assert ps.check_append(header(b0)) is None
    stored(ps, b0, 10)
    assert ps.check_append(header(b1)) is None
    stored(ps, b1, 13)
    dup = ps.check_append(header(b0))
    assert (dup.first_offset, dup.last_offset, dup.first_seq, dup.last_seq) == (10, 12, 0, 2)
    dup = ps.check_append(header(b1))
    assert (dup.first_offset, dup.last_offset) == (13, 14)


def test_only_the_last_five_batches_are_remembered():
    ps = ProducerStateManager(None)
    for i in range(6):
        stored(ps, pbatch(1, 0, i), 100 + i)
    assert ps.check_append(header(pbatch(1, 0, 1))).first_offset == 101
    with pytest.raises(ProducerStateError) as e:   # seq 0 fell out of the cache
        ps.check_append(header(pbatch(1, 0, 0)))
    assert code(e) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_gaps_old_epochs_and_new_epochs():
    ps = ProducerStateManager(None)
    stored(ps, pbatch(1, 3, 0, 2), 0)
    with pytest.raises(ProducerStateError) as e:
        ps.check_append(header(pbatch(1, 3, 5)))
    assert code(e) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(ProducerStateError) as e:
        ps.check_append(header(pbatch(1, 2, 2)))
    assert code(e) == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(ProducerStateError) as e:      # a new epoch starts at 0
        ps.check_append(header(pbatch(1, 4, 2)))
    assert code(e) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert ps.check_append(header(pbatch(1, 4, 0))) is None
    # an unknown producer (e.g. its data deleted) is accepted at any sequence (KIP-360)
    assert ps.check_append(header(pbatch(99, 0, 42))) is None


def test_sequence_wraps_at_int32_max():
    ps = ProducerStateManager(None)
    stored(ps, pbatch(1, 0, INT32_MAX - 1, 2), 0)
    assert ps.check_append(header(pbatch(1, 0, 0))) is None
    with pytest.raises(ProducerStateError):
        ps.check_append(header(pbatch(1, 0, 1)))


def test_transactions_open_close_and_lso_inputs():
    ps = ProducerStateManager(None)
    stored(ps, pbatch(1, 0, 0, txn=True), 5)
    stored(ps, pbatch(2, 0, 0, txn=True), 6)
    stored(ps, pbatch(1, 0, 1, txn=True), 7)
    assert ps.first_unstable_offset() == 5 and ps.has_ongoing(1)
    with pytest.raises(ProducerStateError) as e:     # non-transactional inside a txn
        ps.check_append(header(pbatch(1, 0, 2)))
    assert code(e) == ErrorCode.INVALID_TXN_STATE
    done = stored(ps, marker(1, 0, commit=False), 8)
    assert done == (1, 5, 8, True)
    assert ps.last_stable_offset_after(done) == 6
    assert ps.first_unstable_offset() == 6
    done = stored(ps, marker(2, 0, commit=True), 9)
    assert done.is_aborted is False and ps.last_stable_offset_after(done) == 10
    assert ps.first_unstable_offset() is None
    assert stored(ps, marker(2, 0, commit=True), 10) is None    # empty txn: nothing completes


def test_markers_fence_old_epochs_and_zombie_coordinators():
    ps = ProducerStateManager(None)
    stored(ps, marker(1, 5, commit=True, coordinator_epoch=3), 0)
    with pytest.raises(ProducerStateError) as e:
        ps.check_marker(1, 4, 3)
    assert code(e) == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(ProducerStateError) as e:
        ps.check_marker(1, 5, 2)
    assert code(e) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    ps.check_marker(1, 6, 3)


def test_snapshot_round_trip_keeps_last_batch_and_open_txns(tmp_path):
    ps = ProducerStateManager(tmp_path)
    stored(ps, pbatch(1, 2, 0, 3), 0)
    stored(ps, pbatch(1, 2, 3, 1), 3)
    stored(ps, pbatch(2, 0, 0, txn=True), 4)
    path = ps.take_snapshot()
    assert path.name == "00000000000000000005.snapshot"
    again = ProducerStateManager(tmp_path)
    assert again.load_latest(5) == 5
    e1 = again.entry(1)
    assert (e1.producer_epoch, e1.last_seq, len(e1.batches)) == (2, 3, 1)
    assert again.check_append(header(pbatch(1, 2, 3, 1))).first_offset == 3
    assert again.first_unstable_offset() == 4
    # a damaged snapshot is dropped, an older one used instead
    ps.take_snapshot(2)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert again.load_latest(10) == 2
    assert not path.exists()


# ------------------------------------------------------------------ on a partition log

def _append_and_commit(log):
    """One node: the high watermark follows every append (as the ReplicaManager does)."""
    plain = log.append

    def append(data):
        info = plain(data)
        log.high_watermark = log.log_end_offset
        return info
    return append


def test_log_restart_after_clean_close_uses_the_snapshot(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(pbatch(1, 0, 0, 2))
    log.append(pbatch(1, 0, 2, 1))
    log.close()
    assert (tmp_path / "t-0" / "00000000000000000003.snapshot").exists()
    log = open_log(tmp_path / "t-0")
    assert log.producer_state.check_append(header(pbatch(1, 0, 2, 1))).first_offset == 2
    with pytest.raises(ProducerStateError):
        log.producer_state.check_append(header(pbatch(1, 0, 7)))
    log.close()


def test_a_clean_restart_still_knows_each_producers_last_five_batches(tmp_path):
    """The snapshot holds only the newest batch (Kafka's format); the batches below it are
    read back, so a retry of an older one in flight is a duplicate, not out of order."""
    d = tmp_path / "t-0"
    log = open_log(d)
    offsets = {}
    for i in range(7):
        offsets[i] = log.append(pbatch(1, 0, i)).base_offset
        log.append(pbatch(2, 3, i))                        # interleaved with another producer
    log.append(pbatch(3, 0, 0))
    log.append(pbatch(3, 1, 0))                            # producer 3's epoch 0 is over
    log.close()
    log = open_log(d)
    ps = log.producer_state
    assert [len(ps.entry(p).batches) for p in (1, 2, 3)] == [5, 5, 1]
    for i in range(2, 7):
        assert ps.check_append(header(pbatch(1, 0, i))).first_offset == offsets[i]
    with pytest.raises(ProducerStateError) as e:           # six back: not kept, as before
        ps.check_append(header(pbatch(1, 0, 1)))
    assert code(e) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(ProducerStateError) as e:
        ps.check_append(header(pbatch(3, 0, 0)))
    assert code(e) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert ps.check_append(header(pbatch(1, 0, 7))) is None
    log.close()


def test_a_restart_reads_back_batches_across_a_roll(tmp_path):
    d = tmp_path / "t-0"
    log = open_log(d, segment_bytes=400)
    offsets = [log.append(pbatch(1, 0, i, value=b"x" * 40)).base_offset for i in range(9)]
    assert len(log.segments) > 2
    log.close()
    log = open_log(d, segment_bytes=400)
    ps = log.producer_state
    for i in range(4, 9):
        assert ps.check_append(header(pbatch(1, 0, i, value=b"x" * 40))).first_offset == offsets[i]
    log.close()


def test_snapshots_on_roll_and_replay_after_a_crash(tmp_path):
    d = tmp_path / "t-0"
    log = open_log(d, segment_bytes=400)
    offsets = []
    for i in range(12):
        offsets.append(log.append(pbatch(1, 0, i, value=b"x" * 40)).base_offset)
    assert len(log.segments) > 2
    snaps = sorted(n for n in os.listdir(d) if n.endswith(".snapshot"))
    assert snaps and snaps[-1] == f"{log.segments[-1].base_offset:020d}.snapshot"
    log.close_without_flush()                            # SIGKILL: no shutdown snapshot
    log = open_log(d, segment_bytes=400, clean=False)
    ps = log.producer_state
    # every one of the last five batches is known again (snapshot + replay of the tail)
    for i in range(7, 12):
        assert ps.check_append(header(pbatch(1, 0, i, value=b"x" * 40))).first_offset == offsets[i]
    assert ps.check_append(header(pbatch(1, 0, 12))) is None
    log.close()


def test_a_roll_forgets_no_producer_the_expiry_sweep_did_not(tmp_path):
    """Kafka's roll takes a snapshot of every producer (``UnifiedLog.roll``: the map end
    offset, then ``takeSnapshot``); idle ones go only at the producer.id.expiration.ms sweep.
    Producer 1's one batch carries a CreateTime already past the expiration when producer 2's
    batches roll the segment: a retry of it is still a duplicate, the roll's snapshot lists
    it, and a crash then reads it back (the restarted node's expiration is the default day)."""
    d = tmp_path / "t-0"
    log = open_log(d, segment_bytes=400)
    log.producer_state.expiration_ms = 1_000
    old = pbatch(1, 0, 0, 2, ts=T0 - 5_000, value=b"a" * 40)
    first = log.append(old, now_ms=T0)
    seq = 0
    while len(log.segments) == 1:
        log.append(pbatch(2, 0, seq, value=b"x" * 40), now_ms=T0)
        seq += 1
    assert log.producer_state.check_append(header(old)).first_offset == first.base_offset
    snap = d / f"{log.segments[-1].base_offset:020d}.snapshot"
    assert {e.producer_id for e in ProducerStateManager.decode_snapshot(snap.read_bytes())} == {1, 2}
    log.close_without_flush()                            # SIGKILL after the roll
    log = open_log(d, segment_bytes=400, clean=False)
    assert log.producer_state.check_append(header(old)).first_offset == first.base_offset
    # the sweep, with the short expiration, is what forgets it
    log.producer_state.expiration_ms = 1_000
    assert log.producer_state.remove_expired(T0) == 1
    assert log.producer_state.entry(1) is None and log.producer_state.entry(2) is not None
    log.close()


def test_crash_without_any_snapshot_replays_the_whole_log(tmp_path):
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(pbatch(4, 1, 0, 3))
    log.append(pbatch(5, 0, 0, txn=True))
    log.close_without_flush()
    log = open_log(d, clean=False)
    assert log.producer_state.check_append(header(pbatch(4, 1, 0, 3))).last_offset == 2
    assert log.producer_state.first_unstable_offset() == 3
    assert log.last_stable_offset == 3
    log.close()


def test_aborted_index_written_on_abort_and_rebuilt_by_recovery(tmp_path):
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append = _append_and_commit(log)
    log.append(pbatch(1, 0, 0, 2, txn=True, value=b"a"))     # 0-1 aborted below
    log.append(pbatch(2, 0, 0, 1, txn=True, value=b"c"))     # 2 committed below
    log.append(pbatch(1, 0, 2, 1, txn=True, value=b"a"))     # 3
    log.append(pbatch(3, 0, 0, 1, value=b"plain"))           # 4
    assert log.last_stable_offset == 0
    log.append(marker(1, 0, commit=False))                   # 5
    assert log.last_stable_offset == 2
    log.append(marker(2, 0, commit=True))                    # 6
    assert log.last_stable_offset == log.log_end_offset == 7
    entries = log.collect_aborted_transactions(0, 7)
    assert [tuple(e) for e in entries] == [(1, 0, 5, 2)]
    assert values(log, read_committed=True) == [b"c0", b"plain0"]
    assert len(values(log)) == 5
    txnindex = d / "00000000000000000000.txnindex"
    assert txnindex.stat().st_size == 34
    log.close_without_flush()
    txnindex.unlink()                                        # recovery rebuilds it
    log = open_log(d, clean=False)
    assert [tuple(e) for e in log.collect_aborted_transactions(0, 7)] == [(1, 0, 5, 2)]
    assert values(log, read_committed=True) == [b"c0", b"plain0"]
    log.close()


def test_truncation_drops_index_entries_and_reloads_state(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(pbatch(1, 0, 0, txn=True))     # 0
    log.append(marker(1, 0, commit=False))    # 1
    log.append(pbatch(1, 0, 1, txn=True))     # 2
    log.truncate_to(1)
    assert log.collect_aborted_transactions(0, 10) == []
    assert log.producer_state.first_unstable_offset() == 0
    assert log.producer_state.check_append(header(pbatch(1, 0, 0, txn=True))) is not None
    log.close()


def test_compaction_keeps_the_txn_index(tmp_path):
    from kbroker.log.cleaner import clean
    d = tmp_path / "t-0"
    log = open_log(d, segment_bytes=300, **{"cleanup.policy": "compact",
                                             "min.cleanable.dirty.ratio": "0.01"})
    log.append(pbatch(1, 0, 0, txn=True, key=b"k", value=b"a" * 30))
    log.append(marker(1, 0, commit=False))
    for i in range(6):
        log.append(rb.build_batch([(b"k%d" % (i % 2), b"v" * 60, (), T0)]))
    before = list(log.segments[0].txn_index.entries())
    assert len(before) == 1
    log.high_watermark = log.log_end_offset
    assert clean(log, T0) is not None
    assert log.segments[0].txn_index.entries() == before
    assert b"a" * 30 + b"0" not in values(log)
    log.close()
    log = open_log(d, segment_bytes=300, **{"cleanup.policy": "compact"})
    assert [e.producer_id for e in log.collect_aborted_transactions(0, 100)] == [1]
    log.close()


def test_memory_traced_per_idempotent_producer_is_bounded():
    """Issue 32 (the 1,000 idempotent producers row): what one producer's state costs in a
    partition, one batch each, traced by tracemalloc: under 512 bytes (about 250 now; the
    dict and 5-slot deque of before took about 1,000)."""
    import gc
    import tracemalloc
    ps = ProducerStateManager(None)
    n = 500
    headers = [header(pbatch(10_000 + i, 0, 0))._replace(base_offset=i) for i in range(n)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for h in headers:
            ps.append(h)
        gc.collect()
        per_producer = (tracemalloc.get_traced_memory()[0] - before) / n
    finally:
        tracemalloc.stop()
    assert len(ps.producers) == n and all(len(e.batches) == 1 for e in ps.producers.values())
    assert per_producer < 512, f"{per_producer:.0f} bytes per producer"
    # and the cache still keeps the last five, oldest first
    for seq in range(1, 7):
        ps.append(header(pbatch(10_000, 0, seq))._replace(base_offset=n + seq))
    assert [b.last_seq for b in ps.entry(10_000).batches] == [2, 3, 4, 5, 6]
