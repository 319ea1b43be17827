"""``FileRegion``: a byte range of a segment file, ready for ``os.sendfile``.

A region is what :meth:`PartitionLog.read` returns instead of bytes, so a fetch
never copies record data through Python.  The descriptor stays valid after the
segment is deleted by retention or replaced by the cleaner for at least
``file.delete.delay.ms`` (the segment is renamed, not closed, until then), which is
the window the server has to finish the transfer.
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class FileRegion:
    """``length`` bytes at ``position`` of the open file ``fd`` (whole record batches)."""

    fd: int
    position: int
    length: int
    base_offset: int  # base offset of the first batch in the region

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
