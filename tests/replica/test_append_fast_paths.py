"""The shortcuts of the produce hot path keep Kafka's answers (issue 32, the Java producer
at 8 partitions): an idempotent batch that follows the producer's last one skips the
duplicate scan, acks=all's answer is taken at the append, the CreateTime window is
read once per topic configuration, and the batch header parsed here is the one the log
checks, records in the producer state and keeps for rolls and indexes. Each test drives
``ReplicaManager.append`` on real log files and checks what the slow path answered before."""
from __future__ import annotations

import pytest

from kbroker.log.producer_state import INT32_MAX
from kbroker.replica import ReplicaError
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode

from .conftest import T0, batch, decode_region


def idem(pid: int, epoch: int, seq: int, n: int = 3, **kw) -> bytes:
    return batch(*(b"v%d" % i for i in range(n)), producer_id=pid, producer_epoch=epoch,
                 base_sequence=seq, **kw)


def code_of(excinfo) -> int:
    return excinfo.value.error_code


def test_in_sequence_batches_then_retries_of_each_cached_batch(replicas, cluster):
    cluster.create("t", 1)
    firsts = [replicas.append("t", 0, idem(7, 0, 3 * i), required_acks=-1).base_offset
              for i in range(6)]
    assert firsts == [0, 3, 6, 9, 12, 15]
    part = replicas.get_partition("t", 0)
    assert part.log_end_offset == 18
    # retries of the last five batches: their first offsets, nothing stored again
    for i in range(1, 6):
        r = replicas.append("t", 0, idem(7, 0, 3 * i), required_acks=-1)
        assert (r.base_offset, r.last_offset) == (3 * i, 3 * i + 2)
    assert part.log_end_offset == 18 and replicas.stats["duplicates"] == 5
    # the first batch left the cache: its retry is a gap now, as is a skipped sequence
    for seq in (0, 19):
        with pytest.raises(ReplicaError) as e:
            replicas.append("t", 0, idem(7, 0, seq), required_acks=-1)
        assert code_of(e) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert replicas.append("t", 0, idem(7, 0, 18), required_acks=-1).base_offset == 18


def test_a_batch_that_overlaps_the_last_one_is_not_taken_for_it(replicas, cluster):
    """Same first sequence as the cached batch, a different last one: neither a duplicate
    nor in sequence."""
    cluster.create("t", 1)
    replicas.append("t", 0, idem(8, 0, 0, n=4))
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, idem(8, 0, 0, n=2))
    assert code_of(e) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_sequences_wrap_and_new_epochs_start_over(replicas, cluster):
    cluster.create("t", 1)
    replicas.append("t", 0, idem(9, 0, INT32_MAX - 1, n=2))
    r = replicas.append("t", 0, idem(9, 0, 0))        # follows INT32_MAX
    assert r.base_offset == 2
    assert replicas.append("t", 0, idem(9, 0, 0)).base_offset == 2     # its retry
    with pytest.raises(ReplicaError) as e:              # a gap after the wrap
        replicas.append("t", 0, idem(9, 0, 5))
    assert code_of(e) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert replicas.append("t", 0, idem(9, 1, 0)).base_offset == 5     # epoch bump at 0
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, idem(9, 0, 3))
    assert code_of(e) == ErrorCode.INVALID_PRODUCER_EPOCH
    # the stored batches carry their sequences as sent
    data = replicas.get_partition("t", 0).log.read(0, 1 << 20).read_bytes()
    assert [(h.producer_epoch, h.base_sequence) for _, h in rec.iter_batches(data)] == \
        [(0, INT32_MAX - 1), (0, 0), (1, 0)]


def test_a_plain_batch_in_sequence_inside_an_open_transaction_is_refused(replicas, cluster):
    cluster.create("t", 1)
    replicas.txn_verifier = lambda pid, epoch, topic, index: ErrorCode.NONE   # in the txn
    replicas.append("t", 0, idem(11, 0, 0, is_transactional=True), required_acks=-1)
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, idem(11, 0, 3), required_acks=-1)
    assert code_of(e) == ErrorCode.INVALID_TXN_STATE
    assert replicas.append("t", 0, idem(11, 0, 3, is_transactional=True),
                           required_acks=-1).base_offset == 3


