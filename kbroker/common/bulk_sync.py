"""Making many written files durable together: one ``syncfs`` per log directory instead of
one ``fsync`` per file.

A clean stop of a node with 100,000 partitions writes a few small files per partition (a
``leader-epoch-checkpoint``, a producer-state snapshot, the tail of a segment). Synced one
``fsync`` at a time, each waits for its own journal commit: minutes. Kafka closes its logs
with ``num.recovery.threads.per.data.dir`` threads per directory; here the writes are made
first and the sync is done once for all of them.

``BulkSync`` collects what the writers would have synced:

- ``file(path)``: data written to ``path`` must be durable;
- ``directory(path)``: the entries of ``path`` (created or removed files) must be durable;
- ``replace(tmp, final)``: an atomic replacement (``kbroker.common.fileio.write_atomically``)
  whose ``tmp`` is written but not yet renamed.

``commit(root)`` then makes everything under one log directory durable, in the order the
one-file-at-a-time path keeps for each file, so that a crash at any moment leaves each
replaced file either old or new, never empty or torn:

1. the data: ``syncfs`` of the filesystem holding ``root`` (Linux's ``syncfs(2)``, through
   ctypes: Python 3.11 has no ``os.syncfs``), or, where there is none, an ``fsync`` of every
   recorded file from a small thread pool (Kafka's way);
2. the renames ``tmp`` → ``final``, now that every ``tmp`` is durable (from the thread
   pool too: one at a time, each waits for the filesystem's journal);
3. the directory entries: ``syncfs`` again, or an ``fsync`` of each directory touched.

The caller writes its "all durable" mark (the clean-shutdown marker) only after ``commit``
returned. ``syncfs`` reports a writeback error of the filesystem since the descriptor it is
given was opened (Linux 5.8+), so each root is opened when the ``BulkSync`` is made, before
the writes it covers. A failure raises ``OSError`` (the caller's log dir failure guard turns
a disk error into a failed directory, which then gets no marker); renames not done by then
are left undone, so the old files stay in place.
"""
from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path
from typing import Callable, Iterable

THREADS = 4     # renames (and, where there is no syncfs, fsyncs) in flight at once


def _load_syncfs() -> Callable[[int], None] | None:
    """``syncfs(fd)`` from the C library, raising ``OSError``; None where there is none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int

    def syncfs(fd: int) -> None:
        if fn(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
    return syncfs


SYNCFS = _load_syncfs()


class BulkSync:
    """The syncs and atomic renames of many writes under some log directories (``roots``),
    done together by :meth:`commit`. ``syncfs``: the function to sync a filesystem by a
    descriptor (default: the C library's, when it has one); ``False`` uses the thread pool
    of fsyncs. Not thread-safe: one thread records, ``commit`` fans out by itself."""

    def __init__(self, roots: Iterable[Path], *,
                 syncfs: Callable[[int], None] | None | bool = None,
                 threads: int = THREADS):
        self._syncfs = SYNCFS if syncfs is None else (syncfs or None)
        self.threads = max(1, threads)
        self._roots: dict[Path, int | None] = {}
        for r in roots:
            r = Path(r)
            try:
                self._roots[r] = os.open(r, os.O_RDONLY) if self._syncfs else None
            except OSError:
                self._roots[r] = None    # gone already: commit raises for it
        self._files: dict[str, None] = {}        # an ordered set
        self._dirs: dict[str, None] = {}
        self._renames: dict[str, str] = {}       # final -> tmp
        self.stats = {"syncfs": 0, "fsync": 0, "renames": 0, "files": 0}

    @property
    def uses_syncfs(self) -> bool:
        return self._syncfs is not None

    # -- recording ------------------------------------------------------------------
    def file(self, path) -> None:
        self._files[str(path)] = None

    def directory(self, path) -> None:
        self._dirs[str(path)] = None

    def replace(self, tmp, final) -> None:
        tmp, final = str(tmp), str(final)
        self._files[tmp] = None
        self._renames[final] = tmp

    # -- committing -----------------------------------------------------------------
    def commit(self, root) -> None:
        """Make what was recorded under ``root`` durable, then do its renames and make them
        durable too (module docstring). Raises ``OSError``; what was recorded under other
        roots waits for their own ``commit``."""
        root = Path(root)
        files = self._take(self._files, root)
        dirs = self._take(self._dirs, root)
        renames = [(final, tmp) for final, tmp in self._renames.items() if _under(final, root)]
        for final, _ in renames:
            del self._renames[final]
        self.stats["files"] += len(files)
        fd = self._roots.get(root)
        if self._syncfs is not None:
            if fd is None:
                fd = self._roots[root] = os.open(root, os.O_RDONLY)
            self._sync_fs(fd, root)
        else:
            self._fsync_all(files, missing_ok=True)
        self._rename_all(renames)
        if not renames and not dirs:
            return
        if self._syncfs is not None:
            self._sync_fs(fd, root)
        else:
            parents = dict.fromkeys([*dirs, *(os.path.dirname(f) for f, _ in renames)])
            self._fsync_all(list(parents), missing_ok=True)

    def close(self) -> None:
        """Close the roots' descriptors (what was not committed stays undone)."""
        for r, fd in self._roots.items():
            if fd is not None:
                os.close(fd)
                self._roots[r] = None

    def __enter__(self) -> "BulkSync":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def _take(recorded: dict[str, None], root: Path) -> list[str]:
        out = [p for p in recorded if _under(p, root)]
        for p in out:
            del recorded[p]
        return out

    def _sync_fs(self, fd: int, root: Path) -> None:
        try:
            self._syncfs(fd)
        except OSError as e:
            raise OSError(e.errno, e.strerror, str(root)) from None
        self.stats["syncfs"] += 1

    def _rename_all(self, renames: list[tuple[str, str]]) -> None:
        """The renames, from the pool: one at a time a rename over an existing file waits
        for the filesystem's journal (about 2 ms each on this project's machine, 10 s for
        5,000); four threads did the same 5,000 in 0.3 s. Their order does not matter: each
        names its own file, and every new file is durable already."""
        if len(renames) > 1 and self.threads > 1:
            # one slice per thread, not one task per rename: 200,000 futures cost more
            # CPU than the renames
            n = min(self.threads, len(renames))
            from concurrent.futures import ThreadPoolExecutor   # a clean stop's, not a start's
            with ThreadPoolExecutor(n) as pool:
                list(pool.map(_rename_slice, [renames[i::n] for i in range(n)]))
        else:
            _rename_slice(renames)
        self.stats["renames"] += len(renames)

    def _fsync_all(self, paths: list[str], *, missing_ok: bool) -> None:
        if not paths:
            return
        if len(paths) == 1 or self.threads == 1:
            for p in paths:
                _fsync_path(p, missing_ok)
        else:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(min(self.threads, len(paths))) as pool:
                # list() re-raises the first failure in the caller's thread
                list(pool.map(lambda p: _fsync_path(p, missing_ok), paths))
        self.stats["fsync"] += len(paths)


def _rename_slice(renames: list[tuple[str, str]]) -> None:
    for final, tmp in renames:
        os.replace(tmp, final)


def _under(path: str, root: Path) -> bool:
    r = str(root)
    return path == r or path.startswith(r.rstrip("/") + "/")


def _fsync_path(path: str, missing_ok: bool) -> None:
    """fsync the file or directory ``path`` (fsync works on the inode: any descriptor of it
    syncs what any other wrote). A file removed since it was recorded needs nothing."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        if missing_ok and e.errno == errno.ENOENT:
            return
        raise
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
