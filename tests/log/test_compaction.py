"""Compaction with real keys, tombstones and transactions; crash safety of the swap."""
from __future__ import annotations

import random

import pytest

from kbroker.log import LogConfig, LogManager, PartitionLog
from kbroker.log.cleaner import SimulatedCrash, clean, cleanable_range
from kbroker.wire import records as rb

from .helpers import make_batch, records_of, stored_batches

NOW = 50_000_000


def compact_config(**kw):
    base = dict(segment_bytes=2048, index_interval_bytes=128, cleanup_policy="compact",
                delete_retention_ms=10_000, min_cleanable_dirty_ratio=0.0, file_delete_delay_ms=0)
    base.update(kw)
    return LogConfig(**base)


def write_keys(log, seed, n=600, nkeys=40, tombstone_rate=0.1, ts=NOW):
    """Append random key updates; returns {offset: (key, value)} of everything written."""
    rng = random.Random(seed)
    written = {}
    i = 0
    while i < n:
        recs = []
        for _ in range(rng.randint(1, 4)):
            key = b"key-%d" % rng.randrange(nkeys)
            value = None if rng.random() < tombstone_rate else b"value-%d" % i
            recs.append((key, value, ts))
            i += 1
        info = log.append(make_batch(recs), now_ms=ts)
        for off, (k, v, _) in zip(range(info.base_offset, info.last_offset + 1), recs):
            written[off] = (k, v)
    log.roll(now_ms=ts)  # close the last segment so everything is cleanable
    log.high_watermark = log.log_end_offset
    return written


def latest(written):
    out = {}
    for off in sorted(written):
        k, v = written[off]
        out[k] = (off, v)
    return out


def check_compacted(log, written, *, tombstones_dropped):
    got = records_of(log)
    want = latest(written)
    # Offsets unchanged: each surviving record is the original one at that offset.
    for off, k, v in got:
        assert written[off] == (k, v)
    survivors = {k: (off, v) for off, k, v in got}
    assert len(survivors) == len(got), "one record per key after a full clean"
    for k, (off, v) in want.items():
        if v is None and tombstones_dropped:
            assert k not in survivors
        else:
            assert survivors[k] == (off, v)
    return got


@pytest.mark.parametrize("seed", range(3))
def test_compaction_keeps_latest_per_key_with_offsets(tmp_path, seed):
    log = PartitionLog(tmp_path / "t-0", "t", 0, compact_config(), now_ms=NOW)
    written = write_keys(log, seed)
    size_before, leo = log.size, log.log_end_offset
    res = clean(log, NOW)
    assert res is not None and res.records_removed > 0
    assert log.size < size_before and log.log_end_offset == leo
    check_compacted(log, written, tombstones_dropped=False)
    # Reads from the start work at every offset that still exists, and in the gaps.
    for off in range(0, leo, 7):
        region = log.read(off, 1)
        if region is not None:
            h = rb.parse_header(region.read_bytes())
            assert h.last_offset >= off
    # Once delete.retention.ms has passed the tombstones go as well.
    log.first_dirty_offset = 0  # make the whole log due again
    clean(log, NOW + 10_000)
    check_compacted(log, written, tombstones_dropped=True)
    # A clean reopen (and an unclean one, which re-validates the gapped segments) agree.
    got = records_of(log)
    first_dirty = log.first_dirty_offset
    log.close()
    log2 = PartitionLog(tmp_path / "t-0", "t", 0, compact_config(), now_ms=NOW,
                        first_dirty_offset=first_dirty, clean_shutdown=False)
    assert records_of(log2) == got and log2.log_end_offset == leo


def test_dirty_ratio_and_compaction_lag(tmp_path):
    log = PartitionLog(tmp_path / "t-0", "t", 0, compact_config(min_cleanable_dirty_ratio=0.5),
                       now_ms=NOW)
    write_keys(log, 1, n=300)
    assert cleanable_range(log, NOW).dirty_ratio == 1.0
    assert clean(log, NOW) is not None
    assert clean(log, NOW) is None  # nothing dirty
    write_keys(log, 2, n=20)  # a little dirt on a big clean part: below the ratio
    assert cleanable_range(log, NOW) is None
    lagged = PartitionLog(tmp_path / "l-0", "l", 0,
                          compact_config(min_compaction_lag_ms=60_000), now_ms=NOW)
    write_keys(lagged, 3, n=200)
    assert cleanable_range(lagged, NOW) is None
    assert cleanable_range(lagged, NOW + 60_001) is not None
    # max.compaction.lag.ms forces a pass regardless of the ratio.
    forced = PartitionLog(tmp_path / "f-0", "f", 0,
                          compact_config(min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=1000),
                          now_ms=NOW)
    write_keys(forced, 4, n=200)
    forced.first_dirty_offset = forced.segments[1].base_offset
    assert cleanable_range(forced, NOW) is None
    assert cleanable_range(forced, NOW + 1001).forced


