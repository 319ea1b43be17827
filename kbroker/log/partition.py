"""``PartitionLog``: the append-only log of one topic partition.

The partition directory ``<topic>-<partition>/`` holds an ordered run of
:class:`~kbroker.log.segment.LogSegment` files; the last one is *active* and takes
appends.  The hot path follows DESIGN rule 6: ``append`` checks batch headers and
CRC32C, patches base offset and partition leader epoch (outside the CRC; the max
timestamp only for LogAppendTime), and writes the bytes with one ``pwrite``;
``read`` returns a :class:`~kbroker.log.region.FileRegion` for ``os.sendfile``.

Offsets (Kafka's vocabulary)
* ``log_start_offset`` -- first offset a consumer may fetch; moved by retention and
  ``delete_records_before`` (DeleteRecords), never by compaction;
* ``log_end_offset`` -- offset the next appended record gets;
* ``high_watermark`` -- kept by the caller (on one node: ``= log_end_offset`` after
  each append; with replicas: the minimum log end offset of the ISR); bounds retention.
  The manager checkpoints it (``replication-offset-checkpoint``) and passes it back when
  the log is opened again;
* ``last_stable_offset`` -- the first offset of the oldest open transaction (from the
  producer state), or one set by the caller; never above the high watermark;
* ``recovery_point`` -- everything below it has been fsynced; crash recovery starts at
  the segment that holds it.

Producer state (``kbroker.log.producer_state``): every appended batch with a producer
id updates ``producer_state``; a transaction marker that ends an aborted transaction adds
an entry to its segment's ``.txnindex``.  The state is snapshotted to
``<offset>.snapshot`` when a segment rolls and on close; opening the log loads the newest
snapshot and replays the batches after it (after a crash, from the first segment being
recovered, whose ``.txnindex`` files are rebuilt on the way), so de-duplication and open
transactions survive restarts (Kafka's ``UnifiedLog.loadProducerState``).

Leader epochs (KIP-101): ``epochs`` is the partition's
:class:`~kbroker.log.epoch_cache.LeaderEpochCache` (file ``leader-epoch-checkpoint``).
``append(..., leader_epoch=e)`` and :meth:`append_as_follower` (batches copied from the
leader, offsets and epochs as the leader stored them) record where each epoch starts; a
new leader calls :meth:`assign_epoch_start` with its log end offset.  Truncation and a
moving log start keep the cache consistent; opening the log drops entries at or past the
recovered log end, re-reads the epochs of every batch crash recovery re-validates, and
rebuilds the whole cache from batch headers when the file is missing or unreadable.

Durability is Kafka's: the page cache by default; ``flush.messages`` (fsync once the
unflushed offset count reaches it, so ``1`` = fsync before every ``append`` returns)
and ``flush.ms`` (checked by :meth:`maybe_flush`, called by the manager's flush task).

Time comes from the ``now_ms`` argument or, when omitted, from the injected
``clock`` callable (DESIGN rule 8).  Errors: :mod:`kbroker.log.errors` plus the wire
layer's ``CorruptRecord``/``InvalidRecord``/``RecordTooLarge`` (``max.message.bytes``)
for bad batches; a refused append leaves the log unchanged.  A storage error (a full or
failing disk) in any public method that touches the disk is reported to the log dir
failure channel and raised as ``KafkaStorageError`` (:mod:`kbroker.log.failure`); a failed
append is undone as far as the disk allows.  Not thread-safe: one trio thread drives it.
"""
from __future__ import annotations

import bisect
import os
from pathlib import Path
from typing import Callable, NamedTuple

from kbroker.common.fileio import as_path, fsync_dir
from kbroker.log.producer_expiry import ProducerExpiry
from kbroker.log.producer_state import ProducerStateManager
from kbroker.wire import records as rb
from kbroker.wire.errors import CorruptRecord, InvalidRecord

from .config import LogConfig
from .epoch_cache import FILE_NAME as EPOCH_FILE
from .epoch_cache import LeaderEpochCache
from .errors import (LogClosed, OffsetOutOfRange, OffsetsOutOfOrder, PolicyViolation,
                     RecordBatchTooLarge, UnexpectedAppendOffset)
from .failure import LogDirFailureChannel, check_online, guarded, raise_reported
from .open_files import OpenFiles
from .region import FileRegion
from .segment import INT32_MAX, LogSegment, segment_name
from .txnindex import AbortedTxn

_LOG_OVERHEAD = rb.LOG_OVERHEAD
_BatchHeader = rb.BatchHeader
_new_tuple = tuple.__new__
_LONG_MIN = -(1 << 63)

# how far below a producer snapshot the batches of its producers are looked for at load:
# five batches in flight of up to a few hundred KiB each
RESTORE_WINDOW_BYTES = 1 << 20

Clock = Callable[[], int]


class AppendInfo(NamedTuple):
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int


def _parse_dir_name(name: str) -> tuple[str, int] | None:
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return topic, int(part)


