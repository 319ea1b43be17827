"""``FileRegion``: a byte range of a segment file, ready for ``os.sendfile``.

A region is what :meth:`PartitionLog.read` returns instead of bytes, so a fetch
never copies record data through Python.  The descriptor stays valid as long as the
region lives: the region holds the open descriptor object, so neither the log's bound
on open files (:mod:`kbroker.log.open_files`) nor the segment's deletion by retention
or replacement by the cleaner closes it under a transfer in flight.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FileRegion:
    """``length`` bytes at ``position`` of the open file ``fd`` (whole record batches)."""

    fd: int
    position: int
    length: int
    base_offset: int  # base offset of the first batch in the region
    # what keeps ``fd`` open while the region lives (an ``OpenFd`` of
    # kbroker.log.open_files): the log's LRU may let go of the file meanwhile
    holder: object = field(default=None, compare=False, repr=False)

    @property
    def file(self) -> int:
        return self.fd

    def read_bytes(self) -> bytes:
        """Copy the region into memory (tests and non-sendfile paths)."""
        out = bytearray()
        while len(out) < self.length:
            chunk = os.pread(self.fd, self.length - len(out), self.position + len(out))
            if not chunk:
                raise OSError(f"short read of file region at {self.position + len(out)}")
            out += chunk
        return bytes(out)

    def sendfile(self, out_fd: int, offset: int = 0, count: int | None = None) -> int:
        """One ``os.sendfile`` call for part of the region; returns bytes sent."""
        count = self.length - offset if count is None else count
        return os.sendfile(out_fd, self.fd, self.position + offset, count)
