"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) as pure rules
over :class:`~kbroker.group.classic.state.ClassicGroup`.

Kafka's ``GroupMetadataManager.classicGroup*`` methods, one part of the shard: events in
(with the wall-clock ``now_ms``, which the group's state timestamp and records carry),
records, replies and timers out through the shard's outbox
(:class:`~kbroker.group.base.ShardPart`). Timers are delays on the shard's monotonic clock
(Kafka's ``CoordinatorTimer``): a step of the wall clock expires no session and neither
hurries nor holds back a join or sync phase. The rules:

- KIP-394: a JoinGroup v4+ without a member id gets ``MEMBER_ID_REQUIRED`` and a fresh
  id, parked as a *pending* member until it rejoins or its session timeout passes.
- KIP-345: static members (``group.instance.id``) that rejoin without their id take over
  their old identity; in a Stable group with an unchanged protocol there is no rebalance,
  and the old id is fenced (``FENCED_INSTANCE_ID``).
- The first rebalance of an Empty group waits ``group.initial.rebalance.delay.ms``, extended
  while new members keep arriving, capped by the rebalance timeout; each wait is at least
  one 1 ms tick, as with Kafka's timers (``TIMER_TICK_MS``).
- Members that do not rejoin within the rebalance timeout are removed; members that do not
  SyncGroup within it are removed and a new rebalance starts; members whose session times
  out are removed.

Persistence: membership is in-memory state whose snapshot — the ``GroupMetadataValue``
written when a generation's assignment is set or the group becomes Empty — is what replay
restores at load (Kafka does the same: classic-group records are not replayed while the
coordinator is active). Timers are keyed ``("heartbeat", group, member)``,
``("join", group)`` and ``("sync", group)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from .. import records as rec
from ..base import (DescribedGroup, DescribedMember, ShardPart,
                    append_error_to_response_error)
from ..records import CoordinatorRecord
from .state import ClassicGroup, GroupState, Member

S = GroupState

# Kafka's coordinator timers run on a timing wheel of 1 ms ticks, handed to the coordinator
# thread by the timer's own threads: a delay of 0 is never zero there. The initial
# rebalance delay's wait (and each extension while new members keep arriving) is therefore
# at least one tick here too; see _prepare_rebalance.
TIMER_TICK_MS = 1


def _is_consumer_group(g) -> bool:
    """A consumer-protocol group (KIP-848): its classic members are served by
    :mod:`kbroker.group.consumer.classic_members`."""
    return g is not None and getattr(g, "group_type", None) == "consumer"

@dataclass
class JoinRequest:
    """A JoinGroup request as the classic group handles it."""
    group_id: str
    member_id: str
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 9
    reason: str | None = None


@dataclass
class JoinResponse:
    """The answer to a JoinGroup."""
    error: int = 0
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass
class SyncResponse:
    """The answer to a SyncGroup."""
    error: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class ClassicGroupProtocol(ShardPart):
    """The classic protocol's decisions; holds no state of its own (the groups are the
    shard's)."""

    def _get(self, gid: str) -> ClassicGroup | None:
        g = self.groups.get(gid)
        return g if isinstance(g, ClassicGroup) else None

    def _hb_key(self, g: str, m: str):
        return ("heartbeat", g, m)

    def _schedule_heartbeat(self, group: ClassicGroup, member: Member,
                            timeout_ms: int | None = None) -> None:
        gid, mid = group.group_id, member.member_id
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.timers.schedule(self._hb_key(gid, mid), timeout,
                             lambda t: self._expire_heartbeat(gid, mid, t))

    def _cancel_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        self.timers.cancel(self._hb_key(group.group_id, member_id))

    # ----------------------------------------------------------------- JoinGroup
    def join(self, req: JoinRequest, slot: Any, now: int) -> None:
        def fail(code, member_id=req.member_id):
            self._reply(slot, JoinResponse(error=code, member_id=member_id))

        if not req.group_id:
            return fail(E.INVALID_GROUP_ID)
        if not (self.config.min_session_timeout_ms <= req.session_timeout_ms
                <= self.config.max_session_timeout_ms):
            return fail(E.INVALID_SESSION_TIMEOUT)
        err = self.coordinator_error(req.group_id)
        if err:
            return fail(err)
        if req.rebalance_timeout_ms < 0:          # v0 has no rebalance timeout
            req.rebalance_timeout_ms = req.session_timeout_ms
        seen: set[str] = set()                    # protocol names are a map key
        req.protocols = [(n, bytes(m)) for n, m in req.protocols if not (n in seen or seen.add(n))]

        unknown = req.member_id == ""
        group = self._get(req.group_id)
        other = self.groups.get(req.group_id) if group is None else None
        if _is_consumer_group(other) and not other.is_empty():
            # a classic member of a consumer group (KIP-848 migration)
            return self.shard.consumer.classic_members.join(other, req, slot, now)
        if other is not None and getattr(other, "group_type", "") == "share":
            # a share group, even empty, never becomes a classic one (Kafka's classicGroupJoin)
            return fail(E.INCONSISTENT_GROUP_PROTOCOL)
        if other is not None and not (other.is_empty() and unknown):
            return fail(E.INCONSISTENT_GROUP_PROTOCOL if not other.is_empty()
                        else E.UNKNOWN_MEMBER_ID)
        new_group = group is None
        if group is None:
            if not unknown:
                return fail(E.UNKNOWN_MEMBER_ID)
            if other is not None:
                # an empty group of another type (consumer) becomes a classic one, as in
                # Kafka's classicGroupJoinToClassicGroup: its records are tombstoned
                self._emit(self.shard.protocol_of(other).group_tombstones(other))
            group = self.groups[req.group_id] = ClassicGroup(req.group_id, state_timestamp_ms=now)

        before = len(self._out.records)
        if not self._accept_joining_member(group, req.member_id):
            removed = group.remove(req.member_id)
            if removed is not None:
                self._cancel_heartbeat(group, removed.member_id)
                self._drop_parked(removed)
            fail(E.GROUP_MAX_SIZE_REACHED, "")
        elif unknown:
            self._join_new_member(group, req, slot, now)
        else:
            self._join_existing_member(group, req, slot, now)

        if new_group and len(self._out.records) == before:
            # make the group durable as soon as it exists, like Kafka
            self._emit([self._group_record(group, now)])

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.config.max_size
        if group.is_in(S.EMPTY, S.DEAD):
            return True
        if group.is_in(S.PREPARING_REBALANCE):
            m = group.members.get(member_id)
            return (m is not None and m.awaiting_join is not None) or group.num_awaiting_join < limit
        return group.has_member(member_id) or len(group.members) < limit

    def _join_new_member(self, group: ClassicGroup, req: JoinRequest, slot, now: int) -> None:
        if group.is_in(S.DEAD):
            self._reply(slot, JoinResponse(error=E.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            self._reply(slot, JoinResponse(error=E.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_id = self.shard._new_id(req.group_instance_id if req.group_instance_id is not None
                              else req.client_id)
        if req.group_instance_id is not None:
            existing = group.static_member_id(req.group_instance_id)
            if existing is not None:
                self._update_static_member(group, req, existing, new_id, slot, now)
            else:
                self._add_member_and_rebalance(group, req, new_id, slot, now)
        elif req.api_version >= 4:
            # KIP-394: hand out the id; the member must come back with it
            group.pending_join_members.add(new_id)
            gid = group.group_id
            self.timers.schedule(self._hb_key(gid, new_id), req.session_timeout_ms,
                                 lambda t: self._expire_heartbeat(gid, new_id, t))
            self._reply(slot, JoinResponse(error=E.MEMBER_ID_REQUIRED, member_id=new_id))
        else:
            self._add_member_and_rebalance(group, req, new_id, slot, now)

    def _join_existing_member(self, group: ClassicGroup, req: JoinRequest, slot, now: int) -> None:
        mid = req.member_id
        if group.is_in(S.DEAD):
            self._reply(slot, JoinResponse(error=E.COORDINATOR_NOT_AVAILABLE, member_id=mid))
            return
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            self._reply(slot, JoinResponse(error=E.INCONSISTENT_GROUP_PROTOCOL, member_id=mid))
            return
        if group.is_pending_member(mid):
            if req.group_instance_id is not None:
                # pending ids are only ever handed to dynamic members
                self._reply(slot, JoinResponse(error=E.UNKNOWN_MEMBER_ID, member_id=mid))
                return
            self._add_member_and_rebalance(group, req, mid, slot, now)
            return
        err = self._validate_member(group, mid, req.group_instance_id)
        if err:
            self._reply(slot, JoinResponse(error=err, member_id=mid))
            return
        member = group.members[mid]
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, req, slot, now)
        elif group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # a retry of a join whose response was lost: same generation again
                self._reply(slot, self._join_ok(group, mid, with_members=group.is_leader(mid)))
            else:
                self._update_member_and_rebalance(group, member, req, slot, now)
        elif group.is_in(S.STABLE):
            if group.is_leader(mid) or not member.matches(req.protocols):
                # the leader rejoining asks for a new assignment (e.g. metadata changed)
                self._update_member_and_rebalance(group, member, req, slot, now)
            else:
                self._reply(slot, self._join_ok(group, mid, with_members=False))
        else:
            self._reply(slot, JoinResponse(error=E.UNKNOWN_MEMBER_ID, member_id=mid))

    def _join_ok(self, group: ClassicGroup, member_id: str, *, with_members: bool,
                 leader: str | None = None, skip_assignment: bool = False) -> JoinResponse:
        members = []
        if with_members:
            members = [(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                       for m in group.members.values()]
        return JoinResponse(error=E.NONE, generation_id=group.generation_id,
                            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                            leader=(group.leader_id or "") if leader is None else leader,
                            member_id=member_id, members=members,
                            skip_assignment=skip_assignment)

    def _add_member_and_rebalance(self, group: ClassicGroup, req: JoinRequest, member_id: str,
                                  slot, now: int) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
                        list(req.protocols), is_new=True)
        if group.is_in(S.PREPARING_REBALANCE) and group.previous_state is S.EMPTY:
            group.new_member_added = True
        group.add(member, slot)
        # a new member cannot heartbeat while its join is parked, so bound the wait instead
        self._schedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(group, now)

    def _update_member_and_rebalance(self, group: ClassicGroup, member: Member,
                                     req: JoinRequest, slot, now: int) -> None:
        old = group.update_member(member, list(req.protocols), req.rebalance_timeout_ms,
                                  req.session_timeout_ms, slot)
        if old is not None and old is not slot:
            self._reply(old, JoinResponse(error=E.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        self._maybe_prepare_rebalance_or_complete_join(group, now)

    def _update_static_member(self, group: ClassicGroup, req: JoinRequest, old_id: str,
                              new_id: str, slot, now: int) -> None:
        leader_before = group.leader_id or ""
        old, new = group.replace_static_member(req.group_instance_id, old_id, new_id)
        self._fence(old)
        self._cancel_heartbeat(group, old_id)
        self._schedule_heartbeat(group, new)
        saved = (list(new.protocols), new.rebalance_timeout_ms, new.session_timeout_ms)
        group.update_member(new, list(req.protocols), req.rebalance_timeout_ms,
                            req.session_timeout_ms, slot)
        if group.is_in(S.STABLE):
            if group.protocol_name == group.select_protocol():
                # KIP-345: same protocol, same assignment: persist the new id, no rebalance
                gen = group.generation_id
                v9 = req.api_version >= 9
                instance = req.group_instance_id

                def then(error: int, t: int) -> None:
                    if group.members.get(new_id) is not new:
                        return                      # superseded meanwhile
                    if error:
                        group.update_member(new, *saved, None)
                        _, back = group.replace_static_member(instance, new_id, old_id)
                        self._cancel_heartbeat(group, new_id)
                        self._schedule_heartbeat(group, back)
                        self._reply(slot, JoinResponse(
                            error=append_error_to_response_error(error), generation_id=gen,
                            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                            leader=leader_before))
                        return
                    group.set_awaiting_join(new, None)
                    if v9:
                        lead = group.is_leader(new_id)
                        self._reply(slot, self._join_ok(group, new_id, with_members=lead,
                                                        skip_assignment=lead))
                    else:
                        # before v9 the rejoined leader is told it is a follower, so it
                        # does not compute (and impose) a new assignment
                        self._reply(slot, self._join_ok(group, new_id, with_members=False,
                                                        leader=leader_before))
                self._emit([self._group_record(group, now)], then=then)
            else:
                self._maybe_prepare_rebalance_or_complete_join(group, now)
        elif group.is_in(S.COMPLETING_REBALANCE):
            # the leader may be assigning to the old id: start over
            self._prepare_rebalance(group, now)
        else:
            self._maybe_complete_join_phase(group, now)

    def _fence(self, old: Member) -> None:
        if old.awaiting_join is not None:
            self._reply(old.awaiting_join, JoinResponse(error=E.FENCED_INSTANCE_ID,
                                                        member_id=old.member_id))
            old.awaiting_join = None
        if old.awaiting_sync is not None:
            self._reply(old.awaiting_sync, SyncResponse(error=E.FENCED_INSTANCE_ID))
            old.awaiting_sync = None

    def _drop_parked(self, member: Member) -> None:
        """A member leaves while a request of it is parked: answer it, never strand it."""
        if member.awaiting_join is not None:
            self._reply(member.awaiting_join, JoinResponse(error=E.UNKNOWN_MEMBER_ID))
            member.awaiting_join = None
        if member.awaiting_sync is not None:
            self._reply(member.awaiting_sync, SyncResponse(error=E.UNKNOWN_MEMBER_ID))
            member.awaiting_sync = None

    # ----------------------------------------------------------------- rebalance core
    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, now: int) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now)
        else:
            self._maybe_complete_join_phase(group, now)

    def _maybe_complete_join_phase(self, group: ClassicGroup, now: int) -> None:
        if (group.is_in(S.PREPARING_REBALANCE) and group.previous_state is not S.EMPTY
                and group.has_all_members_joined()):
            self._complete_join(group, now)

    def _prepare_rebalance(self, group: ClassicGroup, now: int) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            self._reset_and_propagate(group, E.REBALANCE_IN_PROGRESS)
        group.pending_sync_members.clear()
        self.timers.cancel(("sync", group.group_id))
        initial = group.is_in(S.EMPTY)
        gid = group.group_id
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(("join", gid), max(delay, TIMER_TICK_MS),
                                 lambda t: self._initial_rebalance_timer(gid, delay, remaining, t))
        group.transition_to(S.PREPARING_REBALANCE, now)
        self.counters["rebalances"] += 1
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(group, now)
            else:
                self.timers.schedule(("join", gid), group.rebalance_timeout_ms(),
                                     lambda t: self._join_timer(gid, t))

    def _initial_rebalance_timer(self, gid: str, delay: int, remaining: int, now: int) -> None:
        group = self._get(gid)
        if group is None:
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.timers.schedule(("join", gid), max(new_delay, TIMER_TICK_MS),
                                 lambda t: self._initial_rebalance_timer(gid, new_delay,
                                                                         new_remaining, t))
        else:
            self._complete_join(group, now)

    def _join_timer(self, gid: str, now: int) -> None:
        group = self._get(gid)
        if group is not None:
            self._complete_join(group, now)

    def _complete_join(self, group: ClassicGroup, now: int) -> None:
        gid = group.group_id
        self.timers.cancel(("join", gid))
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        for m in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group.remove(m.member_id)
            self._cancel_heartbeat(group, m.member_id)
            self._drop_parked(m)
            self.counters["members_expired"] += 1
        if group.members and not group.maybe_elect_new_joined_leader():
            # nobody rejoined (only static members left): wait for them or their sessions
            self.timers.schedule(("join", gid), group.rebalance_timeout_ms(),
                                 lambda t: self._join_timer(gid, t))
            return
        group.init_next_generation(now)
        if group.is_in(S.EMPTY):
            self._emit([self._group_record(group, now)])
            return
        for m in group.members.values():
            slot = group.set_awaiting_join(m, None)
            self._reply(slot, self._join_ok(group, m.member_id,
                                            with_members=group.is_leader(m.member_id)))
            self._schedule_heartbeat(group, m)
            m.is_new = False
            group.pending_sync_members.add(m.member_id)
        gen = group.generation_id
        self.timers.schedule(("sync", gid), group.rebalance_timeout_ms(),
                             lambda t: self._sync_timer(gid, gen, t))

    def _sync_timer(self, gid: str, generation: int, now: int) -> None:
        group = self._get(gid)
        if group is None or group.generation_id != generation:
            return
        if group.is_in(S.COMPLETING_REBALANCE, S.STABLE) and group.pending_sync_members:
            for mid in list(group.pending_sync_members):
                m = group.remove(mid)
                self._cancel_heartbeat(group, mid)
                if m is not None:
                    self._drop_parked(m)
                self.counters["members_expired"] += 1
            self._prepare_rebalance(group, now)

    def _expire_heartbeat(self, gid: str, member_id: str, now: int) -> None:
        group = self._get(gid)
        if group is None or group.is_in(S.DEAD):
            return
        if group.is_pending_member(member_id):
            group.pending_join_members.discard(member_id)
            if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group, now)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        self.counters["members_expired"] += 1
        self._remove_member_and_update(group, member, now)

    def _remove_member_and_update(self, group: ClassicGroup, member: Member, now: int) -> None:
        self._drop_parked(member)
        group.remove(member.member_id)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, now)
        elif group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group, now)

    def _reset_and_propagate(self, group: ClassicGroup, error: int) -> None:
        for m in group.members.values():
            m.assignment = b""
        self._propagate(group, error)

    def _propagate(self, group: ClassicGroup, error: int) -> None:
        ok = error == E.NONE
        for m in group.members.values():
            if m.awaiting_sync is not None:
                self._reply(m.awaiting_sync, SyncResponse(
                    error=error, assignment=m.assignment,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None))
                m.awaiting_sync = None
                self._schedule_heartbeat(group, m)

    def _validate_member(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> int:
        if instance_id is not None:
            existing = group.static_member_id(instance_id)
            if existing is None:
                return E.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return E.FENCED_INSTANCE_ID
        if not group.has_member(member_id):
            return E.UNKNOWN_MEMBER_ID
        return E.NONE

    # ----------------------------------------------------------------- SyncGroup
    def sync(self, gid, mid, gen, instance, ptype, pname, assignments, slot, now) -> None:
        def fail(code):
            self._reply(slot, SyncResponse(error=code))
        if not gid:
            return fail(E.INVALID_GROUP_ID)
        err = self.coordinator_error(gid)
        if err:
            return fail(err)
        group = self._get(gid)
        other = self.groups.get(gid)
        if _is_consumer_group(other) and not other.is_empty():
            return self.shard.consumer.classic_members.sync(other, mid, gen, instance, ptype,
                                                            pname, slot, now)
        if group is None or group.is_in(S.EMPTY):
            return fail(E.UNKNOWN_MEMBER_ID)
        if group.is_in(S.DEAD):
            return fail(E.COORDINATOR_NOT_AVAILABLE)
        err = self._validate_member(group, mid, instance)
        if err:
            return fail(err)
        if gen != group.generation_id:
            return fail(E.ILLEGAL_GENERATION)
        if (ptype is not None and ptype != group.protocol_type) or \
                (pname is not None and pname != group.protocol_name):
            return fail(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_in(S.PREPARING_REBALANCE):
            return fail(E.REBALANCE_IN_PROGRESS)
        member = group.members[mid]
        if group.is_in(S.STABLE):
            self._remove_pending_sync(group, mid)
            self._reply(slot, SyncResponse(error=E.NONE, protocol_type=group.protocol_type,
                                           protocol_name=group.protocol_name,
                                           assignment=member.assignment))
            return
        # CompletingRebalance: park until the leader's assignment is durable
        if member.awaiting_sync is not None and member.awaiting_sync is not slot:
            self._reply(member.awaiting_sync, SyncResponse(error=E.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = slot
        self._remove_pending_sync(group, mid)
        if not group.is_leader(mid):
            return
        assignment = {m: bytes(a) for m, a in assignments if m in group.members}
        for m in group.members:
            assignment.setdefault(m, b"")

        def then(error: int, t: int) -> None:
            if not (group.is_in(S.COMPLETING_REBALANCE) and group.generation_id == gen
                    and self._get(gid) is group):
                return
            if error:
                self._reset_and_propagate(group, append_error_to_response_error(error))
                self._maybe_prepare_rebalance_or_complete_join(group, t)
            else:
                for m in group.members.values():
                    m.assignment = assignment.get(m.member_id, b"")
                self._propagate(group, E.NONE)
                group.transition_to(S.STABLE, t)
                self.counters["classic_rebalances_completed"] += 1   # Kafka's CompletedRebalances
        self._emit([self._group_record(group, now, assignment)], then=then)

    def _remove_pending_sync(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            self.timers.cancel(("sync", group.group_id))

    # ----------------------------------------------------------------- Heartbeat
    def heartbeat(self, gid, mid, gen, instance, now) -> int:
        if not gid:
            return E.INVALID_GROUP_ID
        err = self.coordinator_error(gid)
        if err:
            return err
        group = self._get(gid)
        other = self.groups.get(gid)
        if _is_consumer_group(other):
            return self.shard.consumer.classic_members.heartbeat(other, mid, gen, instance, now)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        err = self._validate_member(group, mid, instance)
        if err:
            return err
        if gen != group.generation_id:
            return E.ILLEGAL_GENERATION
        if group.is_in(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, group.members[mid])
        if group.is_in(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    # ----------------------------------------------------------------- LeaveGroup
    def leave(self, gid, members, now):
        if not gid:
            return E.INVALID_GROUP_ID, []
        err = self.coordinator_error(gid)
        if err:
            return err, []
        group = self._get(gid)
        other = self.groups.get(gid)
        if _is_consumer_group(other):
            return self.shard.consumer.classic_members.leave(other, members, now)
        if group is None:
            # As Kafka: an unknown group is no top-level error; every member asked about is
            # answered UNKNOWN_MEMBER_ID (KIP-345 batch leave reports errors per member).
            return E.NONE, [(mid, instance, int(E.UNKNOWN_MEMBER_ID))
                            for mid, instance in members]
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, []
        out, left = [], 0
        for mid, instance in members:
            code = E.NONE
            if mid == "":
                # KIP-345 admin removal of a static member by instance id
                target = group.static_member_id(instance)
                if target is None:
                    code = E.UNKNOWN_MEMBER_ID
                else:
                    self._remove_current_member(group, target)
            elif group.is_pending_member(mid):
                group.pending_join_members.discard(mid)
                self._cancel_heartbeat(group, mid)
            else:
                code = self._validate_member(group, mid, instance)
                if not code:
                    self._remove_current_member(group, mid)
            if not code:
                left += 1
            out.append((mid, instance, int(code)))
        if left:
            if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group, now)
            elif group.is_in(S.PREPARING_REBALANCE):
                self._maybe_complete_join_phase(group, now)
        return E.NONE, out

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        self._cancel_heartbeat(group, member_id)
        member = group.remove(member_id)
        if member is not None:
            self._drop_parked(member)

    # ----------------------------------------------------------------- offsets (per type)
    def validate_offset_commit(self, group: ClassicGroup, mid: str, instance: str | None,
                               gen: int, now: int, api_version: int) -> int:
        """Kafka's ``ClassicGroup.validateOffsetCommit``; a commit of a live member also
        keeps its session alive."""
        err = self._validate_offset_commit(group, mid, instance, gen)
        if not err and group.is_in(S.STABLE, S.PREPARING_REBALANCE) and mid in group.members:
            self._schedule_heartbeat(group, group.members[mid])
        return err

    def _validate_offset_commit(self, group: ClassicGroup, mid: str, instance: str | None,
                                gen: int) -> int:
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if gen < 0 and group.is_in(S.EMPTY):
            return E.NONE
        if gen >= 0 or mid or instance is not None:
            err = self._validate_member(group, mid, instance)
            if err:
                return err
            if gen != group.generation_id:
                return E.ILLEGAL_GENERATION
        elif not group.is_in(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(S.COMPLETING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def validate_txn_offset_commit(self, group: ClassicGroup, member_id: str,
                                   instance: str | None, generation_id: int) -> int:
        """Kafka's ``validateTransactionalOffsetCommit``: member/generation are checked
        when given; the group state is not enforced."""
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(S.EMPTY):
            return E.NONE
        if generation_id >= 0 or member_id or instance is not None:
            err = self._validate_member(group, member_id, instance)
            if err:
                return err
            if generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION
        return E.NONE

    # ----------------------------------------------------------------- admin
    def describe(self, g: ClassicGroup) -> DescribedGroup:
        stable = g.is_in(S.STABLE)
        members = [DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                   m.metadata(g.protocol_name) if stable else b"",
                                   m.assignment if stable else b"")
                   for m in g.members.values()]
        return DescribedGroup(g.group_id, E.NONE, g.state.value, g.protocol_type or "",
                              (g.protocol_name or "") if stable else "", members)

    # ----------------------------------------------------------------- records / replay
    def _group_record(self, group: ClassicGroup, now: int,
                      assignment: dict[str, bytes] | None = None) -> CoordinatorRecord:
        members = []
        for m in group.members.values():
            members.append(messages.GroupMetadataValue.MemberMetadata(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms, session_timeout=m.session_timeout_ms,
                subscription=m.metadata(group.protocol_name),
                assignment=(assignment.get(m.member_id, b"") if assignment is not None
                            else m.assignment)))
        value = messages.GroupMetadataValue(
            protocol_type=group.protocol_type or "", generation=group.generation_id,
            protocol=group.protocol_name, leader=group.leader_id if group.members else None,
            current_state_timestamp=group.state_timestamp_ms, members=members)
        return rec.group_metadata_record(self.partition_for(group.group_id), group.group_id, value)

    def group_from_record(self, gid: str, v) -> ClassicGroup:
        """The group a ``GroupMetadataValue`` describes (load)."""
        g = ClassicGroup(gid, generation_id=v.generation, protocol_type=v.protocol_type or None,
                         protocol_name=v.protocol, state_timestamp_ms=v.current_state_timestamp)
        for mm in v.members:
            m = Member(mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host,
                       mm.rebalance_timeout if mm.rebalance_timeout >= 0 else mm.session_timeout,
                       mm.session_timeout, v.protocol_type,
                       [(v.protocol or "", bytes(mm.subscription))], bytes(mm.assignment))
            g.add(m)
        g.leader_id = v.leader if v.leader in g.members else next(iter(g.members), None)
        g.state = S.STABLE if g.members else S.EMPTY
        g.subscribed_topics = g._compute_subscribed_topics()
        return g

    def group_tombstones(self, g: ClassicGroup) -> list[CoordinatorRecord]:
        return [rec.group_tombstone(self.partition_for(g.group_id), g.group_id)]

    # ----------------------------------------------------------------- lifecycle hooks
    def on_loaded(self, g: ClassicGroup, now: int) -> None:
        """The group's partition finished loading: expect a heartbeat from every restored
        member within its session timeout."""
        for m in g.members.values():
            self._schedule_heartbeat(g, m)
        if len(g.members) > self.config.max_size:
            self._prepare_rebalance(g, now)

    def on_removed(self, g: ClassicGroup) -> None:
        """The group is gone (deleted, replaced on replay): answer parked requests."""
        if self._out is not None:
            for m in g.members.values():
                self._drop_parked(m)
        g.state = S.DEAD

    def abort_parked(self, g: ClassicGroup, error: int) -> list[tuple[Any, Any]]:
        """(slot, reply) for every parked request, answered ``error`` (coordinator shutdown)."""
        out = []
        for m in g.members.values():
            if m.awaiting_join is not None:
                out.append((m.awaiting_join, JoinResponse(error=error, member_id=m.member_id)))
            if m.awaiting_sync is not None:
                out.append((m.awaiting_sync, SyncResponse(error=error)))
        return out
