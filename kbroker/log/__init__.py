"""Segmented log store: one append-only, indexed, recoverable log per partition.

No network code.  The broker, the group and transaction coordinators and the Raft
metadata log sit on it.  Entry points:

* :class:`LogConfig` (``config``) -- Kafka's topic-level settings;
* :class:`PartitionLog` (``partition``) -- append / read / offsets of one partition;
* :class:`LogManager` (``manager``) -- all partitions of ``log.dirs``, checkpoints,
  clean-shutdown marker, maintenance entry points;
* ``tasks.run_background`` -- the trio loops driving the maintenance;
* ``segment``, ``index``, ``cleaner``, ``checkpoint`` -- the pieces.
"""
from .config import LogConfig
from .errors import (KafkaStorageError, LogClosed, LogError, OffsetOutOfRange,
                     PolicyViolation, RecordBatchTooLarge)
from .manager import LogManager
from .partition import AppendInfo, PartitionLog
from .region import FileRegion

__all__ = ["AppendInfo", "FileRegion", "KafkaStorageError", "LogClosed", "LogConfig", "LogError",
           "LogManager", "OffsetOutOfRange", "PartitionLog", "PolicyViolation",
           "RecordBatchTooLarge"]
