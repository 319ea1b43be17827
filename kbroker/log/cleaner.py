"""Log compaction (``cleanup.policy=compact``): keep the latest record per key.

One pass over one partition (Kafka's ``LogCleaner.doClean``, simplified):

1. **Range.**  Closed segments from the log start up to the *first uncleanable
   offset* = min(active segment base, last stable offset, first segment younger than
   ``min.compaction.lag.ms``).  The *dirty* part starts at the cleaner checkpoint
   (``first_dirty_offset``).  The pass runs only when dirty bytes / (clean + dirty)
   bytes reaches ``min.cleanable.dirty.ratio``, or when the oldest dirty batch is
   older than ``max.compaction.lag.ms``.
2. **Transactions.**  A header pass over the range pairs each transactional batch with
   its producer's next control batch: committed, aborted or (no marker yet) open.
   Aborted batches are dropped; open ones are kept whole and never supersede anything.
   Control batches (markers) are always kept -- a simplification of Kafka, which
   removes a marker once its transaction's data is gone and the delete horizon passed.
   A cleaned segment keeps its ``.txnindex`` entries.
3. **Map.**  key -> offset of its latest record in the dirty part (committed or
   non-transactional data only).  At most ``max_map_entries`` keys per pass; the dirty
   part is cut at a segment boundary when the map fills.
4. **Rewrite** every segment of the range into ``<base>.log.cleaned`` (+ indexes): a
   record stays if no later offset of its key is in the map; a tombstone (null value)
   also goes once ``timestamp + delete.retention.ms <= now``.  Batches that lose no
   record are copied byte for byte; others are rebuilt with the same base offset,
   producer fields and compression, and every kept record keeps its offset.
5. **Swap.**  Output is fsynced, renamed ``.cleaned`` -> ``.swap`` (indexes first,
   log last: a ``.log.swap`` means "complete"), the new cleaner checkpoint is made
   durable, then each ``.swap`` replaces its original (indexes first, log last).  A
   segment's output covers exactly its input's offset range, so after a crash at any
   step each segment is either old or new, never lost; ``PartitionLog`` finishes or
   discards leftovers on open.  Old descriptors stay open ``file.delete.delay.ms``
   for reads in flight.

Tombstone timing deviates from Kafka (which stamps a delete horizon into the batch,
KIP-534): here the record's own timestamp plus ``delete.retention.ms`` decides.
Segments are not merged after cleaning (Kafka groups small ones); an emptied segment
other than the first is removed.
"""
from __future__ import annotations

import bisect
import os
from typing import NamedTuple

from kbroker.wire import records as rb
from kbroker.wire.errors import InvalidRecord

from .config import LONG_MAX
from .partition import PartitionLog
from .segment import LogSegment


class SimulatedCrash(Exception):
    """Raised by the ``crash_at`` fault-injection points used in tests."""


class CleanResult(NamedTuple):
    topic: str
    partition: int
    segments: int
    bytes_read: int
    bytes_written: int
    records_removed: int
    first_dirty_offset: int
    dirty_ratio: float


class CleanableRange(NamedTuple):
    first_dirty_index: int   # index of the first dirty segment
    end_index: int           # segments[:end_index] are cleanable
    dirty_ratio: float
    forced: bool             # max.compaction.lag.ms made it due


def cleanable_range(log: PartitionLog, now_ms: int) -> CleanableRange | None:
    """Which segments a clean would touch, or None when nothing is due."""
    cfg = log.config
    if not cfg.compact:
        return None
    segs = log.segments
    uncleanable = min(segs[-1].base_offset, log.last_stable_offset)
    end = 0
    for i in range(len(segs) - 1):
        if segs[i + 1].base_offset > uncleanable:
            break
        if cfg.min_compaction_lag_ms > 0 and segs[i].max_timestamp > now_ms - cfg.min_compaction_lag_ms:
            break
        end = i + 1
    first_dirty = max(log.first_dirty_offset, log.log_start_offset)
    bases = [s.base_offset for s in segs]
    d = max(0, bisect.bisect_right(bases, first_dirty) - 1)
    if d < len(segs) and first_dirty >= segs[d].next_offset and segs[d].size:
        d += 1  # the segment holding first_dirty is entirely clean
    if d >= end:
        return None
    clean_bytes = sum(s.size for s in segs[:d])
    dirty_bytes = sum(s.size for s in segs[d:end])
    total = clean_bytes + dirty_bytes
    ratio = dirty_bytes / total if total else 0.0
    forced = False
    if cfg.max_compaction_lag_ms < LONG_MAX:
        first_ts = segs[d].first_batch_timestamp
        forced = first_ts is not None and first_ts >= 0 and now_ms - first_ts > cfg.max_compaction_lag_ms
    if ratio < cfg.min_cleanable_dirty_ratio and not forced:
        return None
    return CleanableRange(d, end, ratio, forced)


def _transaction_fates(segments: list[LogSegment]) -> dict[int, bool | None]:
    """base offset of each transactional data batch -> committed / aborted / open."""
    fates: dict[int, bool | None] = {}
    open_batches: dict[int, list[int]] = {}
    for seg in segments:
        for pos, h, _ in seg.batches(0):
            if not h.is_transactional:
                continue
            if h.is_control:
                recs = rb.decode_records(seg.read_batch(pos, h), 0, h)
                if not recs:
                    continue
                try:
                    commit, _ = rb.parse_control_record(recs[0])
                except InvalidRecord:
                    continue  # not a transaction marker
                for base in open_batches.pop(h.producer_id, ()):
                    fates[base] = commit
            else:
                open_batches.setdefault(h.producer_id, []).append(h.base_offset)
                fates[h.base_offset] = None
    return fates


