"""What a failed log directory does to this broker (Kafka's LogDirFailureChannel and
ReplicaManager.handleLogDirFailure, first step).

A write to a partition's log that fails with an I/O error (``ENOSPC`` on a full disk,
``EIO``...) means the directory holding it can no longer be trusted. The log layer has
already undone the partial write (the segment is truncated back, so nothing half-written
stays behind) and raised :class:`~kbroker.log.errors.KafkaStorageError`; the partition
answers ``KAFKA_STORAGE_ERROR`` (56) to that request.

Kafka then takes the whole directory offline: its partitions answer KAFKA_STORAGE_ERROR, the
broker reports the directory in its heartbeats (``offline_log_dirs``, KIP-858) so the
controller moves leadership to replicas elsewhere, and the broker keeps serving the
partitions of its other directories. When no online directory remains, Kafka halts the
broker ("all log dirs have failed").

kbroker does not report offline directories to the controller yet
(kbroker/controller_server/broker_heartbeat.py), so it takes the step Kafka takes for the
last directory: one ERROR line naming the directory and the error, then the process halts
(exit code 1, no shutdown work that would write to the failed disk). The controller fences
the silent broker after ``broker.session.timeout.ms`` and elects leaders among the other
replicas of the ISR; nothing acknowledged with acks=all is lost, since it is on them too.
After the disk is fixed the broker starts again and recovers its logs as after a crash.

A storage error raised by another write (the metadata log, a checkpoint) ends the broker at
its top level; ``unhandled_storage_error`` gives that exit the same kind of line.

``halt`` is an attribute so an in-process test can replace it.
"""
from __future__ import annotations

import errno
import logging
import os
import sys
import traceback

log = logging.getLogger("kbroker.replica")

EXIT_CODE = 1

# errors that say the disk, not the caller, failed
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EROFS, errno.EDQUOT})


def io_error_of(exc: BaseException) -> OSError | None:
    """The I/O error under a failed log write, if that is what it was."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, OSError):
            return exc
        exc = exc.__cause__
        seen += 1
    return None


def _halt(code: int) -> None:
    for h in logging.getLogger().handlers:
        try:
            h.flush()
        except Exception:  # noqa: BLE001 - halting anyway
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


halt = _halt


def log_dir_failed(log_dir, what: str, exc: BaseException) -> None:
    """A write under ``log_dir`` failed with ``exc`` while doing ``what``: take the directory
    offline, which for now means halting the broker (see the module docstring)."""
    log.error("log dir %s failed (%s: %s): %s", log_dir, what, io_error_of(exc) or exc, _ADVICE)
    halt(EXIT_CODE)


_ADVICE = ("kbroker cannot take one log dir offline yet, so it halts as Kafka does when its "
           "last log dir fails; fix the disk and start the broker again")


def unhandled_storage_error(exc: OSError) -> str | None:
    """The line for a storage error that reached the top of the broker from a write outside
    the partition append paths (the metadata log, a checkpoint): which file, where, and the
    same advice; None if ``exc`` is not a storage error."""
    if exc.errno not in STORAGE_ERRNOS:
        return None
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" in {tb[-1].filename}:{tb[-1].lineno} ({tb[-1].name})" if tb else ""
    target = f" writing {exc.filename}" if exc.filename else ""
    return f"log write failed{target}{where}: {exc.strerror or exc}: {_ADVICE}"
