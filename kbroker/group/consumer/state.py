"""A consumer group of the KIP-848 protocol: members, epochs, target assignment and the
reconciliation of each member towards it. Pure data and rules: no clock, no I/O, no records
(:mod:`kbroker.group.consumer.protocol` turns events into records, and replaying those
records is the only way this state changes).

Vocabulary (KIP-848, Kafka 4.3's ``ConsumerGroup`` / ``ConsumerGroupMember`` /
``CurrentAssignmentBuilder``):

- **group epoch** — bumped whenever the group's subscriptions or membership change (or the
  subscribed topics' metadata); a new group epoch calls for a new target assignment.
- **assignment epoch** — the group epoch the current target assignment was computed for.
- **member epoch** — the epoch a member has reconciled to; it reaches the assignment epoch
  once the member owns exactly its target partitions (``STABLE``).
- **reconciliation** (``reconcile``): revocation before assignment. A member first gives
  up partitions that are no longer in its target (``UNREVOKED_PARTITIONS``, staying at its
  epoch); only then does it get new partitions, and only those no other member still owns
  (``UNRELEASED_PARTITIONS`` while some are held elsewhere).
- **assignment epochs per partition** (KIP-1251, Kafka 4.3): every assigned partition
  remembers the member epoch it was assigned in, so an offset commit with an older member
  epoch is still accepted for a partition assigned before that epoch.

Group states (Kafka's ``ConsumerGroupState``): Empty (no member), Assigning (group epoch >
assignment epoch), Reconciling (some member not reconciled to the assignment epoch),
Stable, Dead (deleted).
"""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping

from kbroker.wire.error_codes import ErrorCode as E

from ..epoch_state import (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,  # noqa: F401
                           EpochGroupMixin, EpochMemberState, GroupError, check_epoch)

# topic id -> partition -> the member epoch the partition was assigned in
Assignment = Mapping[uuid.UUID, Mapping[int, int]]
# topic id -> partitions (a target assignment carries no epochs)
Target = Mapping[uuid.UUID, frozenset[int]]


class MemberState(EpochMemberState):
    """Kafka's ``MemberState`` (the byte stored in ConsumerGroupCurrentMemberAssignment)."""
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ResolvedRegex:
    """The topics a subscribed regex matched, and the metadata image it was resolved against."""
    topics: frozenset[str]
    version: int            # the metadata image version it was resolved against
    timestamp_ms: int


@dataclass(frozen=True)
class ConsumerGroupMember:
    """One member; immutable (a change is a new value, compared to decide on records)."""
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic_metadata: object = None        # ClassicMemberMetadata of a classic member (kept as is)
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def assigned_partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        return {t: frozenset(ps) for t, ps in self.assigned.items() if ps}

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int | None:
        e = self.assigned.get(topic_id, {}).get(partition)
        if e is None:
            e = self.pending_revocation.get(topic_id, {}).get(partition)
        return e

    def with_epochs_reset(self) -> "ConsumerGroupMember":
        """A static member leaving (epoch -2): nothing pending, assignment epochs 0."""
        return replace(self, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={},
                       assigned={t: {p: 0 for p in ps} for t, ps in self.assigned.items()})


def owned_subset(owned: list[tuple[uuid.UUID, list[int]]] | None, assigned: Assignment) -> bool:
    """Kafka's ``isSubset``: every partition the client says it owns is assigned to it."""
    if owned is None:
        return False
    for topic_id, parts in owned:
        mine = assigned.get(topic_id)
        if mine is None:
            if parts:
                return False
            continue
        if any(p not in mine for p in parts):
            return False
    return True


def check_member_epoch(member: ConsumerGroupMember, received: int,
                       owned: list[tuple[uuid.UUID, list[int]]] | None) -> None:
    """Fencing (``throwIfConsumerGroupMemberEpochIsInvalid``): a newer epoch than ours is
    fenced; an older one is accepted only as the previous epoch with a subset of the
    current assignment (the response that bumped the epoch was lost)."""
    check_epoch("consumer", member, received, lambda: owned_subset(owned, member.assigned))


