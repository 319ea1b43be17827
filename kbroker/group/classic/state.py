"""A classic consumer group (the JoinGroup/SyncGroup protocol): its states, members and
the bookkeeping the rebalance protocol needs. Pure data and local rules; the decisions
(what an event does to a group) live in :mod:`kbroker.group.classic.protocol`.

States and their legal predecessors (Kafka's ``ClassicGroupState``)::

    Empty               ← PreparingRebalance (the join phase ended with no member)
    PreparingRebalance  ← Empty, CompletingRebalance, Stable
    CompletingRebalance ← PreparingRebalance (generation bumped, waiting for the leader)
    Stable              ← CompletingRebalance (the leader's assignment was persisted)
    Dead                ← any (the group was deleted or its last offsets expired)

A member is *awaiting join* while a JoinGroup of it is parked, *awaiting sync* while a
SyncGroup is parked; the parked request is an opaque ``slot`` the driver completes with
the reply the protocol emits. ``num_awaiting_join`` is kept incrementally so that a join
costs O(1) even in a group with thousands of members.
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Any

from kbroker.wire.error_codes import ErrorCode as E


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.COMPLETING_REBALANCE, GroupState.STABLE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalTransition(RuntimeError):
    """A bug in the manager: a transition the state diagram does not allow."""


@dataclass
class Member:
    """One member of a classic group."""
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]          # in the member's preference order
    assignment: bytes = b""
    awaiting_join: Any = None                   # parked JoinGroup slot
    awaiting_sync: Any = None                   # parked SyncGroup slot
    is_new: bool = False                        # joined but never completed a join phase

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata bytes (a rejoin that changes
        nothing needs no rebalance)."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str | None:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        return None

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a heartbeat deadline passing is harmless: members parked in a join or
        sync are waiting on the coordinator, not dead — unless they are new (a new member
        whose JoinGroup is parked too long is expired, its client will retry)."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


@dataclass
class ClassicGroup:
    """A classic group: members, generation and state."""
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)       # insertion-ordered
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    pending_join_members: set[str] = field(default_factory=set)    # KIP-394: id handed out
    pending_sync_members: set[str] = field(default_factory=set)
    supported_protocols: dict[str, int] = field(default_factory=dict)  # name -> #members
    num_awaiting_join: int = 0
    new_member_added: bool = False             # extends the initial rebalance delay
    subscribed_topics: frozenset[str] | None = None  # from consumer-protocol metadata

    group_type = "classic"

    # ----------------------------------------------------------------- what every type answers
    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def is_dead(self) -> bool:
        return self.state is GroupState.DEAD

    def state_name(self) -> str:
        return self.state.value

    def protocol_type_name(self) -> str:
        return self.protocol_type or ""

    def validate_offset_delete(self) -> int:
        """0, or NON_EMPTY_GROUP: offsets of a live group that does not use the consumer
        protocol cannot be deleted (its subscriptions are unknown)."""
        if not self.is_empty() and not self.uses_consumer_protocol():
            return E.NON_EMPTY_GROUP
        return E.NONE

    def offsets_expiry_base(self):
        """How an offset's retention clock starts (Kafka's offsetExpirationCondition):
        from the moment the group became Empty, or the commit itself for groups that
        never had members (simple consumers); None while the group is live."""
        if self.protocol_type:
            if not self.is_empty():
                return None
            ts = self.state_timestamp_ms
            return lambda o: ts if ts >= 0 else o.commit_timestamp_ms
        return lambda o: o.commit_timestamp_ms

    # ----------------------------------------------------------------- state
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise IllegalTransition(f"group {self.group_id!r}: {self.state.value} -> {target.value}")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # ----------------------------------------------------------------- members
    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def add(self, member: Member, slot: Any = None) -> None:
        if member.group_instance_id is not None:
            assert member.group_instance_id not in self.static_members
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        self.set_awaiting_join(member, slot)
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            for name in member.protocol_names():
                self.supported_protocols[name] -= 1
                if not self.supported_protocols[name]:
                    del self.supported_protocols[name]
            if member.awaiting_join is not None:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def set_awaiting_join(self, member: Member, slot: Any) -> Any:
        """Park ``slot`` (or clear with None); returns the slot it replaced."""
        old = member.awaiting_join
        if old is None and slot is not None:
            self.num_awaiting_join += 1
        elif old is not None and slot is None:
            self.num_awaiting_join -= 1
        member.awaiting_join = slot
        return old

    def update_member(self, member: Member, protocols: list[tuple[str, bytes]],
                      rebalance_timeout_ms: int, session_timeout_ms: int, slot: Any) -> Any:
        for name in member.protocol_names():
            self.supported_protocols[name] -= 1
            if not self.supported_protocols[name]:
                del self.supported_protocols[name]
        member.protocols = protocols
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        return self.set_awaiting_join(member, slot)

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> tuple[Member, Member]:
        """KIP-345: the instance rejoined without its member id; the old id is fenced and
        the member continues under ``new_id`` with its assignment. Returns (old, new)."""
        old = self.members.pop(old_id)
        if old.awaiting_join is not None:
            self.num_awaiting_join -= 1
        new = Member(new_id, old.group_instance_id, old.client_id, old.client_host,
                     old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
                     list(old.protocols), old.assignment)
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        for s in (self.pending_sync_members, self.pending_join_members):
            if old_id in s:
                s.discard(old_id)
                s.add(new_id)
        return old, new

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """The leader must be a member that rejoined; False if nobody rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members[self.leader_id]
        if leader.awaiting_join is not None:
            return True
        for m in self.members.values():
            if m.awaiting_join is not None:
                self.leader_id = m.member_id
                return True
        return False

    # ----------------------------------------------------------------- protocols
    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols.get(x, 0) == n for x in names))

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that every member supports;
        most votes wins, ties broken by the first member's preference (deterministic)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            v = m.vote(candidates)
            if v is not None:
                votes[v] = votes.get(v, 0) + 1
        best = max(votes.values())
        first = next(iter(self.members.values()))
        for name in first.protocol_names():
            if votes.get(name) == best:
                return name
        return next(n for n, c in votes.items() if c == best)   # pragma: no cover

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == "consumer"

    def _compute_subscribed_topics(self) -> frozenset[str] | None:
        if not self.uses_consumer_protocol():
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_subscription_topics(m.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    def statistics(self) -> dict:
        return {"state": self.state.value, "generation_id": self.generation_id,
                "members": len(self.members), "pending_join": len(self.pending_join_members),
                "awaiting_join": self.num_awaiting_join,
                "pending_sync": len(self.pending_sync_members)}


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def parse_subscription_topics(meta: bytes) -> list[str] | None:
    """Topics of a ``ConsumerProtocolSubscription`` (int16 version, then an array of
    strings first in every version). None if the bytes do not parse: protocol metadata
    is opaque to the coordinator and a malformed one must not break anything."""
    try:
        if len(meta) < 6:
            return None
        (version,) = _I16.unpack_from(meta, 0)
        if version < 0:
            return None
        (n,) = _I32.unpack_from(meta, 2)
        if n < 0 or n > len(meta):
            return None
        pos, topics = 6, []
        for _ in range(n):
            (ln,) = _I16.unpack_from(meta, pos)
            pos += 2
            if ln < 0 or pos + ln > len(meta):
                return None
            topics.append(bytes(meta[pos:pos + ln]).decode("utf-8"))
            pos += ln
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
