"""What a failed log directory does to this broker (Kafka's LogDirFailureChannel and
ReplicaManager.handleLogDirFailure, KIP-858 in KRaft mode).

A write to a partition's log that fails with an I/O error (``ENOSPC`` on a full disk,
``EIO``...) means the directory holding it can no longer be trusted. The log layer has
already undone the partial write (the segment is truncated back, so nothing half-written
stays behind) and raised :class:`~kbroker.log.errors.KafkaStorageError`; the partition
answers ``KAFKA_STORAGE_ERROR`` (56) to that request.

Then, as Kafka, the whole directory goes offline (:func:`log_dir_failed`):

- one ERROR line names the directory and the cause;
- ``LogManager.mark_offline`` closes its logs without flushing and drops them; nothing is
  placed there again and no checkpoint or clean-shutdown marker is written to it, so the
  next start recovers it as after a crash;
- the replica manager forgets those replicas (their fetchers stop) and remembers them as
  offline: they answer ``KAFKA_STORAGE_ERROR`` to clients and followers and are not re-created
  in another directory by later metadata images; DescribeLogDirs reports the directory with
  ``KAFKA_STORAGE_ERROR``;
- the broker's heartbeats carry the directory's id (``directory.id`` of its
  ``meta.properties``) in ``OfflineLogDirs`` (BrokerHeartbeat v1), with the replicas that were
  in it, and the controller takes this broker out of those partitions' ISRs and elects
  leaders among the other ISR members (kbroker/metadata/quorum_controller.py,
  ``offline_dirs``);
- the broker keeps serving the partitions of its other directories.

When the failed directory is the last online one, or the first of ``log.dirs`` (it holds
the metadata log, ``metadata.log.dir``), the broker halts as Kafka does: the ERROR line,
then exit code 1 with no shutdown work that would write to the failed disk. The controller
fences the silent broker after ``broker.session.timeout.ms``. With the disk fixed the broker
starts again, recovers the directory's logs as after a crash and its replicas catch up from
the leaders.

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
from pathlib import Path

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


_DIR_IDS: dict[Path, object] = {}


def directory_id(log_dir):
    """The ``directory.id`` of ``log_dir``'s ``meta.properties`` as a UUID (None if it has
    none). Read once per directory and remembered, since the disk may stop answering."""
    d = Path(log_dir)
    if d not in _DIR_IDS:
        found = None
        try:
            for line in (d / "meta.properties").read_text().splitlines():
                if line.startswith("directory.id="):
                    from kbroker.raft.control import uuid_from_kafka
                    found = uuid_from_kafka(line.split("=", 1)[1].strip())
        except (OSError, ValueError):
            found = None
        if found is None:
            return None          # not remembered: a later call may read it
        _DIR_IDS[d] = found
    return _DIR_IDS[d]


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


def log_dir_failed(replicas, log_dir, what: str, exc: BaseException) -> None:
    """A write under ``log_dir`` failed with ``exc`` while doing ``what``: take the directory
    offline, or halt when it is the last online one or the metadata log's (module docstring)."""
    logs = getattr(getattr(replicas, "broker", None), "logs", None)
    log_dir = Path(log_dir)
    online = list(getattr(logs, "online_dirs", []) or [])
    all_dirs = list(getattr(logs, "log_dirs", []) or [])
    cause = io_error_of(exc) or exc
    if (logs is None or log_dir not in online or len(online) <= 1
            or (all_dirs and log_dir == all_dirs[0])):
        if logs is not None and log_dir in getattr(logs, "offline_dirs", ()):
            return          # already offline: a late write of a replica it held
        why = ("it holds the metadata log" if all_dirs and log_dir == all_dirs[0]
               and len(online) > 1 else "no other log dir is online")
        # (the seeded fault test looks for "kbroker cannot take one log dir offline")
        log.error("log dir %s failed (%s: %s): kbroker cannot take one log dir offline when %s, "
                  "so the broker halts; fix the disk and start the broker again",
                  log_dir, what, cause, why)
        halt(EXIT_CODE)
        return
    log.error("log dir %s failed (%s: %s): the directory is offline, its replicas move to "
              "other brokers; this broker keeps serving its other log dirs", log_dir, what, cause)
    replicas.take_log_dir_offline(log_dir)


_ADVICE = ("the broker halts as Kafka does when its last log dir fails; fix the disk and "
           "start the broker again")


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
