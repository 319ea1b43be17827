"""Sparse per-segment indexes: ``.index`` (offset -> position) and ``.timeindex``.

On-disk formats are Kafka's, so a segment directory can be inspected with Kafka's
``kafka-dump-log.sh``:

* ``.index``: 8-byte entries, big-endian ``int32 relative_offset, int32 position``.
  An entry maps the *last* offset of a batch to the file position of that batch (as
  Kafka's ``LogSegment.append`` does); one is added every ``index.interval.bytes``.
* ``.timeindex``: 12-byte entries, big-endian ``int64 timestamp, int32 relative_offset``;
  an entry is added only when the segment's max timestamp grows, so timestamps and
  offsets are both strictly increasing.

Unlike Kafka the files are not preallocated nor memory-mapped: entries are appended
with ``write`` and mirrored in two in-memory ``array('q')`` columns that ``bisect``
searches.  The columns are loaded lazily on first use, so opening a log after a clean
shutdown reads no index at all.  A file whose size is not a multiple of the entry size,
or whose entries are not increasing, raises :class:`CorruptIndex`; the segment then
rebuilds it from the log.  "Full" means ``segment.index.bytes`` worth of entries,
which makes the segment roll.
"""
from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right, bisect_left
from pathlib import Path

from .errors import LogError
from .failure import named
from .open_files import FileHandle, OpenFiles


class CorruptIndex(LogError):
    """An index file is inconsistent; it must be rebuilt from its segment."""


class _Index:
    entry = struct.Struct(">ii")

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int,
                 files: OpenFiles | None = None):
        # opened on the first write, through the log's bounded set of open files
        self._file = FileHandle(path, os.O_RDWR | os.O_CREAT | os.O_APPEND,
                                files if files is not None else OpenFiles())
        self._dirty = False     # written since the last fsync
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.entry.size)
        self._keys: array | None = None  # first column (offsets or timestamps)
        self._vals: array | None = None

    # -- file handling -------------------------------------------------------
    @property
    def path(self) -> Path:
        return self._file.path

    @path.setter
    def path(self, value: Path) -> None:
        self._file.path = Path(value)

    def _open(self) -> int:
        self._dirty = True      # every caller changes the file
        return self._file.fd

    def _load(self) -> None:
        if self._keys is not None:
            return
        keys, vals = array("q"), array("q")
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        if len(data) % self.entry.size:
            raise CorruptIndex(f"{self.path}: size {len(data)} is not a multiple of {self.entry.size}")
        for a, b in self.entry.iter_unpack(data):
            self._decode_into(a, b, keys, vals)
        for i in range(1, len(keys)):
            if keys[i] <= keys[i - 1] or vals[i] < vals[i - 1]:
                raise CorruptIndex(f"{self.path}: entries not increasing at {i}")
        self._keys, self._vals = keys, vals

    def _decode_into(self, a, b, keys, vals):  # pragma: no cover - overridden
        raise NotImplementedError

    def _write(self, key: int, val: int, encoded: bytes) -> None:
        """Append an entry (``encoded`` as the file holds it) to the file and the columns."""
        self._put(encoded)
        self._keys.append(key)
        self._vals.append(val)

    def _put(self, data: bytes) -> None:
        """Append ``data`` (whole entries) to the file."""
        self._dirty = True
        try:
            fd = self._file.fd
            written = os.write(fd, data)
            while written < len(data):
                written += os.write(fd, memoryview(data)[written:])
        except OSError as exc:
            raise named(exc, self.path) from exc

    def _truncate_entries(self, n: int) -> None:
        self._load()
        if n >= len(self._keys):
            return
        del self._keys[n:]
        del self._vals[n:]
        os.ftruncate(self._open(), n * self.entry.size)

    # -- public -------------------------------------------------------------
    def __len__(self) -> int:
        self._load()
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        keys = self._keys
        if keys is None:
            self._load()
            keys = self._keys
        return len(keys) >= self.max_entries

    def known_missing(self) -> None:
        """The file does not exist (the owner listed the directory): no entries, as
        loading would find, without trying to read it."""
        if self._keys is None:
            self._keys, self._vals = array("q"), array("q")

    def check(self) -> None:
        """Load and sanity-check the file now (raises CorruptIndex)."""
        self._load()

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._keys, self._vals = array("q"), array("q")
        os.ftruncate(self._open(), 0)

    def flush(self, *, bulk=None) -> None:
        if self._dirty:
            if bulk is not None:
                bulk.file(self.path)     # synced by the BulkSync's commit
            else:
                os.fsync(self._file.fd)
            self._dirty = False

    def close(self) -> None:
        self._file.close()

    def unload(self) -> None:
        """Forget the in-memory columns (they are re-read on next use)."""
        self._keys = self._vals = None

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self._file.path = Path(path)

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class OffsetIndex(_Index):
    """Sparse map from a batch's last offset to the file position of the batch."""

    entry = struct.Struct(">ii")

    def _decode_into(self, rel, pos, keys, vals):
        keys.append(self.base_offset + rel)
        vals.append(pos)

    def append(self, offset: int, position: int) -> None:
        keys = self._keys
        if keys is None:
            self._load()
            keys = self._keys
        if keys and (offset <= keys[-1] or position <= self._vals[-1]):
            return  # never write a non-increasing entry
        self._write(offset, position, self.entry.pack(offset - self.base_offset, position))

    def extend(self, entries: list) -> None:
        """:meth:`append` for each (offset, position) in turn, written with one ``write``
        (the entries of one segment append: a run of batches)."""
        if len(entries) == 1:
            self.append(*entries[0])
            return
        keys = self._keys
        if keys is None:
            self._load()
            keys = self._keys
        vals = self._vals
        last_key, last_val = (keys[-1], vals[-1]) if keys else (None, None)
        pack = self.entry.pack
        base = self.base_offset
        data = []
        new_keys, new_vals = [], []
        for offset, position in entries:
            if last_key is not None and (offset <= last_key or position <= last_val):
                continue    # never write a non-increasing entry
            data.append(pack(offset - base, position))
            new_keys.append(offset)
            new_vals.append(position)
            last_key, last_val = offset, position
        if not data:
            return
        self._put(b"".join(data))
        keys.extend(new_keys)
        vals.extend(new_vals)

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with entry.offset <= offset, else (base_offset, 0).

        Because entries name batches by their last offset, the batch at the returned
        position ends at or before ``offset``; a forward scan from there finds the
        batch that contains ``offset``.
        """
        self._load()
        i = bisect_right(self._keys, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._keys[i], self._vals[i]

    def position_at_or_before(self, position: int) -> int:
        """The start of the last indexed batch at or before file ``position`` (0: none)."""
        self._load()
        i = bisect_right(self._vals, position) - 1
        return self._vals[i] if i >= 0 else 0

    def last_within(self, position: int, below_offset: int | None) -> tuple[int, int] | None:
        """The last entry at or before file ``position`` whose offset is below
        ``below_offset`` (None: any), or None. Every batch before its position is whole and
        ends before it; the fetch path skips them without reading their headers."""
        self._load()
        i = bisect_right(self._vals, position)
        if below_offset is not None:
            i = min(i, bisect_left(self._keys, below_offset))
        return (self._keys[i - 1], self._vals[i - 1]) if i > 0 else None

    def lookup_before(self, offset: int) -> tuple[int, int]:
        """Largest entry with entry.offset < offset (a batch entirely before offset)."""
        self._load()
        i = bisect_left(self._keys, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._keys[i], self._vals[i]

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or after ``position`` (the log was cut there)."""
        self._load()
        self._truncate_entries(bisect_left(self._vals, position))

    def entries(self) -> list[tuple[int, int]]:
        self._load()
        return list(zip(self._keys, self._vals))

    @property
    def last_entry(self) -> tuple[int, int] | None:
        self._load()
        return (self._keys[-1], self._vals[-1]) if self._keys else None


