"""A streams group (KIP-1071): members, epochs, topology, target assignment of tasks, and the
reconciliation of each member towards its target. Pure data and rules: no clock, no I/O, no
records (:mod:`kbroker.group.streams.protocol` turns events into records, and replaying them
is the only way this state changes).

It is the consumer group's model (:mod:`kbroker.group.consumer.state`) with *tasks* instead
of partitions: a task is ``(subtopology id, partition)`` and a member holds **active**,
**standby** and **warm-up** tasks. Reconciliation (Kafka's streams
``CurrentAssignmentBuilder``) keeps *revocation before assignment*: a member first gives up
the tasks that left its target (``UNREVOKED_TASKS``, staying at its epoch); it then gets its
new tasks, except active tasks another member still holds (``UNRELEASED_TASKS`` until they
are released). Standby and warm-up tasks are never exclusive. Replica roles change without a
revocation, as in Kafka 4.4: an active task demoted to standby, a standby turned warm-up (and
back); a standby or warm-up promoted to active keeps its role until the active task is
granted.

Group states (Kafka's ``StreamsGroupState``): Empty, NotReady (the topology cannot be
configured: missing source topics, internal topics still being created), Assigning,
Reconciling, Stable, Dead.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from kbroker.wire.error_codes import ErrorCode as E

from ..epoch_state import (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,  # noqa: F401
                           EpochGroupMixin, EpochMemberState, GroupError, check_epoch)
from .topology import Topology

# subtopology id -> partitions
Tasks = Mapping[str, frozenset[int]]
KINDS = ("active", "standby", "warmup")


class MemberState(EpochMemberState):
    """The byte stored in StreamsGroupCurrentMemberAssignment."""
    STABLE = 0
    UNREVOKED_TASKS = 1
    UNRELEASED_TASKS = 2
    UNKNOWN = 127


def norm(tasks: Mapping[str, frozenset[int]] | None) -> dict[str, frozenset[int]]:
    return {s: frozenset(ps) for s, ps in (tasks or {}).items() if ps}


def tasks_of(pairs) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for s, p in pairs:
        out.setdefault(s, set()).add(p)
    return {s: frozenset(ps) for s, ps in out.items()}


def pairs_of(tasks: Tasks) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


@dataclass(frozen=True)
class TaskSet:
    """Active, standby and warm-up tasks (each subtopology id → partitions)."""
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def normalized(self) -> "TaskSet":
        return TaskSet(norm(self.active), norm(self.standby), norm(self.warmup))

    def is_empty(self) -> bool:
        return not (norm(self.active) or norm(self.standby) or norm(self.warmup))


EMPTY = TaskSet()


@dataclass(frozen=True)
class StreamsGroupMember:
    """One streams group member; immutable (a change is a new value)."""
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: TaskSet = EMPTY
    pending_revocation: TaskSet = EMPTY

    def metadata(self) -> tuple:
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                self.rebalance_timeout_ms, self.topology_epoch, self.process_id,
                self.user_endpoint, self.client_tags)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch


def check_member_epoch(m: StreamsGroupMember, received: int, owned_active: Tasks | None) -> None:
    """Fencing (``throwIfStreamsGroupMemberEpochIsInvalid``): an older epoch passes as the
    previous one while the member still owns a subset of its active tasks."""
    check_epoch("streams", m, received,
                lambda: owned_active is not None
                and pairs_of(norm(owned_active)) <= pairs_of(norm(m.assigned.active)))


def reconcile(m: StreamsGroupMember, *, target_epoch: int, target: TaskSet,
              active_owner: Callable[[str, int], str | None],
              owned: TaskSet | None) -> StreamsGroupMember:
    """The member's next state. ``active_owner(subtopology, partition)`` is the member that
    holds the task actively (assigned or pending revocation), None if free. ``owned`` are
    the tasks the client reported (None: not reported, so assumed still held)."""
    st = m.state
    if st is MemberState.STABLE and m.member_epoch == target_epoch:
        return m
    if st is MemberState.UNREVOKED_TASKS:
        if _still_owns(owned, m.pending_revocation):
            return m
    elif st is MemberState.UNKNOWN:
        if owned is None or not owned.is_empty():
            raise GroupError(E.FENCED_MEMBER_EPOCH,
                             "The streams group member is in a unknown state. The member must "
                             "abandon all its tasks and rejoin.")
    target = target.normalized()
    cur = m.assigned.normalized()
    c = {k: pairs_of(getattr(cur, k)) for k in KINDS}
    t = {k: pairs_of(getattr(target, k)) for k in KINDS}
    keep = {k: c[k] & t[k] for k in KINDS}
    revoke = {k: c[k] - t[k] for k in KINDS}
    # replica roles change without a revocation (Kafka 4.4's CurrentAssignmentBuilder): an
    # active task demoted to standby is a standby at once; a standby becoming a warm-up
    # (or back) changes role at once; a standby or warm-up promoted to active keeps its
    # role until the active task is granted, so its state is never dropped in between
    now = {k: set() for k in KINDS}
    now["standby"] |= (t["standby"] - keep["standby"]) & c["active"]
    for a, b in (("standby", "warmup"), ("warmup", "standby")):
        moved = c[a] & (t[b] - keep[b])
        now[b] |= moved
        revoke[a] -= moved
    for k in ("standby", "warmup"):
        promoted = revoke[k] & t["active"]
        revoke[k] -= promoted
        keep[k] |= promoted
    pending = TaskSet(**{k: tasks_of(v) for k, v in revoke.items()})
    if not pending.is_empty() and _still_owns(owned, pending):
        return replace(m, state=MemberState.UNREVOKED_TASKS, previous_member_epoch=m.member_epoch,
                       assigned=TaskSet(**{k: tasks_of(keep[k] | now[k]) for k in KINDS}),
                       pending_revocation=pending)
    unreleased = False
    new = {k: keep[k] | now[k] for k in KINDS}
    for kind in KINDS:
        for task in t[kind] - new[kind]:
            if kind == "active":
                holder = active_owner(*task)
                if holder is not None and holder != m.member_id:
                    unreleased = True
                    continue
            new[kind].add(task)
    for k in ("standby", "warmup"):                 # promoted this step: the replica goes
        new[k] -= new["active"]
    return replace(m, state=MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE,
                   previous_member_epoch=m.member_epoch, member_epoch=target_epoch,
                   assigned=TaskSet(**{k: tasks_of(v) for k, v in new.items()}),
                   pending_revocation=EMPTY)


def _still_owns(owned: TaskSet | None, pending: TaskSet) -> bool:
    if owned is None:
        return True
    for kind in KINDS:
        if pairs_of(norm(getattr(owned, kind))) & pairs_of(norm(getattr(pending, kind))):
            return True
    return False


class StreamsGroupState(enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class StreamsGroup(EpochGroupMixin):
    """One streams group. ``target`` is the target assignment by member id;
    ``active_owners`` (subtopology, partition) → member holding the task actively.
    ``ready`` (not stored) says whether the topology could be configured at the last
    heartbeat; ``endpoint_epoch`` (not stored, as Kafka) counts changes of who runs what."""
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: tuple[tuple[str, str], ...] = ()
    assignment_epoch: int = 0
    assignment_timestamp_ms: int = 0
    topology: Topology | None = None
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, TaskSet] = field(default_factory=dict)
    active_owners: dict[tuple[str, int], str] = field(default_factory=dict)
    ready: bool = False
    endpoint_epoch: int = 0
    shutdown_requested: bool = False
    dead: bool = False
    # in memory only, as Kafka's: what members reported of their restore progress
    # (warmup.TaskOffsets by member), whether a member speaks StreamsGroupHeartbeat v1+ (it
    # reports that progress), and the refined assignment of the assignment epoch
    task_offsets: dict = field(default_factory=dict)
    reports_progress: dict[str, bool] = field(default_factory=dict)
    refined: tuple[int, dict] | None = None

    group_type = "streams"
    states = StreamsGroupState

    def snapshot(self) -> "StreamsGroup":
        return replace(self, members=dict(self.members), static_members=dict(self.static_members),
                       target=dict(self.target), active_owners=dict(self.active_owners),
                       task_offsets=dict(self.task_offsets),
                       reports_progress=dict(self.reports_progress))

    def is_ready(self) -> bool:
        return self.topology is not None and self.ready

    def protocol_type_name(self) -> str:
        return "streams"

    def is_subscribed_to(self, topic: str) -> bool:
        return self.topology is not None and topic in self.topology.topic_names()

    def put_member(self, new: StreamsGroupMember) -> None:
        self.remove_member(new.member_id)
        self.members[new.member_id] = new
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        for src in (new.assigned.active, new.pending_revocation.active):
            for task in pairs_of(src):
                self.active_owners[task] = new.member_id

    def remove_member(self, member_id: str) -> StreamsGroupMember | None:
        m = self.members.pop(member_id, None)
        if m is not None:
            for src in (m.assigned.active, m.pending_revocation.active):
                for task in pairs_of(src):
                    if self.active_owners.get(task) == member_id:
                        del self.active_owners[task]
            self._forget_static(m)
        return m

    def active_owner(self, sid: str, partition: int) -> str | None:
        return self.active_owners.get((sid, partition))

    def statistics(self) -> dict:
        return {"state": self.state_name(), "group_epoch": self.group_epoch,
                "assignment_epoch": self.assignment_epoch, "members": len(self.members),
                "topology_epoch": self.topology.epoch if self.topology else -1}