def test_transactions_markers_kept_aborted_dropped(tmp_path):
    log = PartitionLog(tmp_path / "t-0", "t", 0, compact_config(), now_ms=NOW)
    def txn(pid, recs, commit):
        log.append(make_batch(recs, producer_id=pid, producer_epoch=0, base_sequence=0,
                              is_transactional=True), now_ms=NOW)
        log.append(rb.build_control_batch(commit=commit, producer_id=pid, producer_epoch=0,
                                          timestamp=NOW), now_ms=NOW)
    log.append(make_batch([(b"a", b"a0", NOW), (b"b", b"b0", NOW)]), now_ms=NOW)
    txn(7, [(b"a", b"a1", NOW)], commit=True)     # committed: supersedes a0
    txn(8, [(b"b", b"b1", NOW)], commit=False)    # aborted: dropped, b0 survives
    log.append(make_batch([(b"c", b"c0", NOW)]), now_ms=NOW)
    for i in range(30):  # padding so the above sits in closed segments
        log.append(make_batch([(b"pad%d" % i, b"x" * 100, NOW)]), now_ms=NOW)
    log.roll(now_ms=NOW)
    log.high_watermark = log.log_end_offset
    clean(log, NOW)
    values = {k: v for _, k, v in records_of(log)}
    assert values[b"a"] == b"a1" and values[b"b"] == b"b0" and values[b"c"] == b"c0"
    controls = [h for h, _ in stored_batches(log) if h.is_control]
    assert [h.producer_id for h in controls] == [7, 8]


def test_cleaner_stops_at_last_stable_offset(tmp_path):
    log = PartitionLog(tmp_path / "t-0", "t", 0, compact_config(), now_ms=NOW)
    write_keys(log, 5, n=300)
    log.last_stable_offset = log.segments[2].base_offset
    res = clean(log, NOW)
    assert res.first_dirty_offset <= log.segments[2].base_offset


def _manager(tmp_path):
    mgr = LogManager([tmp_path], compact_config(), lambda: NOW)
    mgr.load()
    return mgr


@pytest.mark.parametrize("crash_at", ["written", "swapped", "half_committed"])
@pytest.mark.parametrize("seed", range(2))
def test_crash_during_swap_loses_nothing(tmp_path, crash_at, seed):
    mgr = _manager(tmp_path)
    log = mgr.get_or_create("t", 0, compact_config())
    written = write_keys(log, seed, tombstone_rate=0.0)
    mgr.checkpoint()
    original = records_of(log)
    with pytest.raises(SimulatedCrash):
        clean(log, NOW, crash_at=crash_at)
    log.close_without_flush()  # the process dies: no flush, no marker
    mgr2 = _manager(tmp_path)
    log2 = mgr2.get("t", 0)
    log2.high_watermark = log2.log_end_offset
    got = records_of(log2)
    # Either old or new per segment: a subset of the original, keeping every latest value.
    assert set(got) <= set(original)
    have = {k for _, k, _ in got}
    for k, (off, v) in latest(written).items():
        assert (off, k, v) in got and k in have
    assert not [p for p in log2.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    # The next pass finishes the job.
    log2.first_dirty_offset = 0
    clean(log2, NOW)
    check_compacted(log2, written, tombstones_dropped=False)
    mgr2.shutdown()


def test_manager_runs_cleaner_on_dirtiest_log(tmp_path):
    mgr = _manager(tmp_path)
    a = mgr.get_or_create("a", 0, compact_config())
    mgr.get_or_create("plain", 0, LogConfig())
    written = write_keys(a, 9)
    res = mgr.run_cleaner(NOW)
    assert res.topic == "a" and mgr.run_cleaner(NOW) is None
    mgr.shutdown()
    mgr2 = _manager(tmp_path)
    a2 = mgr2.get("a", 0)
    assert a2.first_dirty_offset == res.first_dirty_offset  # cleaner checkpoint persisted
    check_compacted(a2, written, tombstones_dropped=False)


def test_log_cleaner_enable_false_neither_compacts_nor_applies_retention_to_compacted_logs(tmp_path):
    """Kafka 4.4's LogManager with log.cleaner.enable=false builds no cleaner, and its
    retention pass visits only logs without the compact policy: compacted logs grow."""
    mgr = LogManager([tmp_path], compact_config(), lambda: NOW, cleaner_enabled=False)
    mgr.load()
    compacted = mgr.get_or_create("c", 0, compact_config())
    both = mgr.get_or_create("cd", 0, compact_config(cleanup_policy="compact,delete",
                                                     retention_ms=1000))
    plain = mgr.get_or_create("p", 0, LogConfig(segment_bytes=2048, retention_ms=1000,
                                                file_delete_delay_ms=0))
    for log in (compacted, both, plain):
        write_keys(log, 3, ts=NOW - 10_000)          # past retention.ms
    segments = {log.topic: len(log.segments) for log in (compacted, both, plain)}
    before = records_of(compacted)
    assert mgr.run_cleaner(NOW) is None
    assert mgr.run_retention(NOW) > 0
    assert records_of(compacted) == before                   # nothing compacted
    assert len(compacted.segments) == segments["c"]
    assert len(both.segments) == segments["cd"]              # compact,delete: no retention
    assert len(plain.segments) < segments["p"]               # delete: retention as usual
    # the same logs with the cleaner on: compacted, and compact,delete trimmed by retention
    mgr.cleaner_enabled = True
    assert mgr.run_cleaner(NOW) is not None
    mgr.run_retention(NOW)
    assert len(both.segments) < segments["cd"]
    mgr.shutdown()
