"""What the member-epoch group protocols share: :class:`EpochGroupProtocol`, the base of the
consumer (KIP-848, :mod:`kbroker.group.consumer.protocol`) and streams (KIP-1071,
:mod:`kbroker.group.streams.protocol`) protocols, on top of the session timers and lifecycle
hooks every heartbeating group shares (:mod:`kbroker.group.member_session`, which the share
protocol uses too).

Both handle a heartbeat the same way (Kafka 4.4's ``GroupMetadataManager``): check the request,
then, with a copy of the group taken first, either let the member leave (epoch -1/-2) or run
the type's heartbeat; every state change is a record *replayed* at once and appended before
the response is released, and a refused request or a failed append puts the group back as it
was (Kafka reverts its timeline). Session and rebalance timers fence a member by the same
path. Shared here as well, because the two types write the same records for them:

- a member's **leave** (epoch -1 fences it, -2 keeps a static member and its assignment at
  epoch -2 until it rejoins or its session ends) and a **static member's replacement** (the
  rejoining instance takes over the old member's target under its new id, no new epoch);
- a member's removal (current assignment, target and metadata tombstones, its timers gone);
- the **rebalance timer** of a member asked to revoke (``revoking_state``): fenced if it is
  still at that epoch when its rebalance timeout ends;
- the **replay** of the group epoch, member metadata, target assignment and current
  assignment records, whose keys and common fields have the same shape for both types
  (the type converts what differs: ``_replay_*`` hooks).

What differs per type lives in the subclass: ``_validate``, ``_heartbeat``, ``_fence`` and the
replay hooks. A subclass names its group class (``group_class``), member class
(``member_class``), member state enum (``member_states``), records module (``rec``),
heartbeat response class (``response_class``), its word in messages (``group_type``:
``"consumer"``, ``"streams"``) and the prefix of its timer keys (``timer_prefix``). Pure: no
clock, no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from kbroker.wire.error_codes import ErrorCode as E

from .base import (append_error_to_response_error, validate_offset_fetch_epoch,
                   validate_txn_offset_commit_epoch)
from .classic.state import ClassicGroup
from .epoch_state import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, GroupError
from .member_session import MemberSessionProtocol


def check_not_empty(value: str | None, what: str) -> None:
    """A string field that may be null but not empty (``"<what> can't be empty."``)."""
    if value is not None and value == "":
        raise GroupError(E.INVALID_REQUEST, f"{what} can't be empty.")


@dataclass
class DescribedEpochGroup:
    """What a ``*GroupDescribe`` answers for every member-epoch group (a type adds its own
    fields after these: the consumer's assignor, the streams group's topology, the
    members)."""
    group_id: str
    error: int = 0
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0


class EpochGroupProtocol(MemberSessionProtocol):
    """The heartbeat frame, the undo of a refused or unwritten request, timer fencing, member
    removal and replacement, the leave, the replay and the per-type answers that are the
    same for every group whose members carry an epoch and reconcile with revocation."""

    group_class: type = object
    member_class: type = object
    member_states: Any = None               # the member state enum (UNKNOWN, and revoking_state)
    revoking_state: Any = None              # the state that arms the rebalance timer
    response_class: type = object
    rec: Any = None                         # the type's records module
    group_type: str = ""
    member_timer_kinds = ("session", "rebalance")

    @staticmethod
    def _empty_assignment():                # pragma: no cover - per type
        raise NotImplementedError

    # ----------------------------------------------------------------- helpers
    def _get(self, gid: str):
        g = self.groups.get(gid)
        return g if isinstance(g, self.group_class) else None

    def _apply(self, records: list, record) -> None:
        """Replay ``record`` into the state now and queue it for the append."""
        records.append(record)
        self.replay(record.parsed_key, record.value, record.parsed_value)

    # ----------------------------------------------------------------- the heartbeat frame
    def heartbeat(self, req, now: int):
        try:
            self._validate(req)
            err = self.coordinator_error(req.group_id)
            if err:
                raise GroupError(err)
        except GroupError as e:
            return self.response_class(error=e.code, message=e.message)
        before = self._snapshot(req.group_id)
        records: list = []
        try:
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                resp = self._leave(req, records, now)
            else:
                resp = self._heartbeat(req, records, now)
        except GroupError as e:
            self._restore(req.group_id, before)      # nothing of a refused request stays
            return self.response_class(error=e.code, message=e.message)
        self._emit_with_revert(req.group_id, before, records)
        return resp

    def _snapshot(self, gid: str):
        g = self.groups.get(gid)
        if isinstance(g, self.group_class):
            return ("group", g.snapshot())
        return ("absent",) if g is None else ("other", g)

    def _restore(self, gid: str, snap) -> None:
        g = self.groups.get(gid)
        if snap[0] == "absent":
            if isinstance(g, self.group_class):
                del self.groups[gid]
                prefix = self.timer_prefix
                self.timers.cancel_where(lambda k: len(k) > 2 and k[0].startswith(prefix)
                                         and k[1] == gid)
        elif snap[0] == "group":
            if isinstance(g, self.group_class):
                g.__dict__.update(snap[1].__dict__)      # in place: references stay valid
            else:
                self.groups[gid] = snap[1]
        else:
            self.groups[gid] = snap[1]

    def _emit_with_revert(self, gid: str, before, records: list, respond: bool = True) -> None:
        if not records:
            return

        def then(error: int, t: int) -> None:
            if error:
                # the group as it was before this request (Kafka reverts its timeline)
                self._restore(gid, before)
                if respond:
                    self._out.response = self.response_class(
                        error=append_error_to_response_error(error))
        self._emit(records, then=then)

    # ----------------------------------------------------------------- timers
    def _session_expired(self, gid: str, member_id: str, now: int) -> None:
        self._fence_by_timer(gid, member_id, lambda m: True, now)

    def _still_revoking(self, m, epoch: int) -> bool:
        """Whether a rebalance timer armed at ``epoch`` still applies to ``m`` (Kafka fences
        a member still at that epoch)."""
        return m.member_epoch == epoch

    def _schedule_rebalance(self, gid: str, m) -> None:
        mid, epoch = m.member_id, m.member_epoch
        self.timers.schedule(self._timer_key("rebalance", gid, mid), m.rebalance_timeout_ms,
                             lambda t: self._fence_by_timer(
                                 gid, mid, lambda x: self._still_revoking(x, epoch), t))

    def _arm_rebalance(self, gid: str, m) -> None:
        """After a member's reconciliation: a member asked to revoke has its rebalance
        timeout to do so; any other has no rebalance timer."""
        if m.state is self.revoking_state:
            self._schedule_rebalance(gid, m)
        else:
            self.timers.cancel(self._timer_key("rebalance", gid, m.member_id))

    def _fence_by_timer(self, gid: str, member_id: str, check: Callable[[Any], bool],
                        now: int = 0) -> None:
        """A session or rebalance timer fired: fence the member if ``check`` still holds."""
        group = self._get(gid)
        m = None if group is None else group.members.get(member_id)
        if m is None or not check(m):
            return
        before = self._snapshot(gid)
        records: list = []
        self._fence_expired(group, m, records, now)
        self.counters["members_expired"] += 1
        self._emit_with_revert(gid, before, records, respond=False)

    def _fence_expired(self, group, member, records: list, now: int) -> None:
        self._fence(group, [member], records, now)

    def _fence(self, group, members, records: list, now: int = 0) -> None:  # pragma: no cover
        raise NotImplementedError

    # ----------------------------------------------------------------- members
    def _remove_member_records(self, group, member_id: str, records: list, part: int) -> None:
        """A member goes (Kafka's ``removeMember``): its current assignment, target and
        metadata tombstones, and its timers."""
        gid, rec = group.group_id, self.rec
        self._apply(records, rec.tombstone(part, rec.CURRENT_MEMBER_ASSIGNMENT, gid, member_id))
        self._apply(records, rec.tombstone(part, rec.TARGET_ASSIGNMENT_MEMBER, gid, member_id))
        self._apply(records, rec.tombstone(part, rec.MEMBER_METADATA, gid, member_id))
        self._cancel_member_timers(gid, member_id)

    def _target_of_emptied_group(self, group, records: list, part: int) -> None:
        """Kafka 4.4 (``consumerGroupFenceMembers``, ``streamsGroupFenceMember``): when the
        members fenced were the group's last, its (empty) target assignment is at the new
        group epoch at once, with timestamp 0 — an empty group is not Assigning, and the
        next member to join is assigned without waiting for the assignment interval
        (Kafka 4.3 left the assignment epoch one behind). Call after the epoch bump."""
        if not group.members:
            self._apply(records, self.rec.target_assignment_metadata_record(
                part, group.group_id, group.group_epoch, 0))

    def _replace_static(self, group, old, member_id: str, records: list, part: int):
        """A static member rejoins under ``member_id``: it takes over ``old``'s target
        assignment (and, once reconciled, what it held) at epoch 0, without a new group
        epoch; ``old`` goes."""
        gid, rec = group.group_id, self.rec
        target = group.target.get(old.member_id, self._empty_assignment())
        new = replace(old, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        self._remove_member_records(group, old.member_id, records, part)
        self._apply(records, rec.member_metadata_record(part, gid, new))
        self._apply(records, rec.target_assignment_member_record(part, gid, member_id, target))
        self._apply(records, rec.current_assignment_record(part, gid, new))
        return group.members[member_id]

    def _unreleased_instance(self, member_id: str, instance_id: str, holder) -> GroupError:
        return GroupError(E.UNRELEASED_INSTANCE_ID,
                          f"Static member {member_id} with instance id {instance_id} cannot "
                          f"join the group because the instance id is owned by "
                          f"{holder.member_id} member.")

    def _fenced_instance(self, member_id: str, instance_id: str, holder) -> GroupError:
        return GroupError(E.FENCED_INSTANCE_ID,
                          f"Static member {member_id} with instance id {instance_id} was "
                          f"fenced by member {holder.member_id}.")

    # ----------------------------------------------------------------- leaving
    def _missing_group(self, gid: str) -> GroupError:
        return GroupError(E.GROUP_ID_NOT_FOUND,
                          f"{self.group_type.capitalize()} group {gid} not found.")

    def _static_left(self, m):
        """``m`` after a temporary leave (epoch -2)."""
        return replace(m, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)

    def _leave(self, req, records: list, now: int):
        """Epoch -1: the member (found by member id, or by instance id for a static one)
        is fenced; epoch -2: a static member keeps its assignment (and the group its
        epoch) until it rejoins or its session times out."""
        gid = req.group_id
        group = self._get(gid)
        if group is None:
            raise self._missing_group(gid)
        if req.instance_id is None:
            m = group.members.get(req.member_id)
            if m is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID,
                                 f"Member {req.member_id} is not a member of group {gid}.")
        else:
            m = group.static_member(req.instance_id)
            if m is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if m.member_id != req.member_id:
                raise self._fenced_instance(req.member_id, req.instance_id, m)
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                self._apply(records, self.rec.current_assignment_record(
                    self.partition_for(gid), gid, self._static_left(m)))
                self.timers.cancel(self._timer_key("rebalance", gid, m.member_id))
                return self.response_class(member_id=m.member_id,
                                           member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        self._fence(group, [m], records, now)
        return self.response_class(member_id=req.member_id, member_epoch=req.member_epoch)

    # ----------------------------------------------------------------- replay
    def replay(self, k, value_bytes, value=None) -> None:
        """Apply one record of this type (our own, or read at load). The records the two
        types share are applied here; ``_replay_*`` convert their type's values."""
        rec = self.rec
        if value is None and value_bytes is not None:
            value = rec.decode_value(k.record_type, value_bytes)
        tombstone = value_bytes is None
        gid, rt, mid = k.group, k.record_type, k.member_id
        g = self._group_for_replay(gid, tombstone, on_replace=self._replaced_at_replay)
        if g is None:
            return
        if rt == rec.GROUP_METADATA:
            if tombstone:
                self._replay_group_tombstone(gid)
                return
            g.group_epoch, g.metadata_hash = value.epoch, value.metadata_hash
            self._replay_group_metadata(g, value)
        elif rt == rec.MEMBER_METADATA:
            if tombstone:
                self._replay_member_gone(g, mid)
                return
            old = g.members.get(mid) or self.member_class(mid)
            self._replay_member_metadata(g, old, value)
        elif rt == rec.TARGET_ASSIGNMENT_METADATA:
            self._replay_target_metadata(g, value, tombstone)
        elif rt == rec.TARGET_ASSIGNMENT_MEMBER:
            if tombstone:
                g.target.pop(mid, None)
            else:
                g.target[mid] = self._replay_target(value)
        elif rt == rec.CURRENT_MEMBER_ASSIGNMENT:
            old = g.members.get(mid)
            if tombstone:
                # the member stays until its metadata tombstone, with nothing and no epoch
                if old is not None:
                    g.put_member(replace(old, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                         previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                         state=self.member_states.UNKNOWN,
                                         assigned=self._empty_assignment(),
                                         pending_revocation=self._empty_assignment()))
                return
            self._replay_current_assignment(g, old or self.member_class(mid), value)
        else:
            self._replay_other(g, k, value, tombstone)

    def _replaced_at_replay(self, g) -> None:
        """An empty classic group makes way for a group of this type at replay."""

    def _replay_group_metadata(self, g, value) -> None:
        """The type's fields of its group metadata record, beyond epoch and hash."""

    def _replay_member_gone(self, g, member_id: str) -> None:
        g.remove_member(member_id)

    def _replay_member_metadata(self, g, old, value) -> None:  # pragma: no cover - per type
        raise NotImplementedError

    def _replay_target(self, value):                         # pragma: no cover - per type
        raise NotImplementedError

    def _replay_current_assignment(self, g, old, value) -> None:  # pragma: no cover
        raise NotImplementedError

    def _replay_other(self, g, k, value, tombstone: bool) -> None:
        """Record types only this group type has."""

    def _group_for_replay(self, gid: str, tombstone: bool, on_replace=None):
        """The group a record of this type applies to, created if needed; None when the
        record is to be ignored (a tombstone for nothing, or a live group of another type
        holding the id). ``on_replace`` sees an empty classic group before it makes way."""
        g = self.groups.get(gid)
        if isinstance(g, self.group_class):
            return g
        if tombstone:
            return None
        if g is not None and not (isinstance(g, ClassicGroup) and g.is_empty()):
            return None                        # a live group of another type keeps its id
        if g is not None and on_replace is not None:
            on_replace(g)
        g = self.groups[gid] = self.group_class(gid)
        return g

    def _replay_group_tombstone(self, gid: str) -> None:
        """The group's metadata tombstone: the group goes, its committed offsets stay (under
        an empty classic group, as Kafka keeps them)."""
        self.shard._remove_group(gid, keep_offsets=True)
        if gid in self.shard.offsets:
            self.groups[gid] = ClassicGroup(gid, state_timestamp_ms=-1)

    @staticmethod
    def _replay_target_metadata(g, value, tombstone: bool) -> None:
        if tombstone:
            g.assignment_epoch, g.assignment_timestamp_ms = 0, 0
        else:
            g.assignment_epoch = value.assignment_epoch
            g.assignment_timestamp_ms = value.assignment_timestamp

    # ----------------------------------------------------------------- lifecycle hooks
    def _loaded_session_timeout(self, m) -> int | None:
        """A loaded member's session timeout; None: the group's."""
        return None

    def on_loaded(self, g, now: int) -> None:
        """A replayed group starts serving: every member's session runs from now, and a
        member that was revoking has its rebalance timeout again."""
        gid = g.group_id
        for m in g.members.values():
            self._schedule_session(gid, m.member_id, self._loaded_session_timeout(m))
            if m.state is self.revoking_state:
                self._schedule_rebalance(gid, m)

    # ----------------------------------------------------------------- describe
    def _describe_lookup(self, gid: str, described_class: type):
        """``(group, None)`` for a group of this type, else ``(None, answer)`` with the error
        a ``*GroupDescribe`` gives for it."""
        if not gid:
            return None, described_class(gid, E.INVALID_GROUP_ID, "GroupId can't be empty.")
        err = self.coordinator_error(gid)
        if err:
            return None, described_class(gid, err)
        g = self.groups.get(gid)
        if g is None or g.is_dead():
            return None, described_class(gid, E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
        if not isinstance(g, self.group_class):
            return None, described_class(gid, E.GROUP_ID_NOT_FOUND,
                                         f"Group {gid} is not a {self.group_type} group.")
        return g, None

    # ----------------------------------------------------------------- offsets (per type)
    def validate_txn_offset_commit(self, g, mid: str, instance: str | None, epoch: int) -> int:
        return validate_txn_offset_commit_epoch(g.members, mid, instance, epoch)

    def validate_offset_fetch(self, g, mid: str | None, epoch: int) -> int:
        return validate_offset_fetch_epoch(g.members, mid, epoch)
