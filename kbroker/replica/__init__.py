"""The replica layer: partition replicas on this node, and the rules for writing, reading
and replicating them (Kafka's ReplicaManager, Partition, ReplicaFetcherThread).

:class:`ReplicaManager` (``manager.py``) is the one entry point; the other modules are its
parts — see its module docstring for the map. The names below are what the API modules,
the coordinators and the tests import.
"""
from kbroker.replica.manager import ReplicaManager
from kbroker.replica.partition import FollowerState, Partition
from kbroker.replica.partition_metadata import read_partition_metadata, write_partition_metadata
from kbroker.replica.results import (EARLIEST_LOCAL_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP,
                                     EARLIEST_TIMESTAMP,
                                     INTERNAL_TOPICS, LATEST_TIERED_TIMESTAMP, LATEST_TIMESTAMP,
                                     MAX_TIMESTAMP, READ_COMMITTED, READ_UNCOMMITTED,
                                     AppendResult, FetchResult, FetchSpec, ReplicaError)

__all__ = [
    "ReplicaManager", "Partition", "FollowerState", "ReplicaError", "AppendResult",
    "FetchSpec", "FetchResult", "read_partition_metadata", "write_partition_metadata",
    "INTERNAL_TOPICS", "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP",
    "EARLIEST_LOCAL_TIMESTAMP", "LATEST_TIERED_TIMESTAMP", "EARLIEST_PENDING_UPLOAD_TIMESTAMP", "READ_UNCOMMITTED", "READ_COMMITTED",
]
