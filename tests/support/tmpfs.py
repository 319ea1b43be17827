"""A small tmpfs that really runs out of space: the failing disk of the log-dir tests.

A tmpfs of ``size`` allocates a page (4 KiB) when a file first needs it, so once
:func:`fill` has taken every page, any write that needs a new one -- a new file's first
bytes, a checkpoint's ``.tmp``, an index file's first entry -- fails with ``ENOSPC``, while a
write into a page a file already holds still succeeds. Mounting needs root (the tests run as
root); a test that cannot mount fails and says so.
"""
from __future__ import annotations

import errno
import subprocess
from contextlib import contextmanager
from pathlib import Path


def try_mount(path: Path, size_mb: int) -> bool:
    """Mount a tmpfs of ``size_mb`` MiB on ``path`` (created if missing); False if refused."""
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                       capture_output=True, text=True)
    return r.returncode == 0


def mount(path: Path, size_mb: int) -> None:
    assert try_mount(path, size_mb), f"this test mounts a tmpfs on {path} (needs root)"


def umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextmanager
def tmpfs(path: Path, size_mb: int = 1):
    """A tmpfs on ``path`` for the ``with`` block, unmounted afterwards."""
    mount(path, size_mb)
    try:
        yield path
    finally:
        umount(path)


def fill(path: Path) -> None:
    """Write ``path`` until its file system has no free page left (ENOSPC), the last partly
    used page included."""
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
