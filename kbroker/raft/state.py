"""Persisted and configured state of one Raft replica: ``QuorumState``, ``Snapshot``,
``StorageView`` (what the driver read from disk at start-up) and ``RaftConfig``.

``QuorumState`` is shaped like Kafka's ``QuorumStateData`` (the ``quorum-state`` file): the
current epoch, the known leader and the vote cast in that epoch. The core hands a new one to
the driver in ``Ready.persist_state`` whenever any of the three changes, and the driver must
make it durable before sending any message of the same ``Ready`` — that is what makes "a vote
is granted at most once per epoch" survive crashes.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .messages import NO_LEADER, Entry, OffsetAndEpoch


class Role(enum.Enum):
    UNATTACHED = "unattached"    # epoch known, no leader known (maybe voted)
    FOLLOWER = "follower"        # fetching from a known leader of the current epoch
    PROSPECTIVE = "prospective"  # asking for pre-votes (KIP-996), epoch unchanged
    CANDIDATE = "candidate"      # voted for itself in a new epoch, asking for votes
    LEADER = "leader"
    RESIGNED = "resigned"        # was leader of this epoch, stepped down (EndQuorumEpoch)


@dataclass(frozen=True, slots=True)
class QuorumState:
    """Kafka's ``QuorumStateData`` (v1 without directory ids): ``leader_epoch`` is the current
    epoch, ``leader_id``/``voted_id`` are -1 when unknown / not cast."""

    leader_id: int = NO_LEADER
    leader_epoch: int = 0
    voted_id: int = -1


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A state-machine snapshot covering every record below ``snapshot_id.end_offset``.
    ``data`` is opaque to the core (the application's serialized image)."""

    snapshot_id: OffsetAndEpoch
    data: bytes


@dataclass(slots=True)
class StorageView:
    """What the driver found on disk when (re)starting a replica: the last persisted quorum
    state, the latest snapshot and the log records after it (contiguous, from the snapshot's
    end offset or 0)."""

    quorum_state: QuorumState = field(default_factory=QuorumState)
    snapshot: Snapshot | None = None
    entries: list[Entry] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Timeouts and limits, defaults as Kafka's ``controller.quorum.*`` settings."""

    election_timeout_ms: int = 1000          # controller.quorum.election.timeout.ms
    fetch_timeout_ms: int = 2000             # controller.quorum.fetch.timeout.ms
    election_backoff_max_ms: int = 1000      # controller.quorum.election.backoff.max.ms
    request_timeout_ms: int = 2000           # controller.quorum.request.timeout.ms
    retry_backoff_ms: int = 20               # controller.quorum.retry.backoff.ms
    fetch_max_wait_ms: int = 500             # KafkaRaftClient's fetch long-poll
    fetch_max_bytes: int = 8 * 1024 * 1024
    snapshot_chunk_bytes: int = 8 * 1024 * 1024
    max_record_bytes_between_snapshots: int = 20 * 1024 * 1024  # metadata.log.max.record.bytes.between.snapshots
    pre_vote: bool = True                    # KIP-996
    # Kafka's LeaderState resigns when no majority fetched within 1.5 x fetch timeout.
    check_quorum_factor: float = 1.5

    @property
    def check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * self.check_quorum_factor)

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> "RaftConfig":
        """Build from Kafka configuration keys (unknown keys are ignored)."""
        keys = {
            "controller.quorum.election.timeout.ms": "election_timeout_ms",
            "controller.quorum.fetch.timeout.ms": "fetch_timeout_ms",
            "controller.quorum.election.backoff.max.ms": "election_backoff_max_ms",
            "controller.quorum.request.timeout.ms": "request_timeout_ms",
            "controller.quorum.retry.backoff.ms": "retry_backoff_ms",
            "metadata.log.max.record.bytes.between.snapshots": "max_record_bytes_between_snapshots",
        }
        kwargs = {attr: int(props[key]) for key, attr in keys.items() if key in props}
        return cls(**kwargs)
