"""The Raft core's messages: plain dataclasses shaped like Kafka's KRaft RPCs.

Each class mirrors the single-partition view of a Kafka message (``VoteRequest``,
``VoteResponse``, ``BeginQuorumEpochRequest`` …, ``FetchRequest``/``FetchResponse`` as used by
KIP-595, ``FetchSnapshotRequest``/``FetchSnapshotResponse`` from KIP-630). Field names are the
Kafka field names in snake_case, so a driver maps them one-to-one onto
``kbroker.wire.messages``; the topic/partition nesting, ``cluster_id`` and directory ids are the
driver's business and are left out.

Two fields are not Kafka body fields:

- ``correlation_id`` — Kafka carries it in the request header and pairs responses with
  requests in the network client; the core uses it to drop stale or duplicated responses.
  A driver copies the header's correlation id (or its own per-request token) into it.
- ``pre_vote`` on ``VoteRequest`` is Kafka's ``PreVote`` flag (VoteRequest v2+, KIP-996). In a
  pre-vote, ``candidate_epoch`` is the epoch the prospective *would* campaign in (its current
  epoch + 1); receiving one never changes the receiver's state.

KIP-853's fields are carried too: directory ids (``None`` when unknown: Kafka's zero UUID) and
a leader's own ``leader_endpoints`` (``((listener name, host, port), ...)``, BeginQuorumEpoch
and EndQuorumEpoch v1), which the driver uses to reach a leader that moved.

Error codes are Kafka's numeric codes; the core needs only the few below.
"""
from __future__ import annotations

from dataclasses import dataclass, field

UNKNOWN_SERVER_ERROR = -1   # Kafka's answer when its voter-set checks throw (IllegalStateException)
NONE = 0
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
INCONSISTENT_VOTER_SET = 94
INVALID_UPDATE_VERSION = 95
SNAPSHOT_NOT_FOUND = 98
POSITION_OUT_OF_RANGE = 99
INVALID_VOTER_KEY = 125
DUPLICATE_VOTER = 126
VOTER_NOT_FOUND = 127

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class Entry:
    """One log record as the core sees it. ``control`` marks a control record, and
    ``control_type`` says which (Kafka's ``ControlRecordType``: 2 the LeaderChangeMessage a
    leader writes at the start of its epoch, 5 a KRaftVersionRecord, 6 a VotersRecord)."""

    offset: int
    epoch: int
    payload: bytes
    control: bool = False
    control_type: int = 2

    @property
    def size(self) -> int:
        return len(self.payload) + 16


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """Kafka's ``SnapshotId`` / ``DivergingEpoch`` pair: an exclusive end offset and the epoch of
    the record just before it."""

    end_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class LeaderIdAndEpoch:
    """Kafka's ``CurrentLeader`` struct."""

    leader_id: int = NO_LEADER
    leader_epoch: int = -1


# --- Vote (KIP-595, pre-vote from KIP-996) ---------------------------------------------

@dataclass(frozen=True, slots=True)
class VoteRequest:
    """Raft's Vote request."""
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    voter_id: int = -1
    pre_vote: bool = False
    correlation_id: int = 0
    candidate_directory_id: str | None = None
    voter_directory_id: str | None = None


@dataclass(frozen=True, slots=True)
class VoteResponse:
    """Raft's Vote response."""
    error_code: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool
    correlation_id: int = 0


# --- BeginQuorumEpoch / EndQuorumEpoch -------------------------------------------------

@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """Raft's BeginQuorumEpoch request."""
    leader_id: int
    leader_epoch: int
    voter_id: int = -1
    correlation_id: int = 0
    voter_directory_id: str | None = None
    leader_endpoints: tuple = ()


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    """Raft's BeginQuorumEpoch response."""
    error_code: int
    leader_id: int
    leader_epoch: int
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """Raft's EndQuorumEpoch request."""
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...] = ()
    correlation_id: int = 0
    preferred_directory_ids: tuple = ()     # of ``preferred_successors``, same order
    leader_endpoints: tuple = ()


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    """Raft's EndQuorumEpoch response."""
    error_code: int
    leader_id: int
    leader_epoch: int
    correlation_id: int = 0


# --- Fetch (replication is pull-based in KRaft) ----------------------------------------

@dataclass(frozen=True, slots=True)
class FetchRequest:
    """Raft's Fetch request."""
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int = 0
    max_wait_ms: int = 0
    max_bytes: int = 8 * 1024 * 1024
    correlation_id: int = 0
    directory_id: str | None = None   # KIP-853: the fetching replica's metadata log dir id
    high_watermark: int | None = None  # KIP-1166 (Fetch v18): the fetcher's; None: not sent


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """Raft's Fetch response."""
    error_code: int
    high_watermark: int
    log_start_offset: int
    current_leader: LeaderIdAndEpoch
    diverging_epoch: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None
    records: tuple[Entry, ...] = field(default=())
    correlation_id: int = 0


# --- FetchSnapshot (KIP-630) -----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """Raft's FetchSnapshot request."""
    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int = 8 * 1024 * 1024
    correlation_id: int = 0
    directory_id: str | None = None


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    """Raft's FetchSnapshot response."""
    error_code: int
    current_leader: LeaderIdAndEpoch
    snapshot_id: OffsetAndEpoch | None = None
    size: int = 0
    position: int = 0
    unaligned_records: bytes = b""
    correlation_id: int = 0


RaftMessage = (VoteRequest | VoteResponse | BeginQuorumEpochRequest | BeginQuorumEpochResponse
               | EndQuorumEpochRequest | EndQuorumEpochResponse | FetchRequest | FetchResponse
               | FetchSnapshotRequest | FetchSnapshotResponse)
