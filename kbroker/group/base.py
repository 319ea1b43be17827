"""What every group type shares: the :class:`Result` of an event, the answers the admin
APIs give for any group, and :class:`ShardPart`, the base of the per-type protocols and the
offsets manager.

Kafka's group coordinator has one ``GroupCoordinatorShard`` per ``__consumer_offsets``
partition, holding a ``GroupMetadataManager`` (groups of every type) and an
``OffsetMetadataManager`` (committed offsets). Here one :class:`~kbroker.group.manager.GroupManager`
plays the shard for every partition this node leads; each group type's protocol
(:mod:`kbroker.group.classic`, :mod:`kbroker.group.consumer`) and the offsets manager are
*parts* of it: they read and write the shard's group table, timers and outbox (records to
append, replies to parked requests) through :class:`ShardPart`. Pure: no clock, no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Protocol

from kbroker.wire.error_codes import ErrorCode as E

from .records import CoordinatorRecord

@dataclass
class Result:
    """What an event produced. ``records`` must be appended (in order) before
    ``continuations`` run with the append's error code (0 = durable) — the driver calls
    :meth:`GroupManager.after_append`. Records whose ``replay`` flag is set take effect
    (are replayed) only once appended; the others are snapshots of in-memory state.
    ``replies`` complete parked requests now."""
    records: list[CoordinatorRecord] = field(default_factory=list)
    replay: list[bool] = field(default_factory=list)
    replies: list[tuple[Any, Any]] = field(default_factory=list)
    response: Any = None
    continuations: list[Callable[[int, int], None]] = field(default_factory=list)


def append_error_to_response_error(code: int) -> int:
    """Kafka's mapping of a failed ``__consumer_offsets`` append to what clients see."""
    if code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS,
                E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if code in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return E.UNKNOWN_SERVER_ERROR
    return code


@dataclass
class DescribedMember:
    """A group member as the describe APIs report it."""
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class DescribedGroup:
    """A DescribeGroups answer (the classic API, which answers for every group type)."""
    group_id: str
    error: int
    state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedMember]
    # DescribeGroups v6+ (KIP-1043) answers GROUP_ID_NOT_FOUND with this message where older
    # versions answer a Dead group without error (an unknown id, a group of another type)
    not_found: str | None = None


class ListedGroup(NamedTuple):
    """A ListGroups entry: ``group_type`` is ``classic``/``consumer``/... (KIP-848)."""
    group_id: str
    protocol_type: str
    state: str
    group_type: str


class Shard(Protocol):
    """What the shard's components reach of the shard itself (``GroupManager`` is the one
    implementation; declared here so that the components, which the manager builds, need not
    import it)."""
    config: Any
    groups: dict
    timers: Any
    counters: Any
    loaded: set  # __consumer_offsets partitions served
    classic: Any       # the classic protocol part
    consumer: Any      # the consumer (KIP-848) protocol part
    offsets: Any       # the offsets part

    def protocol_of(self, group) -> Any: ...
    def partition_for(self, group_id: str) -> int: ...
    def coordinator_error(self, group_id: str) -> int: ...


class ShardPart:
    """A component of the shard (one group type's protocol, or the offsets manager).

    It shares the shard's state by reference: ``groups`` (group id → group of any type),
    ``timers``, ``config``, ``counters``, and the outbox of the event being handled.
    """

    def __init__(self, shard: Shard) -> None:
        self.shard = shard

    # views of the shard's state
    @property
    def config(self):
        return self.shard.config

    @property
    def groups(self) -> dict:
        return self.shard.groups

    @property
    def timers(self):
        return self.shard.timers

    @property
    def counters(self) -> dict:
        return self.shard.counters

    @property
    def _out(self) -> Result:
        return self.shard._out

    # the shard's outbox
    def partition_for(self, group_id: str) -> int:
        return self.shard.partition_for(group_id)

    def coordinator_error(self, group_id: str) -> int:
        return self.shard.coordinator_error(group_id)

    def _reply(self, slot: Any, response: Any) -> bool:
        return self.shard._reply(slot, response)

    def _emit(self, records: list[CoordinatorRecord], *, replay: bool = False,
              then: Callable[[int, int], None] | None = None) -> None:
        self.shard._emit(records, replay=replay, then=then)


# --- offset requests checked against member epochs (consumer and streams groups) ----------
# Kafka's ConsumerGroup/StreamsGroup validateOffsetFetch and the transactional commit check:
# the same rules for every group type whose members carry a member epoch.

def validate_txn_offset_commit_epoch(members: dict, member_id: str, instance_id: str | None,
                                     epoch: int) -> int:
    """TxnOffsetCommit: a commit without a member (an empty group, or the admin's
    ``-1``/``""``) passes; otherwise the member must exist and the epoch not be ahead of it."""
    if epoch < 0 and not members:
        return E.NONE
    if epoch == -1 and member_id == "" and instance_id is None:
        return E.NONE
    m = members.get(member_id)
    if m is None:
        return E.UNKNOWN_MEMBER_ID
    if epoch > m.member_epoch:
        return E.STALE_MEMBER_EPOCH
    return E.NONE


def validate_offset_fetch_epoch(members: dict, member_id: str | None, epoch: int) -> int:
    """OffsetFetch v9+: an admin fetch (no member, epoch < 0) passes; a member's must carry
    its current epoch."""
    if member_id is None and epoch < 0:
        return E.NONE
    m = members.get(member_id or "")
    if m is None:
        return E.UNKNOWN_MEMBER_ID
    if epoch != m.member_epoch:
        return E.STALE_MEMBER_EPOCH
    return E.NONE
