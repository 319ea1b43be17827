"""What a failed log directory does to this broker (Kafka's ReplicaManager.handleLogDirFailure
and LogManager.handleLogDirFailure, KIP-858 in KRaft mode).

Every write under a log directory -- a partition's append, segment roll, index, flush,
leader-epoch checkpoint, producer snapshot, the offset checkpoints, retention, the cleaner,
creating, deleting or moving a log, ``partition.metadata``, the metadata quorum's log, state
and snapshots -- reports an I/O error that says the disk failed (``ENOSPC``, ``EIO``,
``EROFS``, ``EDQUOT``: ``STORAGE_ERRNOS``) to the ``LogManager``'s failure channel
(:mod:`kbroker.log.failure`), whoever made the call: a request handler, the log maintenance
tasks, the replica fetcher, the application of a metadata image, a coordinator or the Raft
driver. The failing call raises ``KafkaStorageError``, so a request that met it answers
``KAFKA_STORAGE_ERROR`` (56) and background work goes on with the other logs; a failed append
is undone (the segment and its indexes cut back, so nothing half-written stays behind).

The replica manager listens (:func:`log_dir_failed`, registered by ``ReplicaManager``), once
per directory and synchronously, before the failing call returns. As in Kafka the whole
directory goes offline:

- one ERROR line names the directory, what was being written and the cause;
- ``LogManager.mark_offline`` closes its logs without flushing and drops them; nothing is
  placed there again and no checkpoint or clean-shutdown marker is written to it, so the
  next start recovers it as after a crash;
- the replica manager forgets those replicas (their fetchers stop) and remembers them as
  offline: they answer ``KAFKA_STORAGE_ERROR`` to clients and followers and are not re-created
  in another directory by later metadata images; DescribeLogDirs reports the directory with
  ``KAFKA_STORAGE_ERROR``;
- the broker's heartbeats carry the directory's id (``directory.id`` of its
  ``meta.properties``) in ``OfflineLogDirs`` (BrokerHeartbeat v1); the controller knows from
  the metadata log (``Directories`` of the partition records, KIP-858) which replicas sat
  there, takes this broker out of those partitions' ISRs and elects leaders among the other
  ISR members (kbroker/metadata/directories.py);
- the broker keeps serving the partitions of its other directories.

When the failed directory is the last online one, or the first of ``log.dirs`` (it holds
the metadata log, ``metadata.log.dir``), the broker halts as Kafka does: the ERROR line,
then exit code 1 with no shutdown work that would write to the failed disk. The controller
fences the silent broker after ``broker.session.timeout.ms``. With the disk fixed the broker
starts again, recovers the directory's logs as after a crash and its replicas catch up from
the leaders.

Not through the channel: writes before the replica manager exists (formatting, loading the
logs at start-up: a directory that cannot be written stops the start with its path named)
and files outside the log directories. A storage error from those that reaches the top of
the broker ends it with the line of ``unhandled_storage_error``.

``halt`` is an attribute so an in-process test can replace it.
"""
from __future__ import annotations

import logging
import os
import sys
import traceback
from pathlib import Path

from kbroker.log.failure import STORAGE_ERRNOS

log = logging.getLogger("kbroker.replica")

EXIT_CODE = 1


_DIR_IDS: dict[Path, object] = {}


def directory_id(log_dir):
    """The ``directory.id`` of ``log_dir``'s ``meta.properties`` as a UUID (None if it has
    none). Read once per directory and remembered, since the disk may stop answering."""
    d = Path(log_dir)
    if d not in _DIR_IDS:
        from kbroker.raft.control import uuid_from_kafka
        from kbroker.metadata.storage_format import read_directory_id
        text = read_directory_id(d)
        try:
            found = uuid_from_kafka(text) if text else None
        except ValueError:
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


def log_dir_failed(replicas, log_dir, what: str, cause: OSError) -> None:
    """The failure channel's listener: a write under ``log_dir`` failed with ``cause`` while
    doing ``what``. Take the directory offline, or halt when it is the last online one or
    the metadata log's (module docstring). The channel calls this once per directory and has
    already marked it failed, so ``online_dirs`` no longer lists it."""
    logs = replicas.broker.logs
    log_dir = Path(log_dir)
    metadata_dir = log_dir == logs.log_dirs[0]
    if metadata_dir or not logs.online_dirs:
        why = "it holds the metadata log" if metadata_dir and logs.online_dirs \
            else "no other log dir is online"
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
    """The line for a storage error that reached the top of the broker from a write the
    failure channel does not see (start-up, files outside the log dirs): which file, where,
    and the same advice; None if ``exc`` is not a storage error."""
    if exc.errno not in STORAGE_ERRNOS:
        return None
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" in {tb[-1].filename}:{tb[-1].lineno} ({tb[-1].name})" if tb else ""
    target = f" writing {exc.filename}" if exc.filename else ""
    return f"log write failed{target}{where}: {exc.strerror or exc}: {_ADVICE}"
