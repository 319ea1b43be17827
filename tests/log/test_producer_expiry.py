"""Producer-id expiration on real partition logs (kbroker.log.producer_expiry) and the
pure parts of transactional-id expiration (kbroker.txn.expiry): which logs a sweep visits,
what it forgets and keeps, what a reopened log loads, how tombstones are batched."""
from __future__ import annotations

from kbroker.log import LogConfig, PartitionLog
from kbroker.log.producer_expiry import ProducerExpiry
from kbroker.txn import records as trec
from kbroker.txn.expiry import expired_by_partition, should_expire, tombstone_batches
from kbroker.txn.metadata import TransactionMetadata, TxnState
from kbroker.wire import records as rb
from tests.txn.helpers import T0, marker, pbatch

EXP = 60_000


def open_log(path, expiry, now, *, clean=True, name="t"):
    return PartitionLog(path / f"{name}-0", name, 0, LogConfig(), clock=lambda: now,
                        clean_shutdown=clean, producer_expiry=expiry)


def test_a_sweep_visits_only_logs_with_producers_and_keeps_open_transactions(tmp_path):
    expiry = ProducerExpiry(EXP)
    quiet = open_log(tmp_path, expiry, T0, name="quiet")
    quiet.append(rb.build_batch([(None, b"plain", (), T0)]), now_ms=T0)   # no producer id
    busy = open_log(tmp_path, expiry, T0, name="busy")
    assert expiry.logs == set()
    # one setting for every log, watched or not (a dynamic change reaches them all)
    expiry.expiration_ms = 5
    assert quiet.producer_state.expiration_ms == busy.producer_state.expiration_ms == 5
    expiry.expiration_ms = EXP
    busy.append(pbatch(1, 0, 0, ts=T0), now_ms=T0)                     # idle from T0
    busy.append(pbatch(2, 0, 0, txn=True, ts=T0), now_ms=T0)           # open transaction
    busy.append(pbatch(3, 0, 0, ts=T0 + EXP), now_ms=T0)               # recent
    assert expiry.logs == {busy}
    assert expiry.producer_count() == 3
    # one millisecond short of the expiration: nothing goes
    assert expiry.sweep(T0 + EXP - 1) == 0
    assert expiry.sweep(T0 + EXP) == 1
    assert sorted(busy.producer_state.producers) == [2, 3]
    assert expiry.stats["logs_visited"] == 2        # busy, twice; quiet never
    # the transaction ends: its marker is the producer's newest timestamp
    busy.append(marker(2, 0, True, ts=T0 + EXP), now_ms=T0 + EXP)
    assert expiry.sweep(T0 + 2 * EXP) == 2
    assert busy.producer_state.producers == {} and expiry.logs == set()
    # a new producer brings the log back; a closed log leaves without a visit
    busy.append(pbatch(4, 0, 0, ts=T0), now_ms=T0)
    assert expiry.logs == {busy}
    busy.close()
    quiet.close()
    assert expiry.sweep(T0 + 10 * EXP) == 0 and expiry.logs == set()


def test_an_unused_verification_guard_expires_like_a_producer(tmp_path):
    expiry = ProducerExpiry(EXP)
    log = open_log(tmp_path, expiry, T0)
    ps = log.producer_state
    guard = ps.start_verification(7, 0, T0)        # verified, then never written
    assert expiry.logs == {log}
    assert expiry.sweep(T0 + EXP - 1) == 0 and ps.verification_guard(7) is guard
    expiry.sweep(T0 + EXP)
    assert ps.verification_guard(7) is None and expiry.logs == set()
    log.close()


def test_a_reopened_log_forgets_what_had_expired_but_not_an_open_transaction(tmp_path):
    expiry = ProducerExpiry(EXP)
    log = open_log(tmp_path, expiry, T0)
    log.append(pbatch(1, 0, 0, ts=T0), now_ms=T0)
    log.roll(now_ms=T0)                           # snapshot at 1 holds producer 1
    log.append(pbatch(2, 0, 0, ts=T0), now_ms=T0)      # replayed after the snapshot
    log.append(pbatch(3, 0, 0, txn=True, ts=T0), now_ms=T0)
    log.append(pbatch(4, 0, 0, ts=T0 + 2 * EXP), now_ms=T0)
    log.close_without_flush()                     # a crash: no snapshot at the end
    later = T0 + 2 * EXP
    again = ProducerExpiry(EXP)
    reopened = open_log(tmp_path, again, later, clean=False)
    assert sorted(reopened.producer_state.producers) == [3, 4]
    assert reopened.producer_state.first_unstable_offset() == 2
    assert again.logs == {reopened}
    reopened.close()


def _meta(tid, state, updated, partition=0, **kw):
    return TransactionMetadata(tid, 1000 + len(tid), 0, 60_000, state=state,
                               last_update_ms=updated, partition=partition, **kw)


def test_which_transactional_ids_expire():
    now, exp = T0 + 10_000, 10_000
    metas = [_meta("empty", TxnState.EMPTY, T0), _meta("commit", TxnState.COMPLETE_COMMIT, T0, 1),
             _meta("abort", TxnState.COMPLETE_ABORT, T0), _meta("recent", TxnState.EMPTY, T0 + 1),
             _meta("ongoing", TxnState.ONGOING, T0), _meta("prepare", TxnState.PREPARE_COMMIT, T0),
             _meta("elsewhere", TxnState.EMPTY, T0, 2),
             _meta("pending", TxnState.EMPTY, T0, pending=True)]
    got = expired_by_partition(metas, {0, 1}, now, exp)
    assert {p: sorted(m.transactional_id for m in ms) for p, ms in got.items()} == \
        {0: ["abort", "empty"], 1: ["commit"]}
    assert not should_expire(metas[3], now, exp) and should_expire(metas[3], now + 1, exp)


def test_tombstones_are_batched_below_the_size_limit():
    metas = [_meta(f"id-{i:03d}", TxnState.EMPTY, T0) for i in range(50)]
    batches = tombstone_batches(metas, T0, 600)
    assert len(batches) > 1
    assert [m for _, group in batches for m in group] == metas
    for data, group in batches:
        assert len(data) <= 600
        h = rb.parse_header(data, 0)
        recs = rb.decode_records(data, 0, h)
        assert [(trec.decode_key(r.key), r.value) for r in recs] == \
            [(m.transactional_id, None) for m in group]
    # one id always gets its batch, whatever the limit
    [(data, group)] = tombstone_batches(metas[:1], T0, 1)
    assert group == metas[:1]
