"""The group coordinator's decisions, as a pure state machine over every group.

Inputs are events with the current time (``now_ms``): JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit/Fetch/Delete, DeleteGroups, timer expiry, records replayed from
``__consumer_offsets``. Outputs are a :class:`Result`: records to append, replies for
parked requests (``(slot, response)``), an immediate response, and continuations to run
once the records are durable. Deadlines live in a :class:`~kbroker.group.timers.TimerTable`
the driver polls. Nothing here reads a clock, sleeps, does I/O or imports trio
(DESIGN.md rules 1, 5 and 8); :mod:`kbroker.group.service` is the trio driver.

The rules follow Kafka's classic group protocol (``GroupMetadataManager`` /
``ClassicGroup`` / ``OffsetMetadataManager`` in Kafka's group-coordinator module):

- KIP-394: a JoinGroup v4+ without a member id gets ``MEMBER_ID_REQUIRED`` and a fresh
  id, parked as a *pending* member until it rejoins or its session timeout passes.
- KIP-345: static members (``group.instance.id``) that rejoin without their id take over
  their old identity; in a Stable group with an unchanged protocol there is no rebalance,
  and the old id is fenced (``FENCED_INSTANCE_ID``).
- The first rebalance of an Empty group waits ``group.initial.rebalance.delay.ms``, extended
  while new members keep arriving, capped by the rebalance timeout.
- Members that do not rejoin within the rebalance timeout are removed; members that do not
  SyncGroup within it are removed and a new rebalance starts; members whose session times
  out are removed.
- Offsets: generation -1 commits from outside the group protocol are accepted while the
  group is Empty (simple consumers); retention per ``offsets.retention.minutes``, counted
  from the moment the group became Empty (or from the commit for simple groups).

Persistence: offset changes and group deletion take effect by *replaying* the records once
appended (``Result.replay``). Membership is in-memory state whose snapshot — the
``GroupMetadataValue`` written when a generation's assignment is set or the group becomes
Empty — is what replay restores at load (Kafka does the same: classic-group records are
not replayed while the coordinator is active).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from . import records as rec
from .records import CoordinatorRecord, GroupKey, OffsetKey
from .state import ClassicGroup, GroupState, Member
from .timers import TimerTable

S = GroupState

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


# --------------------------------------------------------------------------- config
@dataclass
class GroupConfig:
    """The Kafka broker settings the coordinator obeys (same keys, same defaults)."""
    num_partitions: int = 50                      # offsets.topic.num.partitions
    initial_rebalance_delay_ms: int = 3000        # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000            # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000         # group.max.session.timeout.ms
    max_size: int = 2**31 - 1                     # group.max.size
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000   # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096         # offset.metadata.max.bytes
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS

    @classmethod
    def from_config(cls, get: Callable[[str, Any], Any]) -> "GroupConfig":
        """``get(key, default)`` reads a broker setting."""
        d = cls()
        return cls(
            num_partitions=int(get("offsets.topic.num.partitions", d.num_partitions)),
            initial_rebalance_delay_ms=int(get("group.initial.rebalance.delay.ms",
                                               d.initial_rebalance_delay_ms)),
            min_session_timeout_ms=int(get("group.min.session.timeout.ms", d.min_session_timeout_ms)),
            max_session_timeout_ms=int(get("group.max.session.timeout.ms", d.max_session_timeout_ms)),
            max_size=int(get("group.max.size", d.max_size)),
            offsets_retention_ms=int(get("offsets.retention.minutes",
                                         d.offsets_retention_ms // 60000)) * 60000,
            offsets_retention_check_interval_ms=int(get("offsets.retention.check.interval.ms",
                                                        d.offsets_retention_check_interval_ms)),
            offset_metadata_max_bytes=int(get("offset.metadata.max.bytes",
                                              d.offset_metadata_max_bytes)),
        )


# --------------------------------------------------------------------------- events / replies
@dataclass
class JoinRequest:
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
    error: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None


@dataclass
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class DescribedGroup:
    group_id: str
    error: int
    state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedMember]


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


def _default_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


# --------------------------------------------------------------------------- the manager
class GroupManager:
    """Owns every classic group and every committed offset of this coordinator.

    Invariants: a group id maps to at most one live :class:`ClassicGroup`; timers are
    keyed ``("heartbeat", group, member)``, ``("join", group)``, ``("sync", group)`` and
    ``("offsets-expiry",)``; entry points never raise on bad client input — they answer
    with a Kafka error code.
    """

    def __init__(self, config: GroupConfig | None = None,
                 member_id_factory: Callable[[str], str] = _default_member_id) -> None:
        self.config = config or GroupConfig()
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        # producer id -> group -> {(topic, partition): OffsetAndMetadata}: staged by
        # transactional offset commits, visible only once the transaction commits
        self.pending_txn_offsets: dict[int, dict[str, dict[tuple[str, int], OffsetAndMetadata]]] = {}
        self.timers = TimerTable()
        self.loaded: set[int] = set()     # __consumer_offsets partitions we serve
        self.loading: set[int] = set()
        self._new_id = member_id_factory
        self._out: Result | None = None
        self.counters = {"rebalances": 0, "members_expired": 0, "offsets_expired": 0,
                         "offset_commits": 0}

    # ----------------------------------------------------------------- plumbing
    def partition_for(self, group_id: str) -> int:
        return rec.partition_for(group_id, self.config.num_partitions)

    def _run(self, fn: Callable[[], Any]) -> Result:
        outer, self._out = self._out, Result()
        try:
            resp = fn()
            res = self._out
            if resp is not None:
                res.response = resp
            return res
        finally:
            self._out = outer

    def _reply(self, slot: Any, response: Any) -> bool:
        if slot is None:
            return False
        self._out.replies.append((slot, response))
        return True

    def _emit(self, records: list[CoordinatorRecord], *, replay: bool = False,
              then: Callable[[int, int], None] | None = None) -> None:
        out = self._out
        out.records.extend(records)
        out.replay.extend([replay] * len(records))
        if then is not None:
            out.continuations.append(then)

    def after_append(self, result: Result, error: int, now_ms: int) -> Result:
        """Run once ``result.records`` were appended (``error`` 0) or failed to be."""
        def go():
            if error == 0:
                for r, flag in zip(result.records, result.replay):
                    if flag:
                        self.replay(r.key, r.value, parsed_key=r.parsed_key)
            for cont in result.continuations:
                cont(error, now_ms)
        return self._run(go)

    def coordinator_error(self, group_id: str) -> int:
        """NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / NONE for this group's partition."""
        p = self.partition_for(group_id)
        if p in self.loaded:
            return E.NONE
        if p in self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return E.NOT_COORDINATOR

    # ----------------------------------------------------------------- timers
    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def fire_due(self, now_ms: int) -> Result:
        """Run every timer whose deadline is ``<= now_ms``, earliest first."""
        def go():
            while True:
                due = self.timers.pop_due(now_ms)
                if due is None:
                    return
                due[1](now_ms)
        return self._run(go)

    def _hb_key(self, g: str, m: str):
        return ("heartbeat", g, m)

    def _schedule_heartbeat(self, group: ClassicGroup, member: Member, now_ms: int,
                            timeout_ms: int | None = None) -> None:
        gid, mid = group.group_id, member.member_id
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.timers.schedule(self._hb_key(gid, mid), now_ms + timeout,
                             lambda t: self._expire_heartbeat(gid, mid, t))

    def _cancel_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        self.timers.cancel(self._hb_key(group.group_id, member_id))

    # ----------------------------------------------------------------- JoinGroup
    def join_group(self, req: JoinRequest, slot: Any, now_ms: int) -> Result:
        """Handle a JoinGroup. The reply for ``slot`` comes in this result or a later one
        (when the join phase completes)."""
        return self._run(lambda: self._join(req, slot, now_ms))

    def _join(self, req: JoinRequest, slot: Any, now: int) -> None:
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
        group = self.groups.get(req.group_id)
        new_group = group is None
        if group is None:
            if not unknown:
                return fail(E.UNKNOWN_MEMBER_ID)
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
        new_id = self._new_id(req.group_instance_id if req.group_instance_id is not None
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
            self.timers.schedule(self._hb_key(gid, new_id), now + req.session_timeout_ms,
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
        self._schedule_heartbeat(group, member, now, self.config.new_member_join_timeout_ms)
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
        self._schedule_heartbeat(group, new, now)
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
                        self._schedule_heartbeat(group, back, t)
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
            self._reset_and_propagate(group, E.REBALANCE_IN_PROGRESS, now)
        group.pending_sync_members.clear()
        self.timers.cancel(("sync", group.group_id))
        initial = group.is_in(S.EMPTY)
        gid = group.group_id
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(("join", gid), now + delay,
                                 lambda t: self._initial_rebalance_timer(gid, delay, remaining, t))
        group.transition_to(S.PREPARING_REBALANCE, now)
        self.counters["rebalances"] += 1
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(group, now)
            else:
                self.timers.schedule(("join", gid), now + group.rebalance_timeout_ms(),
                                     lambda t: self._join_timer(gid, t))

    def _initial_rebalance_timer(self, gid: str, delay: int, remaining: int, now: int) -> None:
        group = self.groups.get(gid)
        if group is None:
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.timers.schedule(("join", gid), now + new_delay,
                                 lambda t: self._initial_rebalance_timer(gid, new_delay,
                                                                         new_remaining, t))
        else:
            self._complete_join(group, now)

    def _join_timer(self, gid: str, now: int) -> None:
        group = self.groups.get(gid)
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
            self.timers.schedule(("join", gid), now + group.rebalance_timeout_ms(),
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
            self._schedule_heartbeat(group, m, now)
            m.is_new = False
            group.pending_sync_members.add(m.member_id)
        gen = group.generation_id
        self.timers.schedule(("sync", gid), now + group.rebalance_timeout_ms(),
                             lambda t: self._sync_timer(gid, gen, t))

    def _sync_timer(self, gid: str, generation: int, now: int) -> None:
        group = self.groups.get(gid)
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
        group = self.groups.get(gid)
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

    def _reset_and_propagate(self, group: ClassicGroup, error: int, now: int) -> None:
        for m in group.members.values():
            m.assignment = b""
        self._propagate(group, error, now)

    def _propagate(self, group: ClassicGroup, error: int, now: int) -> None:
        ok = error == E.NONE
        for m in group.members.values():
            if m.awaiting_sync is not None:
                self._reply(m.awaiting_sync, SyncResponse(
                    error=error, assignment=m.assignment,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None))
                m.awaiting_sync = None
                self._schedule_heartbeat(group, m, now)

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
    def sync_group(self, group_id: str, member_id: str, generation_id: int,
                   group_instance_id: str | None, protocol_type: str | None,
                   protocol_name: str | None, assignments: list[tuple[str, bytes]],
                   slot: Any, now_ms: int) -> Result:
        return self._run(lambda: self._sync(group_id, member_id, generation_id, group_instance_id,
                                            protocol_type, protocol_name, assignments, slot, now_ms))

    def _sync(self, gid, mid, gen, instance, ptype, pname, assignments, slot, now) -> None:
        def fail(code):
            self._reply(slot, SyncResponse(error=code))
        if not gid:
            return fail(E.INVALID_GROUP_ID)
        err = self.coordinator_error(gid)
        if err:
            return fail(err)
        group = self.groups.get(gid)
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
                    and self.groups.get(gid) is group):
                return
            if error:
                self._reset_and_propagate(group, append_error_to_response_error(error), t)
                self._maybe_prepare_rebalance_or_complete_join(group, t)
            else:
                for m in group.members.values():
                    m.assignment = assignment.get(m.member_id, b"")
                self._propagate(group, E.NONE, t)
                group.transition_to(S.STABLE, t)
        self._emit([self._group_record(group, now, assignment)], then=then)

    def _remove_pending_sync(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            self.timers.cancel(("sync", group.group_id))

    # ----------------------------------------------------------------- Heartbeat
    def heartbeat(self, group_id: str, member_id: str, generation_id: int,
                  group_instance_id: str | None, now_ms: int) -> Result:
        return self._run(lambda: self._heartbeat(group_id, member_id, generation_id,
                                                 group_instance_id, now_ms))

    def _heartbeat(self, gid, mid, gen, instance, now) -> int:
        if not gid:
            return E.INVALID_GROUP_ID
        err = self.coordinator_error(gid)
        if err:
            return err
        group = self.groups.get(gid)
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
        self._schedule_heartbeat(group, group.members[mid], now)
        if group.is_in(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    # ----------------------------------------------------------------- LeaveGroup
    def leave_group(self, group_id: str, members: list[tuple[str, str | None]],
                    now_ms: int) -> Result:
        """``members``: (member_id, group_instance_id). Response: (top-level error,
        [(member_id, group_instance_id, error)])."""
        return self._run(lambda: self._leave(group_id, members, now_ms))

    def _leave(self, gid, members, now):
        if not gid:
            return E.INVALID_GROUP_ID, []
        err = self.coordinator_error(gid)
        if err:
            return err, []
        group = self.groups.get(gid)
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

    # ----------------------------------------------------------------- offsets
    def commit_offsets(self, group_id: str, member_id: str, generation_id: int,
                       group_instance_id: str | None,
                       topics: list[tuple[str, list[tuple[int, int, int, str | None]]]],
                       now_ms: int, *, retention_ms: int = -1, api_version: int = 9) -> Result:
        """``topics``: [(topic, [(partition, offset, leader_epoch, metadata)])]. Response:
        [(topic, [(partition, error)])]. Offsets become visible when the records are
        appended (replay)."""
        return self._run(lambda: self._commit(group_id, member_id, generation_id,
                                              group_instance_id, topics, now_ms,
                                              retention_ms, api_version))

    def _commit(self, gid, mid, gen, instance, topics, now, retention_ms, api_version):
        def all_failed(code):
            return [(t, [(p[0], int(code)) for p in parts]) for t, parts in topics]
        if not gid:
            return all_failed(E.INVALID_GROUP_ID)
        err = self.coordinator_error(gid)
        if err:
            return all_failed(err)
        group = self.groups.get(gid)
        if group is None:
            if gen >= 0:
                return all_failed(E.GROUP_ID_NOT_FOUND if api_version >= 9 else E.ILLEGAL_GENERATION)
            # a simple consumer (assign + commit): the group exists from now on, Empty
            group = self.groups[gid] = ClassicGroup(gid, state_timestamp_ms=now)
        err = self._validate_offset_commit(group, mid, instance, gen)
        if err:
            return all_failed(err)
        if group.is_in(S.STABLE, S.PREPARING_REBALANCE) and mid in group.members:
            self._schedule_heartbeat(group, group.members[mid], now)   # commits keep the session
        expire = None if retention_ms is None or retention_ms < 0 else now + retention_ms
        part = self.partition_for(gid)
        records, response = [], []
        for topic, parts in topics:
            presp = []
            for p, offset, epoch, metadata in parts:
                metadata = "" if metadata is None else metadata
                if len(metadata) > self.config.offset_metadata_max_bytes:
                    presp.append((p, int(E.OFFSET_METADATA_TOO_LARGE)))
                    continue
                records.append(rec.offset_commit_record(
                    part, gid, topic, p, offset=offset, leader_epoch=epoch, metadata=metadata,
                    commit_timestamp=now, expire_timestamp=expire))
                presp.append((p, int(E.NONE)))
            response.append((topic, presp))

        def then(error: int, t: int) -> None:
            if error:
                code = append_error_to_response_error(error)
                self._out.response = [(tp, [(p, code if c == E.NONE else c) for p, c in ps])
                                      for tp, ps in response]
            else:
                self.counters["offset_commits"] += len(records)
        self._emit(records, replay=True, then=then)
        return response

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

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None,
                      require_stable: bool = False):
        """Returns (error, [(topic, [(partition, offset, leader_epoch, metadata, error)])]).
        ``topics`` None means every committed offset of the group."""
        if not group_id:
            return E.INVALID_GROUP_ID, []
        err = self.coordinator_error(group_id)
        if err:
            return err, []
        group = self.groups.get(group_id)
        offsets = {} if group is None or group.is_in(S.DEAD) else self.offsets.get(group_id, {})
        pending = self._pending_partitions(group_id) if require_stable else set()

        def entry(t, p):
            if (t, p) in pending:
                return (p, -1, -1, "", int(E.UNSTABLE_OFFSET_COMMIT))
            o = offsets.get((t, p))
            if o is None:
                return (p, -1, -1, "", 0)
            return (p, o.offset, o.leader_epoch, o.metadata, 0)
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for (t, p) in offsets:
                by_topic.setdefault(t, []).append(p)
            topics = [(t, sorted(ps)) for t, ps in by_topic.items()]
        return E.NONE, [(t, [entry(t, p) for p in ps]) for t, ps in topics]

    def _pending_partitions(self, group_id: str) -> set[tuple[str, int]]:
        out: set[tuple[str, int]] = set()
        for by_group in self.pending_txn_offsets.values():
            out.update(by_group.get(group_id, {}))
        return out

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]],
                       now_ms: int) -> Result:
        """OffsetDelete. Response: (error, [(topic, [(partition, error)])])."""
        return self._run(lambda: self._delete_offsets(group_id, topics, now_ms))

    def _delete_offsets(self, gid, topics, now):
        if not gid:
            return E.INVALID_GROUP_ID, []
        err = self.coordinator_error(gid)
        if err:
            return err, []
        group = self.groups.get(gid)
        if group is None or group.is_in(S.DEAD):
            return E.GROUP_ID_NOT_FOUND, []
        if not group.is_in(S.EMPTY) and not group.uses_consumer_protocol():
            return E.NON_EMPTY_GROUP, []
        offsets = self.offsets.get(gid, {})
        part = self.partition_for(gid)
        records, response = [], []
        for topic, parts in topics:
            subscribed = not group.is_in(S.EMPTY) and group.is_subscribed_to(topic)
            presp = []
            for p in parts:
                if subscribed:
                    presp.append((p, int(E.GROUP_SUBSCRIBED_TO_TOPIC)))
                    continue
                if (topic, p) in offsets:
                    records.append(rec.offset_tombstone(part, gid, topic, p))
                presp.append((p, int(E.NONE)))
            response.append((topic, presp))

        def then(error: int, t: int) -> None:
            if error:
                self._out.response = (append_error_to_response_error(error), [])
        self._emit(records, replay=True, then=then)
        return E.NONE, response

    # ----------------------------------------------------------------- admin
    def list_groups(self, states: list[str] | None = None,
                    types: list[str] | None = None) -> list[tuple[str, str, str]]:
        """[(group_id, protocol_type, state)] of loaded groups, filtered case-insensitively."""
        if types and "classic" not in {t.lower() for t in types}:
            return []
        want = {s.lower() for s in states} if states else None
        out = []
        for g in self.groups.values():
            if g.is_in(S.DEAD) or self.partition_for(g.group_id) not in self.loaded:
                continue
            if want is not None and g.state.value.lower() not in want:
                continue
            out.append((g.group_id, g.protocol_type or "", g.state.value))
        return out

    def describe_group(self, group_id: str) -> DescribedGroup:
        err = self.coordinator_error(group_id)
        if err:
            return DescribedGroup(group_id, err, "", "", "", [])
        g = self.groups.get(group_id)
        if g is None:
            return DescribedGroup(group_id, E.NONE, S.DEAD.value, "", "", [])
        stable = g.is_in(S.STABLE)
        members = [DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                   m.metadata(g.protocol_name) if stable else b"",
                                   m.assignment if stable else b"")
                   for m in g.members.values()]
        return DescribedGroup(group_id, E.NONE, g.state.value, g.protocol_type or "",
                              (g.protocol_name or "") if stable else "", members)

    def delete_groups(self, group_ids: list[str], now_ms: int) -> Result:
        """DeleteGroups. Response: [(group_id, error)]."""
        return self._run(lambda: self._delete_groups(group_ids, now_ms))

    def _delete_groups(self, group_ids, now):
        response, records = [], []
        for gid in group_ids:
            if not gid:
                response.append((gid, int(E.INVALID_GROUP_ID)))
                continue
            err = self.coordinator_error(gid)
            if err:
                response.append((gid, int(err)))
                continue
            g = self.groups.get(gid)
            if g is None or g.is_in(S.DEAD):
                response.append((gid, int(E.GROUP_ID_NOT_FOUND)))
                continue
            if not g.is_in(S.EMPTY):
                response.append((gid, int(E.NON_EMPTY_GROUP)))
                continue
            records.extend(self._group_deletion_records(gid))
            response.append((gid, int(E.NONE)))

        def then(error: int, t: int) -> None:
            if error:
                code = append_error_to_response_error(error)
                self._out.response = [(g, code if c == E.NONE else c) for g, c in response]
        self._emit(records, replay=True, then=then)
        return response

    def _group_deletion_records(self, gid: str) -> list[CoordinatorRecord]:
        part = self.partition_for(gid)
        out = [rec.offset_tombstone(part, gid, t, p) for (t, p) in self.offsets.get(gid, {})]
        out.append(rec.group_tombstone(part, gid))
        return out

    # ----------------------------------------------------------------- retention
    def schedule_offsets_expiry(self, now_ms: int) -> None:
        self.timers.schedule(("offsets-expiry",),
                             now_ms + self.config.offsets_retention_check_interval_ms,
                             self._offsets_expiry_timer)

    def _offsets_expiry_timer(self, now: int) -> None:
        self._emit(self.expired_offset_records(now), replay=True)
        self.schedule_offsets_expiry(now)

    def expired_offset_records(self, now: int) -> list[CoordinatorRecord]:
        """Tombstones for offsets past retention, and for Empty groups left with none."""
        out: list[CoordinatorRecord] = []
        retention = self.config.offsets_retention_ms
        for gid, g in list(self.groups.items()):
            if self.partition_for(gid) not in self.loaded or g.is_in(S.DEAD):
                continue
            offsets = self.offsets.get(gid, {})
            # when the offsets' clock starts: the moment the group became Empty, or the
            # commit itself for groups that never had members (simple consumers)
            if g.protocol_type:
                if not g.is_in(S.EMPTY):
                    continue
                base = (lambda o: g.state_timestamp_ms if g.state_timestamp_ms >= 0
                        else o.commit_timestamp_ms)
            else:
                base = (lambda o: o.commit_timestamp_ms)
            pending = self._pending_partitions(gid)
            part = self.partition_for(gid)
            all_expired = True
            for (t, p), o in offsets.items():
                if o.expire_timestamp_ms is not None:
                    expired = now >= o.expire_timestamp_ms
                else:
                    expired = now - base(o) >= retention
                if expired and (t, p) not in pending:
                    out.append(rec.offset_tombstone(part, gid, t, p))
                    self.counters["offsets_expired"] += 1
                else:
                    all_expired = False
            if all_expired and g.is_in(S.EMPTY) and not pending:
                out.append(rec.group_tombstone(part, gid))
        return out

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

    def replay(self, key: bytes, value: bytes | None, *, parsed_key=None) -> None:
        """Apply one ``__consumer_offsets`` record (load, or after our own append)."""
        k = parsed_key if parsed_key is not None else rec.decode_key(key)
        if isinstance(k, OffsetKey):
            decoded = rec.decode_offset_value(value)
            offsets = self.offsets.setdefault(k.group, {})
            if decoded is None:
                offsets.pop((k.topic, k.partition), None)
                if not offsets:
                    del self.offsets[k.group]
                return
            v, version = decoded
            offsets[(k.topic, k.partition)] = OffsetAndMetadata(
                v.offset, v.leader_epoch if version >= 3 else -1, v.metadata, v.commit_timestamp,
                v.expire_timestamp if version == 1 and v.expire_timestamp >= 0 else None)
            if k.group not in self.groups:
                self.groups[k.group] = ClassicGroup(k.group, state_timestamp_ms=-1)
        elif isinstance(k, GroupKey):
            decoded = rec.decode_group_value(value)
            if decoded is None:
                self._remove_group(k.group)
                return
            v, _ = decoded
            self._remove_group(k.group, keep_offsets=True)
            self.groups[k.group] = self._group_from_record(k.group, v)

    def _group_from_record(self, gid: str, v) -> ClassicGroup:
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

    def _remove_group(self, gid: str, *, keep_offsets: bool = False) -> None:
        g = self.groups.pop(gid, None)
        if g is not None:
            if self._out is not None:
                for m in g.members.values():
                    self._drop_parked(m)
            g.state = S.DEAD
        self.timers.cancel_where(lambda k: len(k) > 1 and k[1] == gid)
        if not keep_offsets:
            self.offsets.pop(gid, None)

    def begin_load(self, partition: int) -> None:
        self.loading.add(partition)

    def complete_load(self, partition: int, now_ms: int) -> Result:
        """Partition ``partition`` replayed: start serving its groups, expecting a
        heartbeat from every restored member within its session timeout."""
        def go():
            self.loading.discard(partition)
            self.loaded.add(partition)
            for gid, g in self.groups.items():
                if self.partition_for(gid) != partition:
                    continue
                for m in g.members.values():
                    self._schedule_heartbeat(g, m, now_ms)
                if len(g.members) > self.config.max_size:
                    self._prepare_rebalance(g, now_ms)
        return self._run(go)

    # ----------------------------------------------------------------- transactional offsets
    # Hooks for the transaction coordinator (kbroker/txn): TxnOffsetCommit writes offset
    # records in a transactional batch of the producer; they are staged here and become
    # visible when the commit marker reaches their __consumer_offsets partition.
    def validate_txn_offset_commit(self, group_id: str, member_id: str,
                                   group_instance_id: str | None, generation_id: int) -> int:
        """Kafka's ``validateTransactionalOffsetCommit``: an unknown group with generation
        -1 becomes a simple group; member/generation are checked when given; the group
        state is not enforced."""
        if not group_id:
            return E.INVALID_GROUP_ID
        err = self.coordinator_error(group_id)
        if err:
            return err
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return E.ILLEGAL_GENERATION
            return E.NONE
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(S.EMPTY):
            return E.NONE
        if generation_id >= 0 or member_id or group_instance_id is not None:
            err = self._validate_member(group, member_id, group_instance_id)
            if err:
                return err
            if generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION
        return E.NONE

    def stage_txn_offsets(self, producer_id: int, group_id: str,
                          offsets: dict[tuple[str, int], OffsetAndMetadata]) -> None:
        if group_id not in self.groups:
            self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=-1)
        self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)

    def replay_txn_offset_records(self, producer_id: int, records) -> None:
        """Load: ``(key, value)`` of a transactional batch in ``__consumer_offsets``."""
        for key, value in records:
            k = rec.decode_key(key)
            if not isinstance(k, OffsetKey):
                continue
            decoded = rec.decode_offset_value(value)
            if decoded is None:
                continue
            v, version = decoded
            self.stage_txn_offsets(producer_id, k.group, {(k.topic, k.partition): OffsetAndMetadata(
                v.offset, v.leader_epoch if version >= 3 else -1, v.metadata, v.commit_timestamp)})

    def complete_txn_offsets(self, producer_id: int, partition: int, commit: bool) -> int:
        """A marker of ``producer_id`` reached ``__consumer_offsets-partition``: its staged
        offsets of groups on that partition become committed (or are dropped)."""
        by_group = self.pending_txn_offsets.get(producer_id)
        if not by_group:
            return 0
        n = 0
        for gid in [g for g in by_group if self.partition_for(g) == partition]:
            staged = by_group.pop(gid)
            n += len(staged)
            if commit:
                self.offsets.setdefault(gid, {}).update(staged)
                if gid not in self.groups:
                    self.groups[gid] = ClassicGroup(gid, state_timestamp_ms=-1)
                self.counters["offset_commits"] += len(staged)
        if not by_group:
            del self.pending_txn_offsets[producer_id]
        return n

    # ----------------------------------------------------------------- introspection
    def statistics(self) -> dict:
        states: dict[str, int] = {}
        for g in self.groups.values():
            states[g.state.value] = states.get(g.state.value, 0) + 1
        return {"groups": len(self.groups), "groups_by_state": states,
                "members": sum(len(g.members) for g in self.groups.values()),
                "committed_offsets": sum(len(o) for o in self.offsets.values()),
                "timers": len(self.timers), "loaded_partitions": len(self.loaded),
                **self.counters}