# --------------------------------------------------------------------------- reconciliation
def reconcile(member: ConsumerGroupMember, *, target_epoch: int, target: Target,
              owner_epoch: Callable[[uuid.UUID, int], int], subscribed: set[uuid.UUID],
              subscription_changed: bool,
              owned: list[tuple[uuid.UUID, list[int]]] | None) -> ConsumerGroupMember:
    """The member's next state (Kafka's ``CurrentAssignmentBuilder.build``).

    ``owner_epoch(topic, partition)`` is the epoch of the member currently holding the
    partition (assigned or pending revocation), -1 if free. ``owned`` is what the client
    reported owning (None = not reported). ``subscribed`` are the member's topic ids."""
    rec = _Reconciler(member, target_epoch, target, owner_epoch, subscribed, owned)
    st = member.state
    if st is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return rec.next_assignment(member.member_epoch, member.assigned)
        if subscription_changed:
            return rec.update_current(member.member_epoch, member.assigned)
        return member
    if st is MemberState.UNREVOKED_PARTITIONS:
        if rec.owns_any(member.pending_revocation):
            if subscription_changed:
                return rec.update_current(member.member_epoch, member.assigned)
            return member
        return rec.next_assignment(member.member_epoch, member.assigned)
    if st is MemberState.UNRELEASED_PARTITIONS:
        return rec.next_assignment(member.member_epoch, member.assigned)
    # UNKNOWN: only a member that gave up everything may go on
    if owned is None or owned:
        raise GroupError(E.FENCED_MEMBER_EPOCH,
                         "The consumer group member is in a unknown state. "
                         "The member must abandon all its partitions and rejoin.")
    return rec.next_assignment(target_epoch, member.assigned)


class _Reconciler:
    def __init__(self, member, target_epoch, target, owner_epoch, subscribed, owned):
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.owner_epoch = owner_epoch
        self.subscribed = subscribed
        self.owned = owned

    def owns_any(self, partitions: Assignment) -> bool:
        """Whether the client still owns any of ``partitions`` (unknown = yes)."""
        if self.owned is None:
            return True
        for topic_id, parts in self.owned:
            pending = partitions.get(topic_id)
            if pending and any(p in pending for p in parts):
                return True
        return False

    def update_current(self, epoch: int, assigned: Assignment) -> ConsumerGroupMember:
        """The subscription changed but the target did not (yet): partitions of topics no
        longer subscribed are revoked right away."""
        m = self.member
        if not self.subscribed and not m.pending_revocation:
            new_assigned: dict = {}
            new_pending: dict = {t: dict(ps) for t, ps in assigned.items()}
        else:
            new_assigned = {t: dict(ps) for t, ps in assigned.items() if t in self.subscribed}
            new_pending = {t: dict(ps) for t, ps in m.pending_revocation.items()}
            for t, ps in assigned.items():
                if t not in self.subscribed:
                    new_pending.setdefault(t, {}).update(ps)
        if _same(new_assigned, assigned):
            return m
        if new_pending and self.owns_any(new_pending):
            return replace(m, state=MemberState.UNREVOKED_PARTITIONS,
                           previous_member_epoch=m.member_epoch, member_epoch=epoch,
                           assigned=new_assigned, pending_revocation=new_pending)
        return replace(m, previous_member_epoch=m.member_epoch, member_epoch=epoch,
                       assigned=new_assigned)

    def next_assignment(self, epoch: int, assigned: Assignment) -> ConsumerGroupMember:
        m = self.member
        unreleased = False
        new_assigned: dict[uuid.UUID, dict[int, int]] = {}
        new_pending: dict[uuid.UUID, dict[int, int]] = {}
        to_assign: dict[uuid.UUID, set[int]] = {}
        for topic_id in set(self.target) | set(assigned):
            target = self.target.get(topic_id, frozenset()) if topic_id in self.subscribed else frozenset()
            current = assigned.get(topic_id, {})
            keep = {p: e for p, e in current.items() if p in target}
            revoke = {p: e for p, e in current.items() if p not in keep}
            pending_rev = m.pending_revocation.get(topic_id, {})
            add = set()
            for p in target:
                if p in keep:
                    continue
                if self.owner_epoch(topic_id, p) != -1 and p not in pending_rev:
                    unreleased = True          # still held by another member
                else:
                    add.add(p)
            if keep:
                new_assigned[topic_id] = keep
            if revoke:
                new_pending[topic_id] = revoke
            if add:
                to_assign[topic_id] = add
        if new_pending and self.owns_any(new_pending):
            # revocation first: stay at the current epoch until the client gave them up
            return replace(m, state=MemberState.UNREVOKED_PARTITIONS,
                           previous_member_epoch=m.member_epoch, member_epoch=epoch,
                           assigned=new_assigned, pending_revocation=new_pending)
        for topic_id, parts in to_assign.items():
            new_assigned.setdefault(topic_id, {}).update({p: self.target_epoch for p in parts})
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return replace(m, state=state, previous_member_epoch=m.member_epoch,
                       member_epoch=self.target_epoch, assigned=new_assigned,
                       pending_revocation={})


