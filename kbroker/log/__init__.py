"""Segmented log store: one append-only, indexed, recoverable log per partition.

No network code.  The broker, the group and transaction coordinators and the Raft
metadata log sit on it.  Entry points:

* :class:`LogConfig` (``config``) -- Kafka's topic-level settings;
* :class:`PartitionLog` (``partition``) -- append / read / offsets of one partition;
* :class:`LogManager` (``manager``) -- all partitions of ``log.dirs``, checkpoints,
  clean-shutdown marker, maintenance entry points;
* ``tasks.run_background`` -- the trio loops driving the maintenance;
* :class:`LeaderEpochCache` (``epoch_cache``) -- which leader epoch wrote which offsets;
* ``failure`` -- the log dir failure channel every storage error is reported to;
* ``producer_expiry`` -- ``producer.id.expiration.ms``: the node's sweep of idle producers;
* ``segment``, ``index``, ``cleaner``, ``checkpoint`` -- the pieces.
"""
from .config import LogConfig
from .epoch_cache import EpochEntry, LeaderEpochCache
from .errors import (KafkaStorageError, LogClosed, LogError, OffsetOutOfRange, OffsetsOutOfOrder,
                     PolicyViolation, RecordBatchTooLarge, UnexpectedAppendOffset)
from .manager import LogManager
from .partition import AppendInfo, PartitionLog
from .region import FileRegion

__all__ = ["AppendInfo", "EpochEntry", "FileRegion", "KafkaStorageError", "LeaderEpochCache",
           "LogClosed", "LogConfig", "LogError", "LogManager", "OffsetOutOfRange",
           "OffsetsOutOfOrder", "PartitionLog", "PolicyViolation", "RecordBatchTooLarge",
           "UnexpectedAppendOffset"]
