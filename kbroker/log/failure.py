"""Where the log layer reports a failed log directory (Kafka's ``LogDirFailureChannel`` and
``LocalLog.maybeHandleIOException``).

Every write the log store makes under a log directory -- appends, segment rolls, offset and
time index writes and truncations, the ``.txnindex``, flushes, the ``leader-epoch-checkpoint``,
producer-state snapshots, the offset checkpoint files and the clean-shutdown marker,
retention and truncation (renames to ``.deleted``, deletions), the cleaner, and creating,
deleting or moving a partition directory -- runs inside :meth:`LogDirFailureChannel.guard`
(``PartitionLog``'s public methods through ``guarded``, ``LogManager`` around its own
work). An ``OSError`` there whose errno says the disk failed (:data:`STORAGE_ERRNOS`:
``ENOSPC``, ``EIO``, ``EROFS``, ``EDQUOT``), raised directly or as the cause of another
error, is reported once per directory and re-raised as
:class:`~kbroker.log.errors.KafkaStorageError` (``KAFKA_STORAGE_ERROR``, 56) carrying the
directory, so the request that met it answers that code and background work moves on to the
next log. Other ``OSError``\\s (``EBADF``, ``EMFILE``...) say the broker, not the disk, is
wrong: they go up unchanged.

The first report of a directory marks it failed at once -- from then on every guarded call
for it raises ``KafkaStorageError`` without touching the disk, and ``LogManager`` places no
new log there and writes no checkpoint or marker there -- and calls the listeners
synchronously, before the failing call returns. The replica layer listens
(:mod:`kbroker.replica.log_dir_failure`): it writes the one ERROR line and takes the
directory offline or halts the broker. Being synchronous matters: a halt happens before the
error can travel anywhere else (a background task, the metadata quorum) and end the broker
some other way. A listener may close and drop the logs of the directory, including the one
whose call failed; the guard only raises afterwards.

The log layer knows nothing of replicas: it imports nothing above itself, and without a
listener (a ``LogManager`` in a log test) a failure only marks the directory and raises.
"""
from __future__ import annotations

import errno
import functools
from pathlib import Path
from typing import Callable

from .errors import KafkaStorageError

# errors that say the disk, not the caller, failed
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EROFS, errno.EDQUOT})

Listener = Callable[[Path, str, OSError], None]


def storage_error_of(exc: BaseException | None) -> OSError | None:
    """The ``OSError`` with a storage errno behind ``exc``: ``exc`` itself or one of its
    causes or contexts (an error raised while undoing a failed write counts too)."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def named(exc: OSError, path) -> OSError:
    """``exc`` naming ``path`` (errors of ``os.write`` and ``os.pwrite`` name no file, and the
    ERROR line of a failed directory should say which file met the error)."""
    if exc.filename is not None:
        return exc
    return OSError(exc.errno, exc.strerror, str(path))


class LogDirFailureChannel:
    """The failed log directories of one ``LogManager`` and who is told about them.

    ``failed`` maps each failed directory to what failed there first; a directory stays
    failed until the process restarts (as in Kafka)."""

    def __init__(self) -> None:
        self.failed: dict[Path, str] = {}
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        """Call ``listener(log_dir, what, cause)`` once for each directory that fails."""
        self._listeners.append(listener)

    def is_failed(self, log_dir) -> bool:
        return bool(self.failed) and Path(log_dir) in self.failed

    def mark(self, log_dir) -> bool:
        """Mark ``log_dir`` failed without telling anyone; returns whether it is new."""
        d = Path(log_dir)
        if d in self.failed:
            return False
        self.failed[d] = "taken offline"
        return True

    def check(self, log_dir) -> None:
        """Raise ``KafkaStorageError`` if ``log_dir`` failed before (Kafka: "already offline
        due to a previous IO exception")."""
        if self.failed and Path(log_dir) in self.failed:
            raise KafkaStorageError(f"log dir {log_dir} is offline after an earlier I/O error",
                                    log_dir=Path(log_dir))

    def report(self, log_dir, what: str, exc: BaseException) -> KafkaStorageError | None:
        """``exc`` happened while doing ``what`` under ``log_dir``: if it is a storage error,
        mark the directory failed (telling the listeners the first time) and return the
        ``KafkaStorageError`` to raise; None when ``exc`` is no storage error or was reported
        already (the caller re-raises ``exc`` itself)."""
        if isinstance(exc, KafkaStorageError) and exc.log_dir is not None:
            return None                      # reported by an inner guard
        cause = storage_error_of(exc)
        if cause is None:
            return None
        d = Path(log_dir)
        if d not in self.failed:
            self.failed[d] = f"{what}: {cause}"
            for listener in list(self._listeners):
                listener(d, what, cause)
        err = KafkaStorageError(f"{what} in log dir {d}: {cause}", log_dir=d)
        err.__cause__ = exc
        return err

    def guard(self, log_dir, what: str) -> "_Guard":
        """``with channel.guard(dir, "what"): ...``: refuse when ``dir`` failed before, and
        report a storage error raised inside (module docstring)."""
        return _Guard(self, log_dir, what)


class _Guard:
    __slots__ = ("channel", "log_dir", "what")

    def __init__(self, channel: LogDirFailureChannel, log_dir, what: str):
        self.channel, self.log_dir, self.what = channel, log_dir, what

    def __enter__(self) -> None:
        self.channel.check(self.log_dir)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        err = self.channel.report(self.log_dir, self.what, exc)
        if err is not None:
            raise err
        return False


def guarded(what: str):
    """Decorate a ``PartitionLog`` method: its storage errors are reported to the log's
    channel under its directory, ``what`` naming the operation (with the partition). (The
    produce path's ``PartitionLog.append`` does the same in its own body, with
    :func:`check_online` and :func:`raise_reported`: the wrapper's call cost ~4 % of it.)"""
    def decorate(fn):
        @functools.wraps(fn)
        def call(self, *args, **kwargs):
            if self.failures.failed:
                check_online(self)
            try:
                return fn(self, *args, **kwargs)
            except Exception as exc:
                raise_reported(self, what, exc)
                raise
        return call
    return decorate


def check_online(log) -> None:
    """Raise ``KafkaStorageError`` when the directory of ``log`` (a ``PartitionLog``) failed."""
    log.failures.check(log.log_dir)


def raise_reported(log, what: str, exc: Exception) -> None:
    """Report ``exc``, met by ``what`` on ``log``, to its channel: raises the
    ``KafkaStorageError`` it becomes; returns when it is no storage error (the caller
    re-raises it)."""
    err = log.failures.report(log.log_dir, f"{what} {log.topic}-{log.partition}", exc)
    if err is not None:
        raise err from exc
