"""A share group (KIP-932) and its members: the rules of ShareGroupHeartbeat.

Pure: events carry ``now_ms`` (the wall clock, as Kafka measures the assignment interval);
nothing here reads a clock or does I/O. Sessions are the shard's timers
(:mod:`kbroker.group.share.protocol`), on its monotonic clock.

Unlike a consumer group, a share group has no revocation: partitions are shared by
members (the share-partitions on the leaders make sure one record is held by one member at
a time), so a member gets its target assignment as soon as it is computed, and its member
epoch jumps to the group epoch.

Epochs (Kafka 4.3's ``GroupMetadataManager.shareGroupHeartbeat``):

- a new member bumps the **group epoch** once, a subscription change or a change of the
  subscribed topics' partitions once more (a first member subscribing is at epoch 2, as in
  Kafka 4.3.1); a member leaving once. A new member is at the group epoch at once, with an
  empty assignment; the target assignment is recomputed in the background, at most every
  ``group.share.assignment.interval.ms``, as a new group epoch (the **assignment
  epoch**), and members move to it on their next heartbeat (observed on Kafka 4.3.1: join →
  epoch 2 and ``[]``, a second later epoch 3 with the partitions);
- a member's epoch is the assignment epoch it last received; a heartbeat with a greater
  epoch, or a smaller one that is not its previous epoch, is ``FENCED_MEMBER_EPOCH``; an
  unknown member id with a non-zero epoch is ``UNKNOWN_MEMBER_ID``;
- Kafka 4.4 (measured, ``compat_tests/test_kbroker_cli.py``): a member joining an *empty*
  group whose subscribed partitions all have share state (a group used before) is one new
  group epoch and gets its assignment at once, at that epoch; the last member leaving makes
  the assignment epoch the new group epoch (an Empty group shows them equal). Other 4.4
  rules differ from the 4.3.1 ones above (FINDINGS F-975);
- epoch -1 leaves (answered with epoch -1); a member not heard from for
  ``group.share.session.timeout.ms`` is removed (:meth:`ShareGroup.remove`, called by the
  protocol's session timer).

The **simple assignor** (Kafka's ``SimpleAssignor``, homogeneous case): with at least as
many partitions as members, the partitions are dealt out in order so each partition has
exactly one member and the counts differ by at most one; with more members than
partitions, each member gets one partition and the partitions are shared round-robin.
Members subscribed to different topics are assigned per topic among that topic's
subscribers.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from kbroker.wire.error_codes import ErrorCode as E

from ..epoch_state import LEAVE_GROUP_MEMBER_EPOCH, GroupError, check_epoch
from .config import ShareGroupConfig

Assignment = Mapping[uuid.UUID, frozenset[int]]


class ShareGroupError(GroupError):
    """A Kafka error for the share group heartbeat being handled."""


@dataclass(frozen=True)
class ShareGroupMember:
    """One share group member; immutable (a change is a new value)."""
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: Assignment = field(default_factory=dict)


@dataclass
class HeartbeatRequest:
    """A ShareGroupHeartbeat as the coordinator reads it (null fields: unchanged)."""
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class HeartbeatResult:
    """What ShareGroupHeartbeat answers: the error or the member's epoch and assignment."""
    error: int = 0
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict[uuid.UUID, list[int]] | None = None