def test_acks_all_answer_taken_at_the_append(replicas, cluster):
    cluster.create("t", 1)
    r = replicas.append("t", 0, batch(b"a"), required_acks=-1)
    assert r.replicated == ErrorCode.NONE == replicas.check_replicated("t", 0, r.last_offset + 1)
    assert replicas.append("t", 0, batch(b"b"), required_acks=1).replicated is None
    # a duplicate is answered without it (the produce handler asks check_replicated)
    replicas.append("t", 0, idem(3, 0, 0), required_acks=-1)
    assert replicas.append("t", 0, idem(3, 0, 0), required_acks=-1).replicated is None


def test_a_new_timestamp_window_applies_to_the_next_batch(replicas, cluster):
    cluster.create("t", 1)
    ahead = T0 + 600_000        # ten minutes ahead of the broker's clock
    assert replicas.append("t", 0, batch(b"a", ts=ahead)).base_offset == 0
    cluster.set_configs("t", {"message.timestamp.after.max.ms": "60000"})
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"b", ts=ahead))
    assert code_of(e) == ErrorCode.INVALID_TIMESTAMP
    cluster.set_configs("t", {})
    assert replicas.append("t", 0, batch(b"c", ts=ahead)).base_offset == 1


def test_two_batches_in_one_partition_are_still_refused(replicas, cluster):
    cluster.create("t", 1)
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, idem(4, 0, 0) + idem(4, 0, 3))
    assert code_of(e) == ErrorCode.INVALID_RECORD and e.value.log_start_offset == -1
    with pytest.raises(ReplicaError) as e:        # a batch with a stray byte after it
        replicas.append("t", 0, idem(4, 0, 0) + b"\0")
    assert code_of(e) == ErrorCode.CORRUPT_MESSAGE
    assert replicas.get_partition("t", 0).log_end_offset == 0


def test_a_transaction_through_the_one_batch_path_then_its_abort(replicas, cluster):
    """A transactional batch is recorded straight from its header; the abort marker (a
    control batch) still ends the transaction, indexes the aborted range and frees the
    last stable offset."""
    cluster.create("t", 1)
    replicas.txn_verifier = lambda pid, epoch, topic, index: ErrorCode.NONE
    replicas.append("t", 0, batch(b"before"), required_acks=-1)
    replicas.append("t", 0, idem(12, 0, 0, is_transactional=True), required_acks=-1)
    replicas.append("t", 0, idem(12, 0, 3, is_transactional=True), required_acks=-1)
    part = replicas.get_partition("t", 0)
    assert part.last_stable_offset == 1 and part.high_watermark == 7
    marker = replicas.write_txn_marker("t", 0, producer_id=12, producer_epoch=0, commit=False,
                                       coordinator_epoch=0)
    assert marker == 7 and part.last_stable_offset == 8
    aborted = part.log.collect_aborted_transactions(0, 8)
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in aborted] == [(12, 1, 7)]
    # the producer goes on after the marker: sequences continue, the epoch is kept
    assert replicas.append("t", 0, idem(12, 0, 6), required_acks=-1).base_offset == 8


def test_rolls_and_index_entries_on_the_produce_path(replicas, cluster):
    """Small ``segment.bytes`` and ``index.interval.bytes``: the log rolls and indexes
    as a rebuild from its files does, and every record reads back."""
    cluster.create("t", 1, {"segment.bytes": "2048", "index.interval.bytes": "100"})
    values = [b"%03d" % i + b"x" * (i % 50) for i in range(200)]
    for i in range(0, 200, 4):
        replicas.append("t", 0, batch(*values[i:i + 4]))
    log = replicas.get_partition("t", 0).log
    assert len(log.segments) > 5
    for seg in log.segments[:-1]:
        offsets = seg.offset_index.entries()
        assert len(offsets) > 1
        seg.rebuild_indexes()
        assert seg.offset_index.entries() == offsets
    end = 0
    read: list = []
    while end < log.log_end_offset:
        region = log.read(end, 1 << 20)
        recs = decode_region(region)
        read += [r.value for r in recs]
        end = recs[-1].offset + 1
    assert read == values
