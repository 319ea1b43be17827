"""Log directory ids as the metadata log records them (KIP-858): the reserved ids, Kafka's
order of ids, and the pure rules the metadata image needs when it replays ``Directories``
and ``LogDirs``. ``directories.py`` holds the controller's rules built on these."""
from __future__ import annotations

import uuid
from typing import Iterable, Sequence

MIGRATING = uuid.UUID(int=0)
UNASSIGNED = uuid.UUID(int=1)
LOST = uuid.UUID(int=2)

# metadata.version 3.7-IV2: directories in the records (Kafka's isDirectoryAssignmentSupported)
DIRECTORY_ASSIGNMENT_MV = 17

_HALF = 1 << 64
_SIGN = 1 << 63


def reserved(directory: uuid.UUID) -> bool:
    """One of the first 100 ids, which never name a real directory."""
    return directory.int < 100


def kafka_order(directory: uuid.UUID) -> tuple[int, int]:
    """Sort key of Kafka's ``Uuid.compareTo``: both 64-bit halves compared as signed."""
    hi, lo = directory.int >> 64, directory.int & (_HALF - 1)
    return (hi - _HALF if hi >= _SIGN else hi, lo - _HALF if lo >= _SIGN else lo)


def sorted_dirs(dirs: Iterable[uuid.UUID]) -> tuple[uuid.UUID, ...]:
    return tuple(sorted(dirs, key=kafka_order))


def supported(metadata_version: int | None) -> bool:
    return metadata_version is not None and metadata_version >= DIRECTORY_ASSIGNMENT_MV


def is_online(directory: uuid.UUID, online_dirs: Sequence[uuid.UUID]) -> bool:
    """Kafka's ``DirectoryId.isOnline``."""
    if directory in (UNASSIGNED, MIGRATING):
        return True
    if directory == LOST:
        return False
    # a broker registered without directories (from before 3.7-IV2): assume online
    return not online_dirs or directory in online_dirs


def normalized(directories: Sequence[uuid.UUID] | None, replicas: int) -> tuple[uuid.UUID, ...]:
    """The directories a partition keeps: () when the record has none or only MIGRATING
    (Kafka's ``defaultToMigrating``); a list of another length than the replicas is the
    record's error (Kafka's ``InvalidReplicaDirectoriesException``)."""
    if not directories or all(d == MIGRATING for d in directories):
        return ()
    if len(directories) != replicas:
        raise ValueError(f"{len(directories)} directories for {replicas} replicas")
    return tuple(directories)
