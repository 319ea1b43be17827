"""``.txnindex``: the aborted transactions whose abort marker lies in a segment.

Kafka's ``TransactionIndex`` format, so ``kafka-dump-log.sh`` can read it: 34-byte
big-endian entries ``int16 version (0), int64 producer_id, int64 first_offset,
int64 last_offset, int64 last_stable_offset``. ``first_offset`` is the transaction's first
data offset in the partition, ``last_offset`` the offset of its abort marker, and
``last_stable_offset`` the partition's LSO right after the abort (lets a search stop early).

A read_committed fetch from offset ``f`` whose data ends before ``u`` needs every entry with
``last_offset >= f`` and ``first_offset < u`` (KIP-98): those are the aborted transactions
the consumer must skip. The file is created on the first entry (most segments have none);
entries are mirrored in memory once read. Appends are written at once and fsynced with the
segment. A file whose size is not a multiple of the entry size is cut at the last whole
entry (only a crash during an append can leave that, and recovery rebuilds such
segments' entries anyway).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

from kbroker.common.fileio import LazyPath


_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size   # 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path | str):
        self._path = path       # a str until asked for (see open_files.FileHandle)
        self._entries: list[AbortedTxn] | None = None
        self._dirty = False

    path = LazyPath()

    # -- reading ------------------------------------------------------------------
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = b""
            whole = len(data) - len(data) % ENTRY_SIZE
            self._entries = [AbortedTxn(*_ENTRY.unpack_from(data, pos)[1:])
                             for pos in range(0, whole, ENTRY_SIZE)]
        return self._entries

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping ``[fetch_offset, upper_bound)``; the flag says the search is
        complete (an entry's LSO reached ``upper_bound``: later segments cannot matter)."""
        out = []
        for e in self.entries():
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
                out.append(e)
            if e.last_stable_offset >= upper_bound:
                return out, True
        return out, False

    # -- writing ------------------------------------------------------------------
    def append(self, entry: AbortedTxn) -> None:
        entries = self.entries()
        with open(self.path, "ab") as f:
            f.write(_ENTRY.pack(0, *entry))
        entries.append(entry)
        self._dirty = True

    def reset(self) -> None:
        """Forget every entry (recovery rebuilds them)."""
        self._entries = []
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after ``offset`` (log truncation)."""
        entries = self.entries()
        keep = [e for e in entries if e.last_offset < offset]
        if len(keep) == len(entries):
            return
        self._rewrite(keep)

    def replace_with(self, entries: list[AbortedTxn]) -> None:
        self._rewrite(list(entries))

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        if not entries:
            self.reset()
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            for e in entries:
                f.write(_ENTRY.pack(0, *e))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._entries = entries
        self._dirty = False

    def flush(self, *, bulk=None) -> None:
        if not self._dirty:
            return
        if bulk is not None:
            bulk.file(self.path)         # synced by the BulkSync's commit
            self._dirty = False
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._dirty = False
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def rename(self, path: Path) -> None:
        path = Path(path)
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._entries = []
