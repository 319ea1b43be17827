"""One log segment: ``<base>.log`` plus its ``.index``, ``.timeindex`` and ``.txnindex``.

File names are the segment's base offset as 20 zero-padded digits, as in Kafka
(``00000000000000001234.log``).  The ``.log`` file holds v2 record batches exactly as
they travel on the wire (offsets already assigned); see :mod:`kbroker.log.index`
for the index formats and :mod:`kbroker.log.txnindex` for the aborted-transaction index
(a file that exists only once the segment holds an abort marker).  A name may carry a suffix while the segment is in transit:
``.cleaned`` (compactor output being written), ``.swap`` (output complete, about to
replace the original) and ``.deleted`` (waiting for ``file.delete.delay.ms``).

Invariants of a segment
* batches tile the file from position 0 with no holes; offsets increase;
* every offset in the segment is in ``[base_offset, base_offset + 2**31)`` so that
  relative offsets fit the index's int32;
* the max timestamp of the batches up to the last ``.index`` entry's batch is the
  timestamp of the last ``.timeindex`` entry, so the exact max timestamp and next
  offset can be found by scanning only the batches after the last index entry.

``LogSegment`` owns its files, opened on use through the log manager's bounded
:class:`~kbroker.log.open_files.OpenFiles` (an idle segment holds no descriptor once
evicted; ``fd`` is asked for right before each system call, never kept); fsyncs happen only
for a file written since its last one, so closing an idle log opens nothing.
:class:`~kbroker.log.partition.PartitionLog` owns the segments.  Nothing here looks at the
clock.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from kbroker.common.fileio import as_path
from kbroker.wire import records as rb
from kbroker.wire.errors import CorruptRecord

from .errors import KafkaStorageError
from .failure import named
from .index import CorruptIndex, OffsetIndex, TimeIndex
from .open_files import FileHandle, OpenFiles
from .txnindex import TransactionIndex

INT32_MAX = (1 << 31) - 1
_OFFSET_AND_SIZE = struct.Struct(">qi")  # base_offset, batch_length: the 12-byte log overhead
_DATA_CHUNK = 1 << 20
_LOG_OVERHEAD = rb.LOG_OVERHEAD
_HEADER_CHUNK = 8192
# a batch header's base offset, batch length, magic and last offset delta (find's scan)
_SKIP_HEAD = struct.Struct(">qi4xb6xi")
_FIRST_BATCH = object()     # should_roll: time from the segment's own first batch


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class ScanError(NamedTuple):
    position: int
    reason: str


class BatchScan:
    """Iterate the batches of a file region; stops at the first damaged one.

    After iteration ``error`` is ``None`` when the region ended exactly on a batch
    boundary, else a :class:`ScanError` naming the position of the first batch that
    is torn (runs past the end) or corrupt (bad header, bad CRC when ``verify``).
    Yields ``(position, header, data)`` where ``data`` is a memoryview of the whole
    batch when ``verify`` or ``want_data``, else ``None``.
    """

    def __init__(self, fd, start: int, end: int, *, verify: bool = False,
                 want_data: bool = False):
        # an ``OpenFd`` (kbroker.log.open_files) is held for the scan's life: no eviction
        # can close the descriptor between two reads
        self._pin = fd if not isinstance(fd, int) else None
        self.fd = fd if isinstance(fd, int) else fd.fd
        self.start, self.end = start, end
        self.verify, self.want_data = verify, want_data or verify
        self.error: ScanError | None = None

    def __iter__(self) -> Iterator[tuple[int, "rb.BatchHeader", memoryview | None]]:
        fd, end, hsize = self.fd, self.end, rb.BATCH_HEADER_SIZE
        chunk = _DATA_CHUNK if self.want_data else _HEADER_CHUNK
        pos = self.start
        buf, bstart = b"", pos
        while pos < end:
            if end - pos < hsize:
                self.error = ScanError(pos, "torn header")
                return
            if bstart + len(buf) - pos < hsize or pos < bstart:
                buf, bstart = os.pread(fd, min(chunk, end - pos), pos), pos
                if len(buf) < hsize:
                    self.error = ScanError(pos, "short read")
                    return
            rel = pos - bstart
            try:
                h = rb.parse_header(buf, rel)
            except CorruptRecord as exc:
                self.error = ScanError(pos, f"bad header: {exc}")
                return
            size = h.size
            if size < hsize:
                self.error = ScanError(pos, "batch length too small")
                return
            if pos + size > end:
                self.error = ScanError(pos, "torn batch")
                return
            data = None
            if self.want_data:
                if rel + size > len(buf):
                    buf, bstart = os.pread(fd, max(min(chunk, end - pos), size), pos), pos
                    rel = 0
                    if len(buf) < size:
                        self.error = ScanError(pos, "short read")
                        return
                if self.verify:
                    try:
                        rb.verify_crc(buf, rel, h)
                    except CorruptRecord as exc:
                        self.error = ScanError(pos, f"bad crc: {exc}")
                        return
                data = memoryview(buf)[rel:rel + size]
            yield pos, h, data
            pos += size


class RecoveryResult(NamedTuple):
    valid_bytes: int
    truncated_bytes: int
    batches: int
    error: ScanError | None


class LogSegment:
    """A ``.log`` file of whole batches with its two sparse indexes."""

    def __init__(self, directory: Path, base_offset: int, *, index_interval_bytes: int,
                 max_index_bytes: int, created_ms: int = 0, suffix: str = "",
                 files: OpenFiles | None = None):
        self.dir = as_path(directory)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.suffix = suffix
        files = files if files is not None else OpenFiles()
        # the files' paths as strings (their handles make a Path only when asked)
        stem = f"{self.dir}{os.sep}{segment_name(base_offset)}"
        log_path = f"{stem}.log{suffix}"
        self._file = FileHandle(log_path, os.O_RDWR | os.O_CREAT, files)
        try:
            self.size = os.stat(log_path).st_size
        except FileNotFoundError:       # a new segment: the file exists from now on
            os.close(os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644))
            self.size = 0
        self._dirty = False             # written since the last fsync
        self.offset_index = OffsetIndex(f"{stem}.index{suffix}", base_offset,
                                        max_index_bytes, files)
        self.time_index = TimeIndex(f"{stem}.timeindex{suffix}", base_offset,
                                    max_index_bytes, files)
        self.txn_index = TransactionIndex(f"{stem}.txnindex{suffix}")
        self.created_ms = created_ms
        self.bytes_since_last_index_entry = 0
        self._next_offset: int | None = base_offset if self.size == 0 else None
        self._max_ts: tuple[int, int] | None = (-1, -1) if self.size == 0 else None
        self._first_batch_ts: int | None = None
        self._last_epoch: int | None = None
        # (position, header) of the batch last appended, while it is still the file's last:
        # a consumer at the log end asks for it next (find() answers without a scan)
        self._tail: tuple[int, "rb.BatchHeader"] | None = None
        self.closed = False

    def __repr__(self) -> str:
        return f"<LogSegment {self.log_path.name} size={self.size}>"

    @property
    def log_path(self) -> Path:
        return self._file.path

    @property
    def fd(self) -> int:
        """The ``.log`` file's descriptor, opened now if it is not: use it at once."""
        return self._file.fd

    def pin(self):
        """The ``.log`` file's open descriptor object (``OpenFd``), kept open while held:
        what a ``FileRegion`` holds until its bytes are sent."""
        return self._file.pin()

    @property
    def holds_descriptor(self) -> bool:
        """Whether the ``.log`` file is open now (tests, statistics)."""
        return self._file.is_open

    # -- lazily computed tail state -----------------------------------------------
    def _load_tail(self) -> None:
        """Find next offset and max timestamp from the indexes plus a short scan."""
        try:
            last = self.offset_index.last_entry
            tlast = self.time_index.last_entry
        except CorruptIndex:
            self.rebuild_indexes()
            return
        start = last[1] if last else 0
        if start >= self.size:
            self.rebuild_indexes()
            return
        max_ts, max_off = tlast if tlast else (-1, -1)
        nxt = self.base_offset
        scan = BatchScan(self.pin(), start, self.size)
        for _, h, _ in scan:
            nxt = h.next_offset
            if h.max_timestamp > max_ts:
                max_ts, max_off = h.max_timestamp, h.last_offset
        if scan.error is not None:
            # A trusted segment whose tail does not parse: treat as needing recovery.
            raise KafkaStorageError(f"{self.log_path}: {scan.error.reason} at {scan.error.position}")
        self._next_offset = nxt
        self._max_ts = (max_ts, max_off)

    @property
    def next_offset(self) -> int:
        """One past the last offset stored in this segment (base offset when empty)."""
        if self._next_offset is None:
            self._load_tail()
        return self._next_offset

    @property
    def max_timestamp(self) -> int:
        if self._max_ts is None:
            self._load_tail()
        return self._max_ts[0]

    @property
    def offset_of_max_timestamp(self) -> int:
        if self._max_ts is None:
            self._load_tail()
        return self._max_ts[1]

    @property
    def first_batch_timestamp(self) -> int | None:
        """Max timestamp of the first batch (Kafka rolls on time relative to it)."""
        if self._first_batch_ts is None and self.size > 0:
            h = self.read_header(0)
            self._first_batch_ts = h.max_timestamp if h is not None else None
        return self._first_batch_ts

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    # -- reading ------------------------------------------------------------------
    def read_header(self, position: int) -> "rb.BatchHeader | None":
        data = os.pread(self.fd, rb.BATCH_HEADER_SIZE, position)
        if len(data) < rb.BATCH_HEADER_SIZE:
            return None
        return rb.parse_header(data, 0)

    def read_batch(self, position: int, header: "rb.BatchHeader") -> bytes:
        data = os.pread(self.fd, header.size, position)
        if len(data) != header.size:
            raise KafkaStorageError(f"{self.log_path}: short read at {position}")
        return data

    def batches(self, start: int = 0, *, verify: bool = False,
                want_data: bool = False) -> BatchScan:
        return BatchScan(self.pin(), start, self.size, verify=verify, want_data=want_data)

    def find(self, offset: int) -> tuple[int, "rb.BatchHeader"] | None:
        """(position, header) of the first batch whose last offset is >= ``offset``."""
        if self.size == 0:
            return None
        tail = self._tail
        if tail is not None:
            pos, h = tail
            # batches are in offset order, so the last one holds every offset from its base
            # on; it is still the last while the file ends where it does
            if h.base_offset <= offset <= h.last_offset and pos + h.size == self.size:
                return tail
        try:
            _, start = self.offset_index.lookup(offset)
        except CorruptIndex:
            self.rebuild_indexes()
            _, start = self.offset_index.lookup(offset)
        # the batches from there read as BatchScan would (one chunk of headers, stopping at
        # the first torn or damaged one), their headers decoded only for the one returned
        fd, end, hsize = self.fd, self.size, rb.BATCH_HEADER_SIZE
        pos = start
        buf, bstart = b"", pos
        while pos < end:
            if end - pos < hsize:
                return None
            rel = pos - bstart
            if rel + hsize > len(buf):
                buf, bstart, rel = os.pread(fd, min(_HEADER_CHUNK, end - pos), pos), pos, 0
                if len(buf) < hsize:
                    return None
            base, size, magic, last_delta = _SKIP_HEAD.unpack_from(buf, rel)
            size += _LOG_OVERHEAD
            if magic != rb.MAGIC or size < hsize or pos + size > end:
                return None
            if base + last_delta >= offset:
                return pos, rb.parse_header(buf, rel)
            pos += size
        return None

    def region(self, offset: int, max_bytes: int, max_offset: int | None) -> tuple[int, int] | None:
        """(position, length) of whole batches starting with the one holding ``offset``.

        At least one batch when one qualifies, more while they fit in ``max_bytes``;
        batches whose base offset is >= ``max_offset`` are never included.
        """
        found = self.region_of(offset, max_bytes, max_offset)
        return found[:2] if found is not None else None

    def region_of(self, offset: int, max_bytes: int,
                  max_offset: int | None) -> tuple[int, int, int] | None:
        """:meth:`region` and the base offset of its first batch: (position, length, base)."""
        found = self.find(offset)
        if found is None:
            return None
        start, h = found
        if max_offset is not None and h.base_offset >= max_offset:
            return None
        length = h.size
        pos = start + length
        if pos < self.size and length < max_bytes:
            # whole batches the offset index vouches for are taken without reading their
            # headers: a consumer behind by many small batches used to cost one pread
            # each (issue 32: ~700 per fetch of 1 KiB batches); only those after the last
            # usable index entry are read one by one
            try:
                entry = self.offset_index.last_within(min(start + max_bytes, self.size),
                                                      max_offset)
            except CorruptIndex:
                entry = None
            if entry is not None and entry[1] > pos:
                length, pos = entry[1] - start, entry[1]
        while pos < self.size:
            head = os.pread(self.fd, _OFFSET_AND_SIZE.size, pos)
            if len(head) < _OFFSET_AND_SIZE.size:
                break
            base, blen = _OFFSET_AND_SIZE.unpack(head)
            size = blen + rb.LOG_OVERHEAD
            if length + size > max_bytes or (max_offset is not None and base >= max_offset):
                break
            length += size
            pos += size
        return start, length, h.base_offset

    def find_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp``."""
        if self.size == 0 or self.max_timestamp < timestamp:
            return None
        try:
            after = self.time_index.lookup_before(timestamp)
            start = self.offset_index.lookup(after)[1] if after is not None else 0
        except CorruptIndex:
            self.rebuild_indexes()
            return self.find_by_timestamp(timestamp)
        for pos, h, data in self.batches(start):
            if h.max_timestamp < timestamp:
                continue
            batch = self.read_batch(pos, h)
            for rec in rb.decode_records(batch, 0, h):
                ts = h.max_timestamp if h.timestamp_type == rb.TIMESTAMP_LOG_APPEND_TIME else rec.timestamp
                if ts >= timestamp:
                    return rec.offset, ts
        return None

    # -- writing ------------------------------------------------------------------
    def append(self, buf, headers: list["rb.BatchHeader"]) -> None:
        """Write ``buf`` (whole batches, offsets assigned) at the end; update indexes.
        ``headers`` are the batches' headers exactly as ``buf`` holds them.

        A write that fails (the batch or an index entry: a full disk may refuse either)
        is undone as far as the disk lets it -- the log cut back to where it ended, the
        index entries of this append dropped -- and the ``OSError`` raised, naming the file,
        for the owner's failure channel (:mod:`kbroker.log.failure`)."""
        position = self.size
        since = self.bytes_since_last_index_entry
        view = memoryview(buf)
        total = len(view)
        written = 0
        self._dirty = True
        try:
            fd = self._file.fd
            while written < total:
                written += os.pwrite(fd, view[written:] if written else view, position + written)
        except OSError as exc:
            self._undo_append(position, None, since)
            raise named(exc, self.log_path) from exc
        max_ts, max_off = self._max_ts if self._max_ts is not None else (self.max_timestamp, self.offset_of_max_timestamp)
        pos = position
        interval = self.index_interval_bytes
        entries = []        # the offset index's, written together, then the time index's
        times = []
        try:
            for h in headers:
                size = h[1] + _LOG_OVERHEAD
                if h[8] > max_ts:
                    max_ts, max_off = h[8], h[0] + h[6]
                if since > interval:
                    entries.append((h[0] + h[6], pos))
                    times.append((max_ts, max_off))
                    since = 0
                pos += size
                since += size
            if entries:
                self.offset_index.extend(entries)
                for t in times:
                    self.time_index.maybe_append(*t)
        except OSError:
            self._undo_append(position, headers[0][0], self.bytes_since_last_index_entry)
            raise
        self.bytes_since_last_index_entry = since
        if position == 0 and headers:
            self._first_batch_ts = headers[0][8]
        self.size = pos
        if headers:
            last = headers[-1]
            self._tail = (pos - last[1] - _LOG_OVERHEAD, last)
            self._next_offset = last[0] + last[6] + 1
        self._max_ts = (max_ts, max_off)

    def should_roll(self, size_after: int, max_ts: int, last_offset: int, now: int, config,
                    first_ts=_FIRST_BATCH) -> bool:
        """Whether a write leaving this segment at ``size_after`` bytes, ending at
        ``last_offset`` with max timestamp ``max_ts``, must go to a new segment instead
        (Kafka's ``LogSegment.shouldRoll``): ``segment.bytes``, ``segment.ms`` less the
        jitter since ``first_ts`` (by default this segment's first batch's max timestamp;
        without one, since the segment was created), a full index, or an offset beyond
        the index's 32-bit relative range. ``config``: the log's ``LogConfig``."""
        if first_ts is _FIRST_BATCH:
            first_ts = self._first_batch_ts
            if first_ts is None:
                first_ts = self.first_batch_timestamp
        waited = (max_ts - first_ts) if first_ts is not None and first_ts >= 0 else now - self.created_ms
        return (size_after > config.segment_bytes
                or waited > config.segment_ms - config.segment_jitter_ms
                or last_offset - self.base_offset > INT32_MAX
                or self.offset_index.is_full or self.time_index.is_full)

    def _undo_append(self, position: int, first_offset: int | None, since: int) -> None:
        """Take back a failed append: shrinking a file needs no free space, so this works on
        a full disk; when the disk refuses even that, recovery drops the partial batch on the
        next start (the failed directory gets no clean-shutdown marker)."""
        self.bytes_since_last_index_entry = since
        try:
            self._dirty = True
            os.ftruncate(self.fd, position)
            if first_offset is not None:
                self.offset_index.truncate_to_position(position)
                self.time_index.truncate_to_offset(first_offset)
        except (OSError, CorruptIndex):
            pass

    def on_become_inactive(self) -> None:
        """Record the final max timestamp in the time index (as Kafka does on roll)."""
        if self.size and self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def start_afresh(self) -> None:
        """Empty a stale file found under a new segment's name (its data is not ours)."""
        self._dirty = True
        os.ftruncate(self.fd, 0)
        self.size = 0
        self._tail = None
        self.rebuild_indexes()

    def rebuild_indexes(self) -> None:
        """Recreate both indexes and the tail state from the log (no validation)."""
        self.offset_index.reset()
        self.time_index.reset()
        self._index_from_scan(self.batches(0))

    def _index_from_scan(self, scan: BatchScan) -> int:
        max_ts, max_off = -1, -1
        nxt, count, since = self.base_offset, 0, 0
        end = 0
        for pos, h, _ in scan:
            if h.max_timestamp > max_ts:
                max_ts, max_off = h.max_timestamp, h.last_offset
            if since > self.index_interval_bytes:
                self.offset_index.append(h.last_offset, pos)
                self.time_index.maybe_append(max_ts, max_off)
                since = 0
            since += h.size
            nxt = h.next_offset
            count += 1
            end = pos + h.size
            if count == 1:
                self._first_batch_ts = h.max_timestamp
        self.bytes_since_last_index_entry = since
        self._next_offset = nxt
        self._max_ts = (max_ts, max_off)
        return end

    def recover(self, *, gap_limit: int = 0, prev_epoch: int = -1,
                on_batch: Callable[["rb.BatchHeader"], None] | None = None) -> RecoveryResult:
        """Re-validate every batch (size, CRC32C, offsets) and rebuild the indexes.

        The file is cut at the first batch that is torn, fails its CRC, does not start
        where the previous batch ended (a forward gap is allowed only up to
        ``gap_limit``: the compacted part of the log, or data that was fsynced as
        written, e.g. a follower's copy of a compacted leader log), or leaves the
        segment's relative offset range.  The partition leader epoch is outside the CRC
        and not checked (callers may legitimately mix -1 and real epochs), as in Kafka.
        ``on_batch`` sees the header of every batch kept, in order (the owner rebuilds
        its leader-epoch cache from them).
        """
        self.offset_index.reset()
        self.time_index.reset()
        self._first_batch_ts = None
        self._tail = None
        self._dirty = True      # what is kept may not have reached the disk before a crash
        scan = self.batches(0, verify=True)
        checked = self._checked(scan, gap_limit, prev_epoch, on_batch)
        valid = self._index_from_scan(checked)
        err = scan.error or checked.error
        truncated = self.size - valid
        if truncated:
            self._dirty = True
            os.ftruncate(self.fd, valid)
            self.size = valid
        return RecoveryResult(valid, truncated, checked.count, err)

    def _checked(self, scan: BatchScan, gap_limit: int, prev_epoch: int, on_batch=None):
        seg = self

        class Checked:
            error: ScanError | None = None
            count = 0

            def __iter__(self):
                expected, epoch = seg.base_offset, prev_epoch
                for pos, h, data in scan:
                    bad = None
                    if h.base_offset != expected and not (expected < h.base_offset <= max(gap_limit, expected)):
                        bad = f"offset {h.base_offset} where {expected} was expected"
                    elif h.last_offset - seg.base_offset > INT32_MAX or h.last_offset < h.base_offset:
                        bad = "offset outside the segment's range"
                    if bad:
                        self.error = ScanError(pos, bad)
                        return
                    expected, epoch = h.next_offset, h.partition_leader_epoch
                    self.count += 1
                    if on_batch is not None:
                        on_batch(h)
                    yield pos, h, data
                seg._last_epoch = epoch

        return Checked()

    @property
    def last_epoch(self) -> int:
        """Partition leader epoch of the last batch (-1 when unknown or empty)."""
        if self._last_epoch is None:
            epoch = -1
            for _, h, _ in self.batches(self.offset_index.lookup(self.next_offset)[1]):
                epoch = h.partition_leader_epoch
            self._last_epoch = epoch
        return self._last_epoch

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding ``offset`` and everything after; returns bytes cut."""
        found = self.find(offset)
        if found is None:
            return 0
        pos = found[0]
        cut = self.size - pos
        self._dirty = True
        os.ftruncate(self.fd, pos)
        self.size = pos
        self._tail = None
        self.offset_index.truncate_to_position(pos)
        self.time_index.truncate_to_offset(found[1].base_offset)
        self.txn_index.truncate_to(found[1].base_offset)
        self._next_offset = self._max_ts = None
        self._last_epoch = None
        if pos == 0:
            self._next_offset, self._max_ts, self._first_batch_ts = self.base_offset, (-1, -1), None
        self.bytes_since_last_index_entry = 0
        return cut

    # -- file management ------------------------------------------------------------
    def flush(self, *, indexes: bool = True, bulk=None) -> None:
        """fsync what was written since the last flush (a file written and then evicted
        is opened again for it: fsync works on the file, not the descriptor). With ``bulk``
        (a ``BulkSync``) the files are recorded there instead, synced by its commit."""
        if self._dirty:
            if bulk is not None:
                bulk.file(self.log_path)
            else:
                os.fsync(self.fd)
            self._dirty = False
        self.txn_index.flush(bulk=bulk)
        if indexes:
            self.offset_index.flush(bulk=bulk)
            self.time_index.flush(bulk=bulk)

    def change_suffix(self, suffix: str) -> None:
        """Rename all three files to carry ``suffix`` (indexes first, log last)."""
        name = segment_name(self.base_offset)
        for idx, kind in ((self.offset_index, "index"), (self.time_index, "timeindex")):
            if idx.path.exists():
                idx.rename(self.dir / f"{name}.{kind}{suffix}")
            else:
                idx.path = self.dir / f"{name}.{kind}{suffix}"
        self.txn_index.rename(self.dir / f"{name}.txnindex{suffix}")
        new_log = self.dir / f"{name}.log{suffix}"
        os.replace(self.log_path, new_log)
        self._file.path = new_log
        self.suffix = suffix

    def close_indexes(self) -> None:
        self.offset_index.close()
        self.time_index.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.close_indexes()
        self._file.close()

    def delete_files(self) -> None:
        """Close and unlink all three files."""
        self.close()
        for p in (self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