def _build_map(segments, fates, max_entries) -> tuple[dict[bytes, int], int]:
    """key -> latest offset over ``segments``; returns the map and segments covered."""
    latest: dict[bytes, int] = {}
    covered = 0
    for seg in segments:
        for _, h, data in seg.batches(0, want_data=True):
            if h.is_control or (h.is_transactional and fates.get(h.base_offset) is not True):
                continue
            for rec in rb.decode_records(data, 0, h):
                if rec.key is not None:
                    latest[rec.key] = rec.offset
        covered += 1
        if len(latest) >= max_entries:
            break
    return latest, covered


def _filter_segment(log: PartitionLog, seg: LogSegment, latest, fates, now_ms: int,
                    stats: dict) -> LogSegment:
    out = LogSegment(seg.dir, seg.base_offset, index_interval_bytes=log.config.index_interval_bytes,
                     max_index_bytes=log.config.segment_index_bytes, created_ms=seg.created_ms,
                     suffix=".cleaned", files=log.files)
    if out.size:  # stale output of an earlier, interrupted pass
        out.start_afresh()
    # aborted-transaction entries travel with the segment (markers are always kept)
    out.txn_index.replace_with(seg.txn_index.entries())
    horizon = now_ms - log.config.delete_retention_ms
    for _, h, data in seg.batches(0, want_data=True):
        stats["read"] += h.size
        if h.is_control:
            out.append(data, [h])
            continue
        if h.is_transactional:
            fate = fates.get(h.base_offset)
            if fate is False:
                stats["removed"] += h.records_count
                continue
            if fate is None:
                out.append(data, [h])
                continue
        recs = rb.decode_records(data, 0, h)
        keep = []
        for rec in recs:
            if rec.key is not None:
                if latest.get(rec.key, -1) > rec.offset:
                    continue
                if rec.value is None and rec.timestamp <= horizon:
                    continue
            keep.append(rec)
        stats["removed"] += len(recs) - len(keep)
        if len(keep) == len(recs):
            out.append(data, [h])
        elif keep:
            buf = bytearray(rb.build_batch(
                [(r.key, r.value, r.headers, r.timestamp) for r in keep],
                base_offset=h.base_offset, compression=h.compression,
                timestamp_type=h.timestamp_type, producer_id=h.producer_id,
                producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                is_transactional=h.is_transactional,
                partition_leader_epoch=h.partition_leader_epoch,
                offset_deltas=[r.offset - h.base_offset for r in keep],
                last_offset_delta=h.last_offset_delta))
            if h.timestamp_type == rb.TIMESTAMP_LOG_APPEND_TIME:
                rb.set_max_timestamp(buf, 0, h.max_timestamp, log_append_time=True)
            out.append(buf, [rb.parse_header(buf, 0)])
    out.on_become_inactive()
    out.flush()
    stats["written"] += out.size
    return out


def clean(log: PartitionLog, now_ms: int, *, max_map_entries: int = 1_000_000,
          crash_at: str | None = None) -> CleanResult | None:
    """Run one compaction pass over ``log`` if one is due; None otherwise.

    ``crash_at`` ("written", "swapped", "half_committed") stops the pass with
    :class:`SimulatedCrash` at that point, leaving files as a crash would.
    """
    rng = cleanable_range(log, now_ms)
    if rng is None:
        return None
    segs = log.segments[:rng.end_index]
    fates = _transaction_fates(segs)
    latest, covered = _build_map(segs[rng.first_dirty_index:], fates, max_map_entries)
    end = rng.first_dirty_index + covered
    segs = segs[:end]
    new_first_dirty = log.segments[end].base_offset
    stats = {"read": 0, "written": 0, "removed": 0}
    outputs = [_filter_segment(log, seg, latest, fates, now_ms, stats) for seg in segs]
    if crash_at == "written":
        raise SimulatedCrash(crash_at)
    for out in outputs:
        out.change_suffix(".swap")
    log._dir_dirty = True
    log._fsync_dir()
    log.first_dirty_offset = new_first_dirty
    if log.checkpoint_listener is not None:
        log.checkpoint_listener(log)  # durable before any original is replaced
    if crash_at == "swapped":
        raise SimulatedCrash(crash_at)
    _commit(log, segs, outputs, now_ms, crash_at)
    return CleanResult(log.topic, log.partition, len(segs), stats["read"], stats["written"],
                       stats["removed"], new_first_dirty, rng.dirty_ratio)


def _commit(log: PartitionLog, olds, outputs, now_ms: int, crash_at: str | None) -> None:
    replaced: dict[int, LogSegment | None] = {}
    for n, (old, out) in enumerate(zip(olds, outputs)):
        if crash_at == "half_committed" and n == len(olds) // 2:
            raise SimulatedCrash(crash_at)
        if out.size == 0 and old is not log.segments[0]:
            out.delete_files()
            old.change_suffix(".deleted")
            log._retire(old, now_ms)
            log._pending_deletes[-1] = (log._pending_deletes[-1][0], old, True)
            replaced[old.base_offset] = None
            continue
        out.change_suffix("")  # indexes first, log last: replaces the originals
        out.bytes_since_last_index_entry = 0
        log._retire(old, now_ms)
        replaced[old.base_offset] = out
    keep = []
    for seg in log.segments:
        if seg.base_offset in replaced and seg in olds:
            new = replaced[seg.base_offset]
            if new is not None:
                keep.append(new)
        else:
            keep.append(seg)
    log.segments[:] = keep
    log._bases[:] = [s.base_offset for s in keep]
    log._dir_dirty = True
    log._fsync_dir()
