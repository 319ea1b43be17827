"""KRaft-style metadata quorum.

``kbroker.raft.core`` is the pure Raft core (no I/O, no clock, no global randomness; see its
docstring for the driver contract). ``messages`` are its RPCs, shaped like Kafka's,
``state`` the persisted quorum state and configuration, ``log`` the in-memory log model.
The trio driver, the wire mapping and the metadata state machine build on these.
"""
from .core import NotLeader, RaftNode, Ready, RoleChange
from .log import FetchValidation, RaftLog
from .messages import Entry, LeaderIdAndEpoch, OffsetAndEpoch
from .state import QuorumState, RaftConfig, Role, Snapshot, StorageView

__all__ = ["NotLeader", "RaftNode", "Ready", "RoleChange", "FetchValidation", "RaftLog", "Entry",
           "LeaderIdAndEpoch", "OffsetAndEpoch", "QuorumState", "RaftConfig", "Role", "Snapshot",
           "StorageView"]
