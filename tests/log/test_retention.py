"""Retention by time and size, DeleteRecords, and the high-watermark bound."""
from __future__ import annotations

import pytest

from kbroker.log import OffsetOutOfRange, PartitionLog, PolicyViolation

from .helpers import make_batch, small_config, stored_batches

NOW = 10_000_000


def build(tmp_path, cfg, n=60, ts_step=1000):
    log = PartitionLog(tmp_path / "t-0", "t", 0, cfg, now_ms=NOW)
    for i in range(n):
        log.append(make_batch([(b"k%d" % i, b"v" * 200, NOW + i * ts_step)]), now_ms=NOW)
    log.high_watermark = log.log_end_offset
    return log


def test_retention_ms_deletes_expired_head_segments(tmp_path):
    cfg = small_config(segment_bytes=1000, retention_ms=20_000)
    log = build(tmp_path, cfg)
    nseg = len(log.segments)
    now = NOW + 40_000
    deleted = log.maybe_run_retention(now)
    assert 0 < deleted < nseg
    for seg in log.segments:
        assert now - seg.max_timestamp <= 20_000 or seg is log.segments[-1]
    assert log.log_start_offset == log.segments[0].base_offset > 0
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 100)
    assert log.read(log.log_start_offset, 100) is not None
    # Everything expired: the active segment is rolled and deleted too; the log stays usable.
    log.maybe_run_retention(NOW + 10**9)
    assert log.log_start_offset == log.log_end_offset == 60 and log.size == 0
    assert log.append(make_batch([(b"k", b"v", NOW)]), now_ms=NOW).base_offset == 60


def test_retention_bytes(tmp_path):
    cfg = small_config(segment_bytes=1000, retention_bytes=3000, retention_ms=-1)
    log = build(tmp_path, cfg)
    log.maybe_run_retention(NOW)
    assert log.size <= 3000 + 1000
    assert log.size - log.segments[0].size < 3000
    assert stored_batches(log)[0][0].base_offset == log.log_start_offset


def test_retention_respects_high_watermark_and_policy(tmp_path):
    cfg = small_config(segment_bytes=1000, retention_bytes=0, retention_ms=-1)
    log = build(tmp_path, cfg)
    log.high_watermark = 3
    log.maybe_run_retention(NOW)
    assert log.segments[0].base_offset <= 3 and log.log_start_offset <= 3
    compact = build(tmp_path / "c", small_config(segment_bytes=1000, retention_bytes=0,
                                                 cleanup_policy="compact"))
    assert compact.maybe_run_retention(NOW) == 0


def test_delete_records_before(tmp_path):
    log = build(tmp_path, small_config(segment_bytes=1000))
    nseg = len(log.segments)
    log.high_watermark = 40
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(41)
    assert log.delete_records_before(25) == 25
    assert log.log_start_offset == 25
    assert len(log.segments) < nseg and log.segments[0].base_offset <= 25
    region = log.read(25, 1)  # mid-segment start: the batch holding 25
    assert region.base_offset == 25
    with pytest.raises(OffsetOutOfRange):
        log.read(24, 1)
    assert log.delete_records_before(10) == 25  # never moves back
    with pytest.raises(PolicyViolation):
        build(tmp_path / "c", small_config(cleanup_policy="compact")).delete_records_before(1)