def _same(a: Assignment, b: Assignment) -> bool:
    norm = lambda x: {t: dict(ps) for t, ps in x.items() if ps}      # noqa: E731
    return norm(a) == norm(b)


def members_equal(a: ConsumerGroupMember, b: ConsumerGroupMember) -> bool:
    """Equality that ignores empty topic entries in assignments."""
    return (replace(a, assigned={}, pending_revocation={}) == replace(b, assigned={}, pending_revocation={})
            and _same(a.assigned, b.assigned) and _same(a.pending_revocation, b.pending_revocation))


# --------------------------------------------------------------------------- the group
@dataclass
class ConsumerGroup(EpochGroupMixin):
    """One consumer group. ``members`` by member id; ``target`` the target assignment by
    member id; ``owners`` (topic id, partition) → epoch of the member holding it."""
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    assignment_timestamp_ms: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, Target] = field(default_factory=dict)
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)
    owners: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    dead: bool = False

    group_type = "consumer"
    states = ConsumerGroupState

    def snapshot(self) -> "ConsumerGroup":
        """A copy to restore if the records of a request fail to append (members are
        immutable values, so copying the containers is enough)."""
        return replace(self, members=dict(self.members), static_members=dict(self.static_members),
                       target=dict(self.target), resolved_regexes=dict(self.resolved_regexes),
                       owners=dict(self.owners))

    # ----------------------------------------------------------------- what every type answers
    def protocol_type_name(self) -> str:
        return "consumer"

    def subscribed_topic_names(self) -> set[str]:
        out: set[str] = set()
        for m in self.members.values():
            out.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                r = self.resolved_regexes.get(m.subscribed_topic_regex)
                if r is not None:
                    out.update(r.topics)
        return out

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    # ----------------------------------------------------------------- members
    def member_subscribed_names(self, m: ConsumerGroupMember) -> set[str]:
        names = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            r = self.resolved_regexes.get(m.subscribed_topic_regex)
            if r is not None:
                names |= r.topics
        return names

    def put_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        if old is not None:
            self._drop_owners(old)
            self._forget_static(old)
        self.members[new.member_id] = new
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        for src in (new.assigned, new.pending_revocation):
            for t, ps in src.items():
                for p in ps:
                    self.owners[(t, p)] = new.member_epoch

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        m = self.members.pop(member_id, None)
        if m is not None:
            self._drop_owners(m)
            self._forget_static(m)
        return m

    def _drop_owners(self, m: ConsumerGroupMember) -> None:
        for src in (m.assigned, m.pending_revocation):
            for t, ps in src.items():
                for p in ps:
                    self.owners.pop((t, p), None)

    def owner_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.owners.get((topic_id, partition), -1)

    def preferred_assignor(self, configured: list[str], updated: Iterable[ConsumerGroupMember] = ()) -> str:
        """The assignor most members asked for (``ServerAssignor``), else the first
        configured one (``group.consumer.assignors``); ties go to configuration order."""
        members = dict(self.members)
        for m in updated:
            members[m.member_id] = m
        counts: dict[str, int] = {}
        for m in members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return configured[0]
        best = max(counts.values())
        for name in configured:
            if counts.get(name) == best:
                return name
        return sorted(n for n, c in counts.items() if c == best)[0]

    def statistics(self) -> dict:
        return {"state": self.state_name(), "group_epoch": self.group_epoch,
                "assignment_epoch": self.assignment_epoch, "members": len(self.members),
                "regexes": len(self.resolved_regexes)}
