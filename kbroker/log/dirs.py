"""Log directories at start-up: create and validate them, lock them, name the path on errors.

Kafka's ``LogManager`` does three things before it reads or writes anything in ``log.dirs``
(and ``metadata.log.dir``): it creates missing directories, checks that each is a readable
directory, and takes an exclusive lock on a ``.lock`` file inside each one
(``FileLock.tryLock``), held until the process exits. A second broker (another process, or
another broker in the same process) pointed at a locked directory refuses to start instead of
writing the same logs.

Rules kept here:

- The lock is ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<dir>/.lock``, as Kafka's (a Java
  ``FileChannel.tryLock`` is an ``fcntl``/``flock`` lock the kernel drops when the process
  dies, so a crash never leaves a stale lock behind). ``flock`` locks belong to the open file
  description: a second ``open`` of the same file in the same process conflicts too, so two
  embedded brokers on one directory are caught as well. The file itself is never deleted.
- Every ``OSError`` raised while preparing or loading a directory becomes a
  :class:`LogDirError` whose message names the path (``cannot create log directory
  /data/x: Permission denied``); the CLI prints it as one line and exits 1.
"""
from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Iterable, Iterator

LOCK_FILE = ".lock"


class LogDirError(OSError):
    """A file-system problem with a log directory; ``str()`` and ``strerror`` name the path."""

    def __init__(self, err: int | None, message: str, path: str | None = None):
        super().__init__(err or errno.EIO, message)
        self.path = path

    def __str__(self) -> str:
        return self.strerror


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


@contextlib.contextmanager
def naming_path(what: str, path) -> Iterator[None]:
    """Re-raise an ``OSError`` of the block as a :class:`LogDirError`: ``what`` (which names
    ``path``), then the file the error concerns when it is another one, then the reason."""
    try:
        yield
    except LogDirError:
        raise
    except OSError as e:
        where = str(path)
        if e.filename is not None and str(e.filename) != where:
            where = str(e.filename)
            raise LogDirError(e.errno, f"{what}: {where}: {_reason(e)}", where) from e
        raise LogDirError(e.errno, f"{what}: {_reason(e)}", where) from e


class LogDirLocks:
    """The held ``.lock`` files of this broker's log directories (one open fd each)."""

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    @property
    def dirs(self) -> list[str]:
        return list(self._fds)

    def acquire(self, directories: Iterable) -> None:
        """Create (if missing), validate and lock every directory; on any failure the locks
        taken so far are released and a :class:`LogDirError` naming the directory is raised."""
        try:
            for d in dict.fromkeys(str(Path(x)) for x in directories):
                if d not in self._fds:
                    self._fds[d] = _lock_one(Path(d))
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Unlock and close every lock file (shutdown). Idempotent."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            try:
                os.close(fd)        # closing the only descriptor drops the flock
            except OSError:
                pass

    def __enter__(self) -> "LogDirLocks":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def prepare_dir(d: Path) -> None:
    """Create ``d`` if missing and check it is a directory this process can use."""
    with naming_path(f"cannot create log directory {d}", d):
        if d.exists() and not d.is_dir():
            raise LogDirError(errno.ENOTDIR, f"log directory {d} is not a directory", str(d))
        d.mkdir(parents=True, exist_ok=True)
    if not os.access(d, os.R_OK | os.W_OK | os.X_OK):
        raise LogDirError(errno.EACCES, f"log directory {d} is not readable and writable "
                          "by this process: Permission denied", str(d))


def _lock_one(d: Path) -> int:
    import fcntl
    prepare_dir(d)
    path = d / LOCK_FILE
    with naming_path(f"cannot open the lock file {path}", path):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise LogDirError(e.errno, f"log directory {d} is in use by another broker (its "
                              f"{LOCK_FILE} file is locked by another process or broker in "
                              "this process)", str(d)) from None
        raise LogDirError(e.errno, f"cannot lock {path}: {_reason(e)}", str(path)) from None
    return fd