class TimeIndex(_Index):
    """Sparse map from the segment's max timestamp so far to the offset carrying it."""

    entry = struct.Struct(">qi")

    def _decode_into(self, ts, rel, keys, vals):
        keys.append(ts)
        vals.append(self.base_offset + rel)

    def maybe_append(self, timestamp: int, offset: int) -> None:
        keys = self._keys
        if keys is None:
            self._load()
            keys = self._keys
        if keys:
            if timestamp <= keys[-1] or offset < self._vals[-1]:
                return
            if offset == self._vals[-1]:
                # Same batch, larger timestamp: replace the last entry.
                self._truncate_entries(len(keys) - 1)
        self._write(timestamp, offset, self.entry.pack(timestamp, offset - self.base_offset))

    def lookup_before(self, timestamp: int) -> int | None:
        """Offset of the largest entry with entry.timestamp < timestamp, else None.

        Every batch up to and including that offset has a max timestamp below the
        target, so a search for the first timestamp >= target can start after it.
        """
        self._load()
        i = bisect_left(self._keys, timestamp) - 1
        return None if i < 0 else self._vals[i]

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries whose offset is >= ``offset``."""
        self._load()
        self._truncate_entries(bisect_left(self._vals, offset))

    def entries(self) -> list[tuple[int, int]]:
        self._load()
        return list(zip(self._keys, self._vals))

    @property
    def last_entry(self) -> tuple[int, int] | None:
        self._load()
        return (self._keys[-1], self._vals[-1]) if self._keys else None