class PartitionLog:
    """The segments of one partition and the offsets that describe them."""

    def __init__(self, directory: Path, topic: str, partition: int, config: LogConfig, *,
                 clock: Clock | None = None, now_ms: int | None = None,
                 recovery_point: int = 0, log_start_offset: int = 0,
                 first_dirty_offset: int = 0, clean_shutdown: bool = False,
                 high_watermark: int | None = None,
                 failures: LogDirFailureChannel | None = None,
                 files: OpenFiles | None = None,
                 producer_expiry: ProducerExpiry | None = None,
                 log_dir: Path | None = None):
        """Open (recovering if needed) or create the log in ``directory``.

        ``recovery_point``, ``log_start_offset``, ``first_dirty_offset`` and
        ``high_watermark`` come from the log directory's checkpoint files (the manager
        reads them).  With ``clean_shutdown`` the segments are trusted and no data is
        read; otherwise every segment from the one holding ``recovery_point`` is
        re-validated.  A given ``high_watermark`` is capped to the log end offset;
        without one the high watermark is the log end offset after a clean shutdown,
        else the recovery point.

        ``failures`` is the log dir failure channel of the owning ``LogManager``
        (:mod:`kbroker.log.failure`); the public methods that touch the disk report storage
        errors to it and raise ``KafkaStorageError``. A log of its own gets a channel of its
        own.

        ``log_dir`` is the log directory holding ``directory`` (its parent), the manager's
        own object: every log of a directory shares it (no path built per log or per call).

        ``producer_expiry`` is the node's :class:`~kbroker.log.producer_expiry.ProducerExpiry`
        (``producer.id.expiration.ms``; the log joins its sweep once it has producers); a
        log without one keeps Kafka's default expiration and is swept by nobody.
        """
        self.dir = as_path(directory)
        self.log_dir = log_dir if log_dir is not None else self.dir.parent
        self.topic, self.partition = topic, partition
        self.failures = failures if failures is not None else LogDirFailureChannel()
        # where the segments' files are opened on use, at most a bound at a time (the log
        # manager's; a log of its own gets an unbounded one)
        self.files = files if files is not None else OpenFiles()
        self.config = config
        self._clock = clock
        # the directory is listed once: what the swaps, the segments, the producer-state
        # snapshots and the epoch checkpoint need to know of it (a node of 100,000 logs
        # lists 100,000 directories at start-up, and four times as many cost it seconds)
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            self.dir.mkdir(parents=True, exist_ok=True)
            names = []
        now = self._now(now_ms) if (clock or now_ms is not None) else 0
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._pending_deletes: list[tuple[int, LogSegment, bool]] = []  # (due_ms, seg, unlink)
        self.closed = False
        self.first_dirty_offset = first_dirty_offset
        self.checkpoint_listener: Callable[["PartitionLog"], None] | None = None
        self.recovery_stats = {"segments_recovered": 0, "bytes_recovered": 0,
                               "bytes_truncated": 0, "segments_dropped": 0}
        self._dir_dirty = False
        self._last_flush_ms = now
        if producer_expiry is not None:
            self.producer_state = ProducerStateManager(
                self.dir, settings=producer_expiry, on_producers=lambda: producer_expiry.watch(self))
        else:
            self.producer_state = ProducerStateManager(self.dir)
        self._recovered_from: int | None = None
        names = self._complete_interrupted_swaps(names)
        self._load_segments(now, names)
        new_log = not self.segments
        self.epochs = LeaderEpochCache(self.dir, listed=EPOCH_FILE in names)
        # Without a readable file the cache is rebuilt from every batch header below;
        # with one, crash recovery re-reads the epochs of the batches it re-validates.
        # (a log without data has nothing to rebuild from: the file of a log that never
        # held data of an epoch is not written, see LeaderEpochCache.sync)
        self._rebuild_epochs = not self.epochs.loaded and not new_log \
            and any(seg.size for seg in self.segments)
        epochs_before = self.epochs.entries()
        if new_log:  # a new log: nothing to recover
            self._add_segment(log_start_offset, now)
            clean_shutdown, recovery_point = True, log_start_offset
        self._log_start_offset = max(log_start_offset, self.segments[0].base_offset)
        if clean_shutdown:
            self.recovery_point = max(recovery_point, 0)
            self._check_active_segment()
        else:
            self._recover(recovery_point)
        self._log_end_offset = self.segments[-1].next_offset
        if clean_shutdown:  # a clean close fsynced everything
            self.recovery_point = self._log_end_offset
        self.recovery_point = min(self.recovery_point, self._log_end_offset)
        self._log_start_offset = min(self._log_start_offset, self._log_end_offset)
        self._high_watermark = self._log_end_offset if clean_shutdown else self.recovery_point
        if high_watermark is not None:
            self._high_watermark = min(high_watermark, self._log_end_offset)
        self._high_watermark = max(self._high_watermark, self._log_start_offset)
        self._last_stable_offset: int | None = None
        self._load_producer_state(self._recovered_from, now,
                                  snapshots=ProducerStateManager.snapshot_offsets_in(names))
        self._load_epochs(epochs_before, new_log)

    # -- opening ----------------------------------------------------------------
    def _now(self, now_ms: int | None) -> int:
        if now_ms is not None:
            return now_ms
        if self._clock is None:
            raise ValueError("now_ms is required when the log has no clock")
        return self._clock()

    def _new_segment(self, base: int, now: int, suffix: str = "") -> LogSegment:
        return LogSegment(self.dir, base, index_interval_bytes=self.config.index_interval_bytes,
                          max_index_bytes=self.config.segment_index_bytes, created_ms=now,
                          suffix=suffix, files=self.files)

    def _complete_interrupted_swaps(self, listed: list[str]) -> list[str]:
        """Finish or undo a compaction swap or deletion that a crash interrupted; returns
        the directory's names afterwards (``listed``: its names before).

        ``.cleaned`` files are incomplete output: removed.  A ``.log.swap`` is complete
        output (written and fsynced before it got that name): its index swaps, then the
        log swap, replace the originals.  Index ``.swap`` files without their log swap
        belong to an unfinished rename: removed.  ``.deleted`` files are removed.
        """
        if not any(name.endswith((".swap", ".cleaned", ".deleted")) for name in listed):
            return listed       # a clean stop's directory: nothing to finish or undo
        names = set(listed)
        for name in sorted(names):
            if name.endswith(".log.swap"):
                stem = name[: -len(".log.swap")]
                for kind in ("index", "timeindex", "txnindex"):
                    swap = f"{stem}.{kind}.swap"
                    if swap in names:
                        os.replace(self.dir / swap, self.dir / f"{stem}.{kind}")
                        names.discard(swap)
                os.replace(self.dir / name, self.dir / f"{stem}.log")
                self._dir_dirty = True
        left = []
        for name in os.listdir(self.dir):
            if name.endswith((".cleaned", ".swap", ".deleted")):
                os.unlink(self.dir / name)
            else:
                left.append(name)
        return left

    def _load_segments(self, now: int, names: list[str]) -> None:
        logs = set()
        for name in names:
            stem, _, ext = name.partition(".")
            if ext == "log" and stem.isdigit() and len(stem) == 20:
                logs.add(int(stem))
        for name in names:  # indexes whose log is gone (e.g. crash during deletion)
            stem, _, ext = name.partition(".")
            if ext in ("index", "timeindex", "txnindex") and stem.isdigit() and int(stem) not in logs:
                os.unlink(self.dir / name)
        present = set(names)
        for base in sorted(logs):
            seg = self._new_segment(base, now)
            stem = segment_name(base)
            indexed = f"{stem}.index" in present and f"{stem}.timeindex" in present
            # index files are created with their first entry: an empty segment has none
            if seg.size and not indexed:
                seg.rebuild_indexes()
            elif not seg.size and f"{stem}.index" not in present \
                    and f"{stem}.timeindex" not in present:
                seg.offset_index.known_missing()     # nothing to read or check
                seg.time_index.known_missing()
            self.segments.append(seg)
            self._bases.append(base)

    def _load_producer_state(self, rebuild_from: int | None, now: int,
                             snapshots: list[int] | None = None) -> None:
        """Load the newest snapshot at or below the point to rebuild from and replay the
        batches after it. ``rebuild_from`` (a crash: the first recovered segment) also
        rebuilds the ``.txnindex`` of every segment from there on. ``snapshots``: the
        snapshot offsets in the directory, when the caller listed it."""
        ps = self.producer_state
        leo = self._log_end_offset
        snapshots = ps.delete_snapshots_above(leo, offsets=snapshots)
        target = leo if rebuild_from is None else min(rebuild_from, leo)
        snap = ps.load_latest(target, now_ms=now or None, offsets=snapshots)
        if snap is not None and ps.producers:
            self._restore_earlier_batches(snap)
        if rebuild_from is not None:
            for seg in self.segments:
                if seg.base_offset >= rebuild_from:
                    seg.txn_index.reset()
        start = snap if snap is not None else self.segments[0].base_offset
        if start < leo:
            self._replay_producer_state(start, rebuild_from)
            if now:
                # the replayed batches by the rule the snapshot was filtered with: a
                # producer that had expired before the restart stays forgotten
                ps.remove_expired(now)
        ps.map_end_offset = leo

    def _restore_earlier_batches(self, snap: int) -> None:
        """Hand the producer state the data batch headers of the last
        ``RESTORE_WINDOW_BYTES`` of the log below offset ``snap``, across segment rolls
        (headers only: one read per batch, none of the records)."""
        ranges: list[tuple[LogSegment, int, int]] = []
        left = RESTORE_WINDOW_BYTES
        i = bisect.bisect_right(self._bases, snap - 1) - 1
        while i >= 0 and left > 0:
            seg = self.segments[i]
            found = seg.find(snap) if seg.base_offset < snap else None
            end = found[0] if found is not None else seg.size
            begin = seg.offset_index.position_at_or_before(max(0, end - left))
            ranges.append((seg, begin, end))
            left -= end - begin
            i -= 1

        def headers():
            for seg, begin, end in reversed(ranges):
                for pos, h, _ in seg.batches(begin):
                    if pos >= end:
                        break
                    if h.producer_id >= 0:
                        yield h
        self.producer_state.restore_earlier_batches(headers())

    def _replay_producer_state(self, start: int, index_from: int | None) -> None:
        ps = self.producer_state
        i = max(0, bisect.bisect_right(self._bases, start) - 1)
        for seg in self.segments[i:]:
            found = seg.find(start) if seg.base_offset < start else None
            begin = found[0] if found is not None else 0
            if seg.base_offset < start and found is None:
                continue
            for pos, h, _ in seg.batches(begin):
                if h.producer_id < 0 or h.base_offset < start:
                    continue
                marker = _marker_of(seg.read_batch(pos, h), 0, h) if h.is_control else None
                done = ps.append(h, marker)
                if done is not None and done.is_aborted and index_from is not None \
                        and h.base_offset >= index_from:
                    seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset,
                                                    done.last_offset,
                                                    ps.last_stable_offset_after(done)))

    def _load_epochs(self, before: list, new_log: bool) -> None:
        """Make the epoch cache agree with the opened log (see the module docstring)."""
        cache = self.epochs
        if self._rebuild_epochs:
            for seg in self.segments:
                for _, h, _ in seg.batches(0):
                    if h.partition_leader_epoch >= 0:
                        cache.assign(h.partition_leader_epoch, h.base_offset, write=False)
            self._rebuild_epochs = False
        cache.truncate_from_end(self._log_end_offset, write=False)
        cache.truncate_from_start(self._log_start_offset, write=False)
        if not cache.loaded:
            if not new_log and len(cache):  # a log without epochs needs no file (none = empty)
                cache.write(sync=False)  # derivable from the log: rebuilt again if lost
        elif cache.entries() != before:
            if self._recovered_from is not None:
                cache.write()   # recovery moved the recovery point over re-read batches
            else:
                # an epoch begun without data (dropped here, at the log end) is the common
                # case: written with the next flush, as every load drops such entries again
                cache.defer()

    def _check_active_segment(self) -> None:
        """After a clean shutdown only the active segment's indexes are checked."""
        seg = self.segments[-1]
        try:
            seg.offset_index.check()
            seg.time_index.check()
            seg.next_offset  # noqa: B018 - loads the tail, may raise
        except Exception:
            self._recover(seg.base_offset, self.recovery_point)

    def _recover(self, recovery_point: int, trusted_end: int = 0) -> None:
        """Re-validate every segment from the one holding ``recovery_point``.

        Offset gaps are accepted below the first dirty offset (compaction) and below
        ``max(recovery_point, trusted_end)``: that data was fsynced as written (a
        follower's copy of a compacted leader log has gaps anywhere).
        """
        i = max(0, bisect.bisect_right(self._bases, recovery_point) - 1)
        first = self.segments[i].base_offset
        self._recovered_from = first if self._recovered_from is None else min(first, self._recovered_from)
        gap_limit = max(self.first_dirty_offset, recovery_point, trusted_end)
        on_batch = None
        if not self._rebuild_epochs:
            cache = self.epochs
            cache.truncate_from_end(first, write=False)

            def on_batch(h, cache=cache):
                if h.partition_leader_epoch >= 0:
                    cache.assign(h.partition_leader_epoch, h.base_offset, write=False)
        prev_epoch = -1
        if i > 0:
            prev_epoch = self.segments[i - 1].last_epoch
        while i < len(self.segments):
            seg = self.segments[i]
            res = seg.recover(gap_limit=gap_limit, prev_epoch=prev_epoch, on_batch=on_batch)
            self.recovery_stats["segments_recovered"] += 1
            self.recovery_stats["bytes_recovered"] += res.valid_bytes + res.truncated_bytes
            self.recovery_stats["bytes_truncated"] += res.truncated_bytes
            prev_epoch = seg.last_epoch if seg.size else prev_epoch
            nxt = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
            if res.error is not None or (nxt is not None and nxt < seg.next_offset):
                # Everything after the first damaged byte goes, including later segments.
                for later in self.segments[i + 1:]:
                    self.recovery_stats["segments_dropped"] += 1
                    later.delete_files()
                del self.segments[i + 1:]
                del self._bases[i + 1:]
                break
            i += 1
        # An empty segment that is not the only one is dropped (it holds nothing and
        # Kafka would not have left it behind except by a crash during a roll).
        while len(self.segments) > 1 and self.segments[-1].size == 0 \
                and self.segments[-1].base_offset != self.segments[-2].next_offset:
            self.segments.pop().delete_files()
            self._bases.pop()
        for seg in self.segments[max(0, bisect.bisect_right(self._bases, recovery_point) - 1):]:
            seg.flush()
        self._fsync_dir()
        self.recovery_point = self.segments[-1].next_offset

    # -- offsets --------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._high_watermark = max(self._log_start_offset, min(value, self._log_end_offset))

    @property
    def last_stable_offset(self) -> int:
        """First offset of the oldest open transaction, capped at the high watermark."""
        lso = self._high_watermark
        unstable = self.producer_state.first_unstable_offset()
        if unstable is not None:
            lso = min(lso, unstable)
        if self._last_stable_offset is not None:
            lso = min(lso, self._last_stable_offset)
        return lso

    @last_stable_offset.setter
    def last_stable_offset(self, value: int | None) -> None:
        self._last_stable_offset = value

    # -- leader epochs ------------------------------------------------------------------
    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch in the epoch cache (-1 when it is empty)."""
        return self.epochs.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """``(epoch, end offset)`` for OffsetForLeaderEpoch (``(-1, -1)``: unknown);
        Kafka's rules, see :meth:`LeaderEpochCache.end_offset_for`."""
        return self.epochs.end_offset_for(epoch, self._log_end_offset)

    def epoch_for_offset(self, offset: int) -> int:
        """The leader epoch that wrote ``offset`` (-1 when the cache does not know)."""
        return self.epochs.epoch_for_offset(offset)

    def assign_epoch_start(self, epoch: int, offset: int) -> bool:
        """Record that ``epoch`` starts at ``offset`` (a new leader: its log end offset,
        Kafka's makeLeader).  Returns whether the cache changed."""
        self._check_open()
        changed = self.epochs.assign(epoch, offset, write=False)
        if changed:
            # not written here (a leader change touches every partition of a broker at
            # once): flush() writes and syncs it before the recovery point passes data of
            # this epoch, and recovery re-reads the epochs of batches after that point
            self.epochs.defer()
        return changed

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    def io_guard(self, what: str):
        """``with log.io_guard("write x"):`` -- a write beside this log's segments (the
        metadata quorum's state and snapshots) reported like the log's own
        (:mod:`kbroker.log.failure`)."""
        return self.failures.guard(self.log_dir, f"{what} of {self.topic}-{self.partition}")

    def _check_open(self) -> None:
        if self.closed:
            raise LogClosed(f"{self.topic}-{self.partition} is closed")

    # -- append ---------------------------------------------------------------------
    def append(self, batch, *, leader_epoch: int = -1, log_append_time: int | None = None,
               now_ms: int | None = None, header: "rb.BatchHeader | None" = None,
               headers: "list[rb.BatchHeader] | None" = None) -> AppendInfo:
        """Validate, assign offsets to and write one or more record batches.

        ``batch`` holds whole v2 batches back to back (a Produce ``records`` field).
        Each is checked (structure, CRC32C, ``max.message.bytes``; keys on compacted
        topics) before anything is written; a refusal leaves the log unchanged.
        ``header``: ``rb.parse_header(batch, 0)`` when the caller parsed it already and
        ``batch`` is that one batch exactly (the produce path): the same checks run on it
        without parsing it again; ``headers``: the same for several batches back to back
        (a run of Produce requests, :func:`kbroker.replica.append.append_run`).
        """
        # (the hot path of every Produce: plain loops, no generators or property calls per
        # batch; storage errors reported as ``@guarded`` does, without its wrapper's call)
        if self.failures.failed:
            check_online(self)
        try:
            if self.closed:
                raise LogClosed(f"{self.topic}-{self.partition} is closed")
            now = now_ms if now_ms is not None else self._now(None)
            view = memoryview(batch)
            total = len(view)
            if total == 0:
                raise InvalidRecord("empty record set")
            config = self.config
            if header is not None and header[1] + _LOG_OVERHEAD == total:
                rb.check_batch(view, 0, header, max_batch_bytes=config.max_message_bytes)
                headers = (header,)
            elif headers is not None:
                pos = 0
                for h in headers:
                    rb.check_batch(view, pos, h, max_batch_bytes=config.max_message_bytes)
                    pos += h[1] + _LOG_OVERHEAD
                if pos != total:
                    raise CorruptRecord("record set does not end on a batch boundary")
            else:
                headers = rb.validate_batches(view, max_batch_bytes=config.max_message_bytes)
                size = 0
                for h in headers:
                    size += h.batch_length + _LOG_OVERHEAD
                if size != total:
                    raise CorruptRecord("record set does not end on a batch boundary")
            if total > config.segment_bytes:
                raise RecordBatchTooLarge(f"{total} bytes exceed segment.bytes")
            if config.compact:
                self._check_keys(view, headers)
            if log_append_time is None and config.log_append_time:
                log_append_time = now
            # A writable memoryview is a Produce request's own frame (the server hands frames on
            # as bytearrays): patch it in place instead of copying every produced byte once more.
            # Anything else (bytes, or buffers coordinators may still hold) is copied first.
            buf = view if isinstance(batch, memoryview) and not view.readonly else bytearray(view)
            first = offset = self._log_end_offset
            pos = 0
            assigned = []
            top_ts = _LONG_MIN
            for h in headers:
                rb.patch_offset_and_epoch(buf, pos, h, offset, leader_epoch)
                if log_append_time is not None:
                    rb.set_max_timestamp(buf, pos, log_append_time, log_append_time=True)
                    # the header as written (timestamp type bit and CRC changed)
                    a = rb.parse_header(buf, pos)
                else:
                    # h with base_offset and partition_leader_epoch replaced
                    # (tuple.__new__: a namedtuple's own __new__ is a Python-level call)
                    a = _new_tuple(_BatchHeader, (offset, h[1], leader_epoch) + h[3:])
                assigned.append(a)
                if a[8] > top_ts:
                    top_ts = a[8]
                offset += h[6] + 1
                pos += h[1] + _LOG_OVERHEAD
            last = offset - 1
            seg = self.segments[-1]
            if seg.size and seg.should_roll(seg.size + total, top_ts, last, now, config):
                seg = self.roll(now_ms=now)
            seg.append(buf, assigned)
            self._log_end_offset = offset
            if leader_epoch >= 0:
                self.epochs.assign(leader_epoch, first)  # a no-op unless the epoch is new
            ps = self.producer_state
            if len(assigned) > 1 or assigned[0][5] & rb.ATTR_CONTROL:
                self._update_producer_state(buf, assigned, seg)
            elif assigned[0][9] >= 0:
                ps.append(assigned[0])      # one data batch: no marker, no aborted transaction
            ps.map_end_offset = offset
            if offset - self.recovery_point >= config.flush_messages:
                self.flush(now_ms=now)
            return _new_tuple(AppendInfo, (first, last, -1 if log_append_time is None
                                           else log_append_time, self._log_start_offset))
        except Exception as exc:
            raise_reported(self, "append to", exc)
            raise

    def _update_producer_state(self, buf, headers, seg: LogSegment) -> None:
        """Every stored batch with a producer id updates the producer state (a marker that
        ends an aborted transaction adds its ``.txnindex`` entry); ``headers`` are the
        batches of ``buf`` as written."""
        ps = self.producer_state
        pos = 0
        for h in headers:
            if h[9] >= 0:
                marker = _marker_of(buf, pos, h) if h[5] & rb.ATTR_CONTROL else None
                done = ps.append(h, marker)
                if done is not None and done.is_aborted:
                    seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset,
                                                    done.last_offset,
                                                    ps.last_stable_offset_after(done)))
            pos += h[1] + _LOG_OVERHEAD
        ps.map_end_offset = self._log_end_offset

    @guarded("follower append to")
    def append_as_follower(self, records, *, now_ms: int | None = None) -> AppendInfo:
        """Append batches fetched from the leader exactly as the leader stored them.

        ``records`` holds whole v2 batches back to back (a Fetch response's ``records``);
        a partial batch at the very end (a size-limited read) is left out, as Kafka's
        fetcher does.  Checked before anything is written (a refusal leaves the log
        unchanged): structure and CRC32C (``CorruptRecord``); the first base offset is
        at or past the log end (:class:`UnexpectedAppendOffset`; a gap is a compacted
        leader log) and offsets strictly increase (:class:`OffsetsOutOfOrder`).
        ``max.message.bytes`` is not enforced and nothing is patched: offsets, partition
        leader epochs and LogAppendTime timestamps are kept.  Segments roll as for
        :meth:`append` (a batch after a gap may start the new segment at its own base
        offset); the epoch cache and producer state follow the batches, without the
        producer checks a leader makes.  An empty input appends nothing and returns
        ``(log_end_offset, log_end_offset - 1, -1, log_start_offset)``.
        """
        self._check_open()
        view = memoryview(records)
        headers = self._check_replicated(view)
        leo = self._log_end_offset
        if not headers:
            return AppendInfo(leo, leo - 1, -1, self._log_start_offset)
        now = self._now(now_ms)
        cache = self.epochs
        epochs_changed = False
        n, i, pos = len(headers), 0, 0
        try:
            while i < n:
                h = headers[i]
                seg = self.segments[-1]
                if seg.size == 0:
                    if h.last_offset - seg.base_offset > INT32_MAX:
                        seg = self._rebase_empty_active(h.base_offset, now)
                elif seg.should_roll(seg.size + h.size, h.max_timestamp, h.last_offset, now,
                                     self.config):
                    seg = self._roll_at(h.base_offset, now)
                first_ts = seg.first_batch_timestamp if seg.size else h.max_timestamp
                size, j = h.size, i + 1
                while j < n:
                    hj = headers[j]
                    if seg.should_roll(seg.size + size + hj.size, hj.max_timestamp, hj.last_offset,
                                       now, self.config, first_ts):
                        break
                    size += hj.size
                    j += 1
                chunk, part = view[pos:pos + size], headers[i:j]
                seg.append(chunk, part)
                self._log_end_offset = part[-1].next_offset
                for hk in part:
                    if hk.partition_leader_epoch >= 0:
                        epochs_changed |= cache.assign(hk.partition_leader_epoch, hk.base_offset,
                                                       write=False)
                self._update_producer_state(chunk, part, seg)
                i, pos = j, pos + size
        finally:
            if epochs_changed:
                cache.write()
        if self._log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush(now_ms=now)
        return AppendInfo(headers[0].base_offset, headers[-1].last_offset, -1, self._log_start_offset)

    def _check_replicated(self, view) -> list:
        """Headers of the whole batches in ``view`` after the follower-append checks."""
        headers: list = []
        expected = self._log_end_offset
        for _, h in rb.iter_batches(view, verify=True, allow_truncated_tail=True):
            if h.last_offset_delta < 0:
                raise CorruptRecord(f"batch at offset {h.base_offset} has a negative last offset delta")
            if h.base_offset < expected:
                last = headers[-1].last_offset if headers else h.last_offset
                if not headers:
                    raise UnexpectedAppendOffset(
                        f"{self.topic}-{self.partition}: first offset {h.base_offset} is below "
                        f"the log end offset {expected}", h.base_offset, last)
                raise OffsetsOutOfOrder(
                    f"{self.topic}-{self.partition}: batch at offset {h.base_offset} does not follow "
                    f"offset {expected - 1}", headers[0].base_offset, h.last_offset)
            headers.append(h)
            expected = h.next_offset
        return headers

    def _rebase_empty_active(self, base: int, now: int) -> LogSegment:
        """Replace the empty active segment by one at ``base`` (offsets appended after a
        large gap must fit its index's 32-bit relative offsets)."""
        old = self.segments.pop()
        self._bases.pop()
        old.delete_files()
        self._dir_dirty = True
        return self._add_segment(base, now)

    def _check_keys(self, view, headers) -> None:
        pos = 0
        for h in headers:
            if not h.is_control:
                for rec in rb.decode_records(view, pos, h):
                    if rec.key is None:
                        raise InvalidRecord("compacted topic requires a key on every record")
            pos += h.size

    @guarded("roll a segment of")
    def roll(self, *, now_ms: int | None = None) -> LogSegment:
        """Close the active segment for appends and start a new one at the log end."""
        now = self._now(now_ms)
        old = self.segments[-1]
        if old.size == 0:
            return old
        return self._roll_at(self._log_end_offset, now)

    def _roll_at(self, base: int, now: int) -> LogSegment:
        """Start a new segment at ``base`` (>= the log end: a follower's copy of a
        compacted log may jump ahead, as Kafka's roll to the first offset appended)."""
        self.segments[-1].on_become_inactive()
        # the producer state as of the new segment's base offset, every producer in it:
        # Kafka's roll only snapshots; idle producers go at the producer.id.expiration.ms
        # sweep (kbroker.log.producer_expiry), not at a roll another producer's batch causes
        self.producer_state.map_end_offset = base
        self.producer_state.take_snapshot(base)
        self.producer_state.delete_snapshots_before(self.segments[0].base_offset)
        return self._add_segment(base, now)

    def _add_segment(self, base: int, now: int) -> LogSegment:
        seg = self._new_segment(base, now)
        if seg.size:  # a stale file of that name (e.g. left by truncation): start afresh
            seg.start_afresh()
        self.segments.append(seg)
        self._bases.append(base)
        self._dir_dirty = True
        return seg

    # -- read -------------------------------------------------------------------------
    @guarded("read from")
    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None) -> FileRegion | None:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``.

        Returns ``None`` when nothing is there yet (``offset == log_end_offset`` or
        every candidate batch starts at or after ``max_offset``).  The first batch is
        returned whole even when it alone exceeds ``max_bytes``.  Reads stay within one
        segment, as Kafka's do.
        """
        self._check_open()
        if offset < self._log_start_offset or offset > self._log_end_offset:
            raise OffsetOutOfRange(offset, self._log_start_offset, self._log_end_offset)
        if offset == self._log_end_offset:
            return None
        i = max(0, bisect.bisect_right(self._bases, offset) - 1)
        for seg in self.segments[i:]:
            if max_offset is not None and seg.base_offset >= max_offset:
                return None
            found = seg.region_of(offset, max_bytes, max_offset)
            if found is not None:
                pos, length, base = found
                held = seg.pin()        # open until the region is sent (kbroker.log.open_files)
                return FileRegion(held.fd, pos, length, base, held)
        return None

    @guarded("read the transaction index of")
    def collect_aborted_transactions(self, start_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[start_offset, upper_bound)`` (read_committed
        fetches): from the ``.txnindex`` of the segment holding ``start_offset`` on."""
        i = max(0, bisect.bisect_right(self._bases, start_offset) - 1)
        out: list[AbortedTxn] = []
        for seg in self.segments[i:]:
            found, complete = seg.txn_index.collect(start_offset, upper_bound)
            out.extend(found)
            if complete:
                break
        return out

    def segment_end_offset(self, offset: int) -> int:
        """The next offset after the segment holding ``offset`` (reads stay in one segment)."""
        i = max(0, bisect.bisect_right(self._bases, offset) - 1)
        if i + 1 < len(self.segments):
            return self.segments[i + 1].base_offset
        return self._log_end_offset

    def batches(self, start_offset: int | None = None):
        """Iterate ``(header, bytes)`` of every batch from ``start_offset`` (for replay).

        Copies data: meant for coordinators replaying their state logs, tests and
        tools, not for the fetch path.
        """
        start = self._log_start_offset if start_offset is None else start_offset
        i = max(0, bisect.bisect_right(self._bases, start) - 1)
        for seg in list(self.segments[i:]):
            found = seg.find(start)
            if found is None:
                continue
            for _, h, data in seg.batches(found[0], want_data=True):
                yield h, bytes(data)

    # -- timestamps -------------------------------------------------------------------
    @guarded("look up a timestamp in")
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp``."""
        self._check_open()
        for seg in self.segments:
            if seg.size == 0 or seg.max_timestamp < timestamp:
                continue
            found = seg.find_by_timestamp(timestamp)
            if found is not None:
                off, ts = found
                return max(off, self._log_start_offset), ts
        return None

    @guarded("look up the max timestamp in")
    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the log's max timestamp."""
        self._check_open()
        best = None
        for seg in self.segments:
            if seg.size and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None or best.max_timestamp < 0:
            return None
        return best.find_by_timestamp(best.max_timestamp)

    # -- durability ---------------------------------------------------------------------
    @guarded("flush")
    def flush(self, *, now_ms: int | None = None, bulk=None) -> None:
        """fsync everything between the recovery point and the log end. With ``bulk`` (a
        ``kbroker.common.bulk_sync.BulkSync``: a clean stop of many logs) every file is
        written and its fsync left to the bulk's commit, which the caller runs before it
        marks anything clean; the recovery point moves here, in memory, and reaches the
        checkpoint file only through the same commit."""
        self._check_open()
        target = self._log_end_offset
        # Start one offset early: the segment that was active at the previous flush may
        # have been rolled since, and its indexes were not synced while it was active.
        i = max(0, bisect.bisect_right(self._bases, self.recovery_point - 1) - 1)
        for seg in self.segments[i:]:
            # Indexes of the active segment are rebuilt by recovery anyway.
            seg.flush(indexes=seg is not self.segments[-1], bulk=bulk)
        # only the entries below the log end must be durable (an epoch begun at the log end
        # is dropped by the next load): a restarted leader without new data writes nothing
        if self.epochs.sync(bulk=bulk, sync_dir=False, below=target):
            self._dir_dirty = True      # the checkpoint's rename: one directory fsync below
        self._fsync_dir(bulk)
        self.recovery_point = max(self.recovery_point, target)
        if now_ms is not None or self._clock is not None:
            self._last_flush_ms = self._now(now_ms)

    @guarded("flush")
    def maybe_flush(self, now_ms: int) -> bool:
        if self.recovery_point >= self._log_end_offset:
            self._last_flush_ms = now_ms
            return False
        if now_ms - self._last_flush_ms >= self.config.flush_ms:
            self.flush(now_ms=now_ms)
            return True
        return False

    def note_directory_change(self) -> None:
        """A file beside the segments was created or replaced (the metadata quorum's
        ``quorum-state``): its directory entry is made durable by the log's next directory
        fsync (``flush`` or ``sync_directory``), together with the segments' own."""
        self._dir_dirty = True

    @guarded("sync the directory of")
    def sync_directory(self) -> None:
        """fsync the log's directory if an entry in it changed since its last fsync."""
        self._fsync_dir()

    def _fsync_dir(self, bulk=None) -> None:
        if self._dir_dirty:
            if bulk is not None:
                bulk.directory(self.dir)
            else:
                fsync_dir(self.dir)
            self._dir_dirty = False

    # -- retention and truncation -------------------------------------------------------
    def _remove_segments(self, count: int, now: int) -> None:
        """Take the first ``count`` segments out of the log; files go after the delay."""
        for seg in self.segments[:count]:
            seg.change_suffix(".deleted")
            seg.close_indexes()
            self._pending_deletes.append((now + self.config.file_delete_delay_ms, seg, True))
        del self.segments[:count]
        del self._bases[:count]
        self._dir_dirty = True

    def _retire(self, seg: LogSegment, now: int) -> None:
        """Keep a replaced segment's descriptor open for in-flight reads, then close it."""
        seg.close_indexes()
        self._pending_deletes.append((now + self.config.file_delete_delay_ms, seg, False))

    @guarded("delete old segments of")
    def delete_pending(self, now_ms: int, *, force: bool = False) -> int:
        return self._delete_pending(now_ms, force)

    def _delete_pending(self, now_ms: int, force: bool) -> int:
        keep, done = [], 0
        for due, seg, unlink in self._pending_deletes:
            if force or now_ms >= due:
                seg.delete_files() if unlink else seg.close()
                done += 1
            else:
                keep.append((due, seg, unlink))
        self._pending_deletes = keep
        return done

    @guarded("delete records of")
    def delete_records_before(self, offset: int, *, now_ms: int | None = None) -> int:
        """DeleteRecords: move the log start offset up to ``offset``; returns it.

        ``offset`` may not exceed the high watermark.  Whole segments below the new
        log start offset are removed at once.
        """
        self._check_open()
        if not self.config.delete:
            raise PolicyViolation("DeleteRecords needs cleanup.policy to include delete")
        if offset < 0 or offset > self._high_watermark:
            raise OffsetOutOfRange(offset, self._log_start_offset, self._high_watermark)
        self.maybe_increment_log_start_offset(offset, now_ms=now_ms)
        return self._log_start_offset

    @guarded("move the log start offset of")
    def maybe_increment_log_start_offset(self, offset: int, *, now_ms: int | None = None) -> bool:
        """Move the log start offset up to ``offset`` (at most the high watermark).

        DeleteRecords' effect without its cleanup-policy check: a follower follows the
        leader's log start offset whatever the topic's policy.  Whole segments below the
        new start are removed; the epoch cache drops what lies before it.  Returns
        whether the log start offset moved.
        """
        self._check_open()
        if offset > self._high_watermark:
            raise OffsetOutOfRange(offset, self._log_start_offset, self._high_watermark)
        if offset <= self._log_start_offset:
            return False
        self._log_start_offset = offset
        self._delete_start_offset_breached(self._now(now_ms) if (now_ms is not None or self._clock) else 0)
        self._log_start_moved()
        return True

    def _log_start_moved(self) -> None:
        # Not fsynced: entries below the log start that survive a crash are dropped on load.
        if self.epochs.truncate_from_start(self._log_start_offset, write=False):
            self.epochs.write(sync=False)

    def _delete_start_offset_breached(self, now: int) -> int:
        n = 0
        while n + 1 < len(self.segments) and self.segments[n + 1].base_offset <= self._log_start_offset:
            n += 1
        if n:
            self._remove_segments(n, now)
        return n

    @guarded("apply retention to")
    def maybe_run_retention(self, now_ms: int) -> int:
        """Delete head segments past ``retention.ms``/``retention.bytes``; count deleted.

        Only segments wholly below the high watermark go.  The active segment goes
        too when it has expired by time (it is rolled first), as in Kafka.
        """
        self._check_open()
        deleted = self._delete_start_offset_breached(now_ms)
        cfg = self.config
        if cfg.delete:
            if cfg.retention_ms >= 0:
                n = 0
                while n < len(self.segments) and self._below_hw(n) \
                        and now_ms - self.segments[n].max_timestamp > cfg.retention_ms:
                    n += 1
                if n == len(self.segments) and self.segments[-1].size:
                    self.roll(now_ms=now_ms)
                n = min(n, len(self.segments) - 1)
                if n:
                    self._remove_segments(n, now_ms)
                    deleted += n
            if cfg.retention_bytes >= 0:
                excess = self.size - cfg.retention_bytes
                n = 0
                while n < len(self.segments) - 1 and self._below_hw(n) \
                        and excess - self.segments[n].size >= 0:
                    excess -= self.segments[n].size
                    n += 1
                if n:
                    self._remove_segments(n, now_ms)
                    deleted += n
            if deleted:
                self._log_start_offset = max(self._log_start_offset, self.segments[0].base_offset)
                self._log_start_moved()
        self.delete_pending(now_ms)
        return deleted

    def _below_hw(self, n: int) -> bool:
        nxt = self.segments[n + 1].base_offset if n + 1 < len(self.segments) else self._log_end_offset
        return nxt <= self._high_watermark

    @guarded("truncate")
    def truncate_to(self, offset: int, *, now_ms: int | None = None) -> None:
        """Remove every batch from the one holding ``offset`` on (replication/Raft).

        The log end becomes the base offset of that batch, i.e. ``offset`` when it is
        a batch boundary.  Truncating below the log start offset empties the log and
        restarts it at ``offset``.  Epoch-cache entries at or past the (new) log end go,
        even when no data is cut.
        """
        self._check_open()
        now = self._now(now_ms) if (now_ms is not None or self._clock) else 0
        if offset >= self._log_end_offset:
            # No data to cut, but an epoch this node started as leader without writing
            # anything may sit at the log end and conflict with the new leader's (Kafka).
            self.epochs.truncate_from_end(self._log_end_offset)
            return
        if offset < self._log_start_offset or offset <= self.segments[0].base_offset:
            self.truncate_fully_and_start_at(offset, now_ms=now)
            return
        n = len(self.segments)
        while n > 1 and self.segments[n - 1].base_offset >= offset:
            n -= 1
        for seg in self.segments[n:]:
            seg.change_suffix(".deleted")
            seg.close_indexes()
            self._pending_deletes.append((now + self.config.file_delete_delay_ms, seg, True))
        del self.segments[n:]
        del self._bases[n:]
        self.segments[-1].truncate_to(offset)
        self._after_truncation()
        # fsynced: a stale entry at or past a later log end would mislabel new data
        self.epochs.truncate_from_end(self._log_end_offset)
        self._load_producer_state(None, now)

    @guarded("truncate")
    def truncate_fully_and_start_at(self, offset: int, *, now_ms: int | None = None) -> None:
        """Drop every segment and restart the log empty at ``offset``."""
        self._check_open()
        now = self._now(now_ms) if (now_ms is not None or self._clock) else 0
        self._remove_segments(len(self.segments), now)
        self._add_segment(offset, now)
        self._log_start_offset = offset
        self._after_truncation()
        self.epochs.clear()
        self.producer_state.delete_snapshots_above(-1)
        self.producer_state.reset(offset)

    def _after_truncation(self) -> None:
        self._log_end_offset = self.segments[-1].next_offset
        self.recovery_point = min(self.recovery_point, self._log_end_offset)
        self._high_watermark = min(self._high_watermark, self._log_end_offset)
        self._log_start_offset = min(self._log_start_offset, self._log_end_offset)
        self.first_dirty_offset = min(self.first_dirty_offset, self._log_end_offset)
        if self._last_stable_offset is not None:
            self._last_stable_offset = min(self._last_stable_offset, self._log_end_offset)

    # -- lifecycle -----------------------------------------------------------------------
    @guarded("close")
    def close(self, *, bulk=None) -> None:
        """Flush and close every file (a clean close: indexes get their final entries).
        With ``bulk`` (``LogManager.shutdown``) the files are written and their syncs left
        to the bulk's commit (:meth:`flush`)."""
        if self.closed:
            return
        self.segments[-1].on_become_inactive()
        self.flush(bulk=bulk)
        self.producer_state.take_snapshot(self._log_end_offset, bulk=bulk)
        self.segments[-1].flush(bulk=bulk)
        for seg in self.segments:
            seg.close()
        self.delete_pending(0, force=True)
        self.closed = True

    def close_without_flush(self) -> None:
        """Close descriptors only (used by crash simulations, shutdown of deleted logs and a
        failed log dir, where no check of the failure channel may stop it)."""
        for seg in self.segments:
            seg.close()
        self._delete_pending(0, True)
        self.closed = True

    def delete(self) -> None:
        """Close and remove the partition directory and everything in it."""
        import shutil
        self.close_without_flush()
        shutil.rmtree(self.dir, ignore_errors=True)

    def statistics(self) -> dict:
        return {
            "topic": self.topic, "partition": self.partition,
            "segments": len(self.segments), "size_bytes": self.size,
            "log_start_offset": self._log_start_offset, "log_end_offset": self._log_end_offset,
            "high_watermark": self._high_watermark, "last_stable_offset": self.last_stable_offset,
            "recovery_point": self.recovery_point, "first_dirty_offset": self.first_dirty_offset,
            "pending_deletes": len(self._pending_deletes),
            "latest_epoch": self.epochs.latest_epoch, "epoch_entries": len(self.epochs),
            **self.recovery_stats,
        }


def _marker_of(buf, pos: int, header) -> tuple[bool, int] | None:
    """``(is_commit, coordinator_epoch)`` of a transaction marker batch, else None."""
    if not header.is_transactional:
        return None
    try:
        recs = rb.decode_records(buf, pos, header)
        return rb.parse_control_record(recs[0]) if recs else None
    except (InvalidRecord, CorruptRecord):
        return None