def simple_assign(members: Mapping[str, Iterable[str]],
                  topics: Mapping[str, tuple[uuid.UUID, int]]) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    """``members``: member id → subscribed topic names; ``topics``: name → (id, partitions).
    Deterministic: members are taken in sorted order."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    subscribers: dict[str, list[str]] = {}
    for m in sorted(members):
        for t in members[m]:
            if t in topics:
                subscribers.setdefault(t, []).append(m)
    for t in sorted(subscribers):
        tid, n = topics[t]
        ms = subscribers[t]
        if n <= 0 or not ms:
            continue
        if n >= len(ms):
            for p in range(n):
                out[ms[p % len(ms)]].setdefault(tid, set()).add(p)
        else:
            for i, m in enumerate(ms):
                out[m].setdefault(tid, set()).add(i % n)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}


@dataclass
class ShareGroup:
    """A share group's state: epochs, members, the target assignment and the topics it reads."""
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    topics_seen: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    assignment_due_ms: int | None = None      # when the next assignment batch may run
    metadata_hash: int = 0                     # of the subscribed topics (ShareGroupMetadata)
    # topic id -> (name, partitions) whose share state the group keeps
    # (ShareGroupStatePartitionMetadata's initialized topics)
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    dead: bool = False

    group_type = "share"

    def state_name(self) -> str:
        """Kafka's ``ShareGroupState``: Empty, Stable (no reconciliation in share groups)."""
        if self.dead:
            return "Dead"
        return "Empty" if not self.members else "Stable"

    def is_empty(self) -> bool:
        return not self.members

    def is_dead(self) -> bool:
        return self.dead

    def protocol_type_name(self) -> str:
        return "share"

    def snapshot(self) -> "ShareGroup":
        """A copy to restore if the records of a change cannot be appended."""
        return replace(self, members=dict(self.members), target=dict(self.target),
                       topics_seen=None if self.topics_seen is None else dict(self.topics_seen),
                       initialized=dict(self.initialized))

    # what the offsets manager asks of every group type (share groups commit no offsets)
    def offsets_expiry_base(self):
        return None

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def validate_offset_delete(self) -> int:
        return E.GROUP_ID_NOT_FOUND

    def subscribed_topic_names(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    # ------------------------------------------------------------------ events
    def heartbeat(self, req: HeartbeatRequest, topics: Mapping[str, tuple[uuid.UUID, int]],
                  now_ms: int, config: ShareGroupConfig) -> HeartbeatResult:
        try:
            return self._heartbeat(req, topics, now_ms, config)
        except GroupError as e:
            return HeartbeatResult(error=e.code, message=e.message)

    def _heartbeat(self, req, topics, now_ms, config) -> HeartbeatResult:
        if not req.member_id:
            raise ShareGroupError(E.INVALID_REQUEST, "MemberId can't be empty.")
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if req.member_id not in self.members:
                raise ShareGroupError(E.UNKNOWN_MEMBER_ID,
                                      f"Member {req.member_id} is not a member of group {self.group_id}.")
            self.remove(req.member_id, topics, now_ms)
            return HeartbeatResult(member_id=req.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
        if req.member_epoch < 0:
            raise ShareGroupError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
        member = self.members.get(req.member_id)
        if req.member_epoch == 0:
            if not req.subscribed_topic_names:
                raise ShareGroupError(E.INVALID_REQUEST,
                                      "SubscribedTopicNames must be set in first request.")
            if member is None and len(self.members) >= config.max_size:
                raise ShareGroupError(E.GROUP_MAX_SIZE_REACHED,
                                      f"The share group has reached its maximum capacity of "
                                      f"{config.max_size} members.")
            if member is None:
                member = ShareGroupMember(member_id=req.member_id)
        else:
            if member is None:
                raise ShareGroupError(E.UNKNOWN_MEMBER_ID,
                                      f"Member {req.member_id} is not a member of group {self.group_id}.")
            # no revocation: any previous epoch passes (the answer moving it on was lost)
            check_epoch("share", member, req.member_epoch)
        new_sub = member.subscribed_topic_names
        if req.subscribed_topic_names is not None:
            new_sub = tuple(sorted(set(req.subscribed_topic_names)))
        joining = req.member_id not in self.members
        updated = replace(member, rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
                          client_id=req.client_id or member.client_id,
                          client_host=req.client_host or member.client_host,
                          subscribed_topic_names=new_sub)
        names_before = self.subscribed_topic_names()
        was_empty = not self.members
        self.members[req.member_id] = updated
        changed = self.subscribed_topic_names() != names_before
        relevant = {t: topics[t] for t in self.subscribed_topic_names() if t in topics}
        step = (1 if joining else 0) + (1 if changed or relevant != self.topics_seen else 0)
        if step and joining and was_empty and self._all_initialized(relevant):
            # Kafka 4.4 (measured): a member joining an empty group whose subscribed
            # partitions all have share state is one new group epoch, assigned at once
            self.group_epoch += 1
            self.topics_seen = relevant
            self.assignment_due_ms = None
            self._compute_target(topics)
        elif step:
            self.group_epoch += step
            self.topics_seen = relevant
            if self.assignment_due_ms is None:
                self.assignment_due_ms = now_ms + config.assignment_interval_ms
        if self.assignment_due_ms is not None and now_ms >= self.assignment_due_ms:
            # the assignment batch runs (Kafka 4.3 assigns in the background, at most every
            # group.share.assignment.interval.ms): it is a new group epoch
            self.assignment_due_ms = None
            self.group_epoch += 1
            self._compute_target(topics)
        m = self.members[req.member_id]
        old_assigned = m.assigned
        if joining:
            # a new member is at the group epoch at once, with what the current target
            # gives it (nothing, until the next assignment batch)
            m = replace(m, previous_member_epoch=0, member_epoch=self.group_epoch,
                        assigned=dict(self.target.get(m.member_id, {})))
            self.members[m.member_id] = m
        elif m.member_epoch < self.assignment_epoch:
            m = replace(m, previous_member_epoch=m.member_epoch, member_epoch=self.assignment_epoch,
                        assigned=dict(self.target.get(m.member_id, {})))
            self.members[m.member_id] = m
        send = joining or req.member_epoch == 0 or dict(m.assigned) != dict(old_assigned)
        return HeartbeatResult(
            member_id=m.member_id, member_epoch=m.member_epoch,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            assignment=({t: sorted(ps) for t, ps in m.assigned.items() if ps} if send else None))

    def _compute_target(self, topics: Mapping[str, tuple[uuid.UUID, int]]) -> None:
        self.target = simple_assign({m.member_id: m.subscribed_topic_names
                                     for m in self.members.values()}, topics)
        self.assignment_epoch = self.group_epoch

    def remove(self, member_id: str, topics: Mapping[str, tuple[uuid.UUID, int]],
               now_ms: int = 0) -> None:
        """A member left: a new group epoch, and its partitions go to the others at the next
        assignment batch (due at once)."""
        if self.members.pop(member_id, None) is not None:
            self.target.pop(member_id, None)
            self.group_epoch += 1
            self.topics_seen = {t: topics[t] for t in self.subscribed_topic_names() if t in topics}
            self.assignment_due_ms = now_ms
            if not self.members:
                # the last member gone: the (empty) target assignment is at the new epoch at
                # once, as Kafka 4.4 describes an Empty group (group epoch = assignment epoch)
                self.target = {}
                self.assignment_epoch = self.group_epoch
                self.assignment_due_ms = None

    def _all_initialized(self, relevant: Mapping[str, tuple[uuid.UUID, int]]) -> bool:
        """Every partition of the subscribed topics has share state (the group's
        ShareGroupStatePartitionMetadata initialized topics)."""
        return bool(relevant) and all(
            set(range(n)) <= set(self.initialized.get(tid, ("", frozenset()))[1])
            for tid, n in relevant.values())

    def is_assigned(self, member_id: str, topic_id: uuid.UUID, partition: int) -> bool:
        m = self.members.get(member_id)
        return m is not None and partition in m.assigned.get(topic_id, ())

    def statistics(self) -> dict:
        return {"members": len(self.members), "group_epoch": self.group_epoch,
                "assignment_epoch": self.assignment_epoch}
