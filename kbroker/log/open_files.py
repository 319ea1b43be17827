"""Segment and index files opened on use, at most ``limit`` at a time (issue 32).

A broker with 100,000 partitions cannot hold a descriptor per segment file: the process's
open-file limit (RLIMIT_NOFILE, often 20,000 or less) is shared with client connections.
Kafka keeps every segment's channel open and maps two indexes per partition; kbroker opens
a file when a read or write needs it and keeps the most recently used ``limit`` open in one
LRU per :class:`~kbroker.log.manager.LogManager`. An idle partition holds no descriptor once
it has been evicted, and ``LogManager.load`` closes what recovery opened.

Rules kept:

* A caller asks for ``handle.fd`` right before each system call and never keeps the number:
  the file may be closed by an eviction between two calls and opened again (by its current
  path: a rename updates ``handle.path``).
* Zero copy survives eviction: :meth:`FileHandle.pin` returns the open descriptor *object*
  (a :class:`OpenFd`); a ``FileRegion`` waiting for ``sendfile`` keeps it, and the
  descriptor is closed only when the LRU and every such region have let go of it
  (CPython's reference counting closes it at once; nothing is left to the garbage
  collector's timing, as no cycle holds one). So the bound is on idle files: regions in
  flight may hold a few more for as long as their answer takes to send.
* ``limit=None`` never evicts (a log opened outside a manager, e.g. by tests and tools).

No I/O beyond ``os.open``/``os.close``; no clock.
"""
from __future__ import annotations

import os
import resource
from collections import OrderedDict
from pathlib import Path

from kbroker.common.fileio import LazyPath

MIN_LIMIT = 64


def default_limit() -> int:
    """A quarter of the process's open-file limit (the rest is for connections, the
    metadata log and the interpreter), at least :data:`MIN_LIMIT`."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        soft = 1024
    if soft == resource.RLIM_INFINITY or soft <= 0:
        soft = 1 << 20
    return max(MIN_LIMIT, soft // 4)


class OpenFd:
    """One open descriptor; closed when the last reference to this object goes."""

    __slots__ = ("fd",)

    def __init__(self, fd: int):
        self.fd = fd

    def __del__(self):
        try:
            os.close(self.fd)
        except OSError:
            pass


class OpenFiles:
    """The LRU of open :class:`FileHandle` s of one log manager, at most ``limit`` open."""

    def __init__(self, limit: int | None = None):
        self.limit = limit
        self._lru: OrderedDict[FileHandle, None] = OrderedDict()
        self.stats = {"opens": 0, "evictions": 0}

    def _opened(self, handle: "FileHandle") -> None:
        self.stats["opens"] += 1
        lru = self._lru
        lru[handle] = None
        if self.limit is not None:
            while len(lru) > self.limit:
                oldest, _ = lru.popitem(last=False)
                oldest._ref = None
                self.stats["evictions"] += 1

    def _forget(self, handle: "FileHandle") -> None:
        self._lru.pop(handle, None)

    def close_all(self) -> None:
        """Let go of every open file (after loading: recovery touched every partition)."""
        for handle in self._lru:
            handle._ref = None
        self._lru.clear()

    def __len__(self) -> int:
        return len(self._lru)

    def statistics(self) -> dict:
        return {"open": len(self._lru), "limit": self.limit, **self.stats}


class FileHandle:
    """A file of a segment (its ``.log`` or an index), opened on use through ``files``."""

    __slots__ = ("_path", "flags", "files", "_ref", "__weakref__")

    def __init__(self, path: Path | str, flags: int, files: OpenFiles):
        # a str until a caller asks for the Path (a start-up of 100,000 logs makes four
        # handles each and opens almost none: building a Path costs more than the string)
        self._path = path
        self.flags = flags
        self.files = files
        self._ref: OpenFd | None = None

    path = LazyPath()

    @property
    def fd(self) -> int:
        """The open descriptor (opening the file now if needed); use it at once."""
        ref = self._ref
        if ref is not None:
            self.files._lru.move_to_end(self)
            return ref.fd
        return self._open().fd

    @property
    def is_open(self) -> bool:
        return self._ref is not None

    def pin(self) -> OpenFd:
        """The open descriptor object: it stays open while the caller holds it."""
        ref = self._ref
        if ref is not None:
            self.files._lru.move_to_end(self)
            return ref
        return self._open()

    def _open(self) -> OpenFd:
        ref = OpenFd(os.open(self._path, self.flags | os.O_CLOEXEC, 0o644))
        self._ref = ref
        self.files._opened(self)
        return ref

    def close(self) -> None:
        """Let go of the descriptor (closed now unless a region in flight holds it)."""
        if self._ref is not None:
            self.files._forget(self)
            self._ref = None
