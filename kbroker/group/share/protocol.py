"""The share group protocol (KIP-932) as one part of the coordinator shard: ShareGroupHeartbeat
and ShareGroupDescribe over :class:`~kbroker.group.share.state.ShareGroup`, with the group's
membership durable in ``__consumer_offsets`` (Kafka 4.3's ``GroupMetadataManager.shareGroup*``).

Share groups live in the shard's group table next to classic and consumer groups (one id,
one type), so they are loaded, unloaded and failed over with their ``__consumer_offsets``
partition like every other group. The rules stay in :class:`ShareGroup` (a pure state
machine); this part compares the group before and after each event and writes what changed
as Kafka's records (:mod:`kbroker.group.share.records`): member metadata, the group epoch,
the target assignment, each member's current assignment, and the topics whose share state
the group keeps. The response is released once those records are appended (acks=all); if the
append fails, the group is put back as it was (Kafka reverts its timeline) and the member
gets the mapped error. A new coordinator replays the records and has the same group epoch,
assignment epoch, members and assignments: heartbeats carry on without a rejoin.

Sessions are timers of the shard (``("share-session", group, member)``), re-armed by every
heartbeat and on load; a member whose session expires is removed (records as a leave). As
Kafka's, they are delays on the shard's monotonic clock, so a step of the wall clock expires
no member; the assignment interval (:class:`ShareGroup`) and the records' timestamps use
the wall-clock ``now``.
A member that leaves or expires has its acquired records released by the share-partition
manager (``on_member_gone``, called once the removal is durable).

The protocol stands on :class:`~kbroker.group.member_session.MemberSessionProtocol`, as the
consumer and streams protocols do: the session timer, the heartbeat interval and session
timeout read from the GROUP configs, the member epoch's fencing rule
(:func:`~kbroker.group.epoch_state.check_epoch`) and the lifecycle hooks are theirs. It does
not stand on :class:`~kbroker.group.epoch_protocol.EpochGroupProtocol`, because what that
base shares does not exist here: a share group has no revocation (partitions are shared,
so there is no rebalance timer, no member state, and a member's epoch jumps straight to the
assignment epoch), no static members (no instance id, no epoch -2), and its rules live in
the pure :class:`ShareGroup`, whose records are written as the difference between the
group before and after an event rather than replayed one by one as they are made.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from kbroker.wire.error_codes import ErrorCode as E

from ..base import append_error_to_response_error
from ..member_session import MemberSessionProtocol
from . import records as srec
from .config import ShareGroupConfig
from .state import HeartbeatRequest, HeartbeatResult, ShareGroup, ShareGroupMember


class ShareGroupProtocol(MemberSessionProtocol):
    """Timers: ``("share-session", group, member)``."""

    timer_prefix = "share-"

    def __init__(self, shard) -> None:
        super().__init__(shard)
        self.base_config = ShareGroupConfig()
        # group id -> {config name: value} (GROUP config resources)
        self.group_configs: Callable[[str], dict] = lambda gid: {}
        self.on_member_gone: Callable[[str, str], None] = lambda gid, mid: None

    # ----------------------------------------------------------------- helpers
    def config_for(self, gid: str) -> ShareGroupConfig:
        try:
            return self.base_config.for_group(self.group_configs(gid))
        except (TypeError, ValueError):
            return self.base_config

    def session_timeout_ms(self, gid: str) -> int:
        return self.config_for(gid).session_timeout_ms

    def heartbeat_interval_ms(self, gid: str) -> int:
        return self.config_for(gid).heartbeat_interval_ms

    def _topics(self) -> dict:
        """name → (topic id, partition count) of the topics share groups may subscribe to."""
        view = self.shard.consumer.topics
        out = {}
        for name in list(view.names()):
            if name.startswith("__"):
                continue
            tid = view.id_of(name)
            if tid is not None:
                out[name] = (tid, view.num_partitions(tid))
        return out

    def _get(self, gid: str) -> ShareGroup | None:
        g = self.groups.get(gid)
        return g if isinstance(g, ShareGroup) and not g.is_dead() else None

    def other_type(self, gid: str) -> bool:
        g = self.groups.get(gid)
        return g is not None and not isinstance(g, ShareGroup) and not g.is_dead()

    # ----------------------------------------------------------------- ShareGroupHeartbeat
    def heartbeat(self, req: HeartbeatRequest, now: int) -> HeartbeatResult:
        gid = req.group_id
        err = self.coordinator_error(gid)
        if err:
            return HeartbeatResult(error=err)
        if self.other_type(gid):
            return HeartbeatResult(error=E.GROUP_ID_NOT_FOUND,
                                   message=f"Group {gid} is not a share group.")
        g = self._get(gid)
        if g is None:
            if req.member_epoch != 0:
                return HeartbeatResult(error=E.GROUP_ID_NOT_FOUND if req.member_epoch > 0
                                       else E.UNKNOWN_MEMBER_ID,
                                       message=f"Group {gid} not found.")
        topics = self._topics()
        if g is not None:
            self._maybe_restore_topics_seen(g, topics)
            before = g.snapshot()
        else:
            g = ShareGroup(gid)
            before = None
        cfg = self.config_for(gid)
        r = g.heartbeat(req, topics, now, cfg)
        if r.error:
            return r                           # a refused heartbeat changes nothing
        if req.member_epoch != -1 and g.group_epoch > (0 if before is None else before.group_epoch):
            self.counters["share_rebalances"] += 1      # Kafka's ShareGroupRebalances
        if before is None:
            self.groups[gid] = g
        self._after_change(g, before, topics, now, respond=True)
        if r.member_epoch >= 0 and req.member_id in g.members:
            self._schedule_session(gid, req.member_id, cfg.session_timeout_ms)
        return r

    def _after_change(self, g: ShareGroup, before: ShareGroup | None, topics: dict, now: int,
                      *, respond: bool) -> None:
        """Write what changed between ``before`` and ``g``; revert if that fails."""
        gid = g.group_id
        gone = [] if before is None else [m for m in before.members if m not in g.members]
        for mid in gone:
            self._cancel_member_timers(gid, mid)
        records = self._records_between(before, g, topics, now)
        if not records:
            return

        def then(error: int, t: int) -> None:
            if error:
                if before is None:
                    if self.groups.get(gid) is g:
                        del self.groups[gid]
                else:
                    cur = self.groups.get(gid)
                    if isinstance(cur, ShareGroup):
                        cur.__dict__.update(before.__dict__)
                if respond:
                    self._out.response = HeartbeatResult(
                        error=append_error_to_response_error(error))
                return
            for mid in gone:
                self.on_member_gone(gid, mid)
        self._emit(records, then=then)

    def _records_between(self, a: ShareGroup | None, b: ShareGroup, topics: dict,
                         now: int) -> list:
        """Kafka's records for the change from ``a`` (None: a new group) to ``b``; keeps
        ``b.metadata_hash`` and ``b.initialized`` up to date as the records say."""
        part, gid = self.partition_for(b.group_id), b.group_id
        a_members = {} if a is None else a.members
        a_target = {} if a is None else a.target
        out = []
        for mid in a_members:
            if mid not in b.members:
                out += srec.member_tombstones(part, gid, mid)
        for mid, m in b.members.items():
            old = a_members.get(mid)
            if old is None or _metadata(old) != _metadata(m):
                out.append(srec.member_metadata_record(part, gid, m))
        if a is None or a.group_epoch != b.group_epoch:
            view = self.shard.consumer.topics
            b.metadata_hash = view.metadata_hash(b.subscribed_topic_names())
            out.append(srec.group_epoch_record(part, gid, b.group_epoch, b.metadata_hash))
        for mid, target in b.target.items():
            if mid in b.members and (mid not in a_target or _norm(a_target[mid]) != _norm(target)):
                out.append(srec.target_assignment_member_record(part, gid, mid, target))
        if a is None or a.assignment_epoch != b.assignment_epoch:
            out.append(srec.target_assignment_metadata_record(part, gid, b.assignment_epoch, now))
        for mid, m in b.members.items():
            old = a_members.get(mid)
            if old is None or (old.member_epoch, old.previous_member_epoch, _norm(old.assigned)) \
                    != (m.member_epoch, m.previous_member_epoch, _norm(m.assigned)):
                out.append(srec.current_assignment_record(part, gid, m))
        # the share-partitions the group will keep state for: every partition assigned
        by_id = {tid: name for name, (tid, _) in topics.items()}
        wanted = dict(b.initialized)
        for target in b.target.values():
            for tid, ps in target.items():
                if not ps or tid not in by_id:
                    continue
                name, have = wanted.get(tid, (by_id[tid], frozenset()))
                wanted[tid] = (name, frozenset(have) | frozenset(ps))
        if wanted != b.initialized:
            b.initialized = wanted
            out.append(srec.state_partition_metadata_record(part, gid, wanted))
        return out

    # ----------------------------------------------------------------- sessions
    def _session_expired(self, gid: str, member_id: str, now: int) -> None:
        g = self._get(gid)
        if g is None or member_id not in g.members:
            return
        topics = self._topics()
        self._maybe_restore_topics_seen(g, topics)
        before = g.snapshot()
        g.remove(member_id, topics, now)
        self.counters["members_expired"] += 1
        self._after_change(g, before, topics, now, respond=False)

    # ----------------------------------------------------------------- replay
    def replay(self, k: srec.ShareKey, value_bytes, value=None) -> None:
        """Apply one share group record read from ``__consumer_offsets``."""
        if value is None and value_bytes is not None:
            value = srec.decode_value(k.record_type, value_bytes)
        tombstone = value_bytes is None
        gid = k.group
        g = self.groups.get(gid)
        if not isinstance(g, ShareGroup) or g.is_dead():
            if tombstone:
                return
            if g is not None and not g.is_dead() and not g.is_empty():
                return                          # a live group of another type keeps its id
            g = self.groups[gid] = ShareGroup(gid)
        rt, mid = k.record_type, k.member_id
        if rt == srec.GROUP_METADATA:
            if tombstone:
                self.shard._remove_group(gid, keep_offsets=True)
                return
            g.group_epoch, g.metadata_hash = value.epoch, value.metadata_hash
        elif rt == srec.MEMBER_METADATA:
            if tombstone:
                g.members.pop(mid, None)
                return
            old = g.members.get(mid) or ShareGroupMember(mid)
            g.members[mid] = replace(old, rack_id=value.rack_id, client_id=value.client_id,
                                     client_host=value.client_host,
                                     subscribed_topic_names=tuple(sorted(value.subscribed_topic_names)))
        elif rt == srec.TARGET_ASSIGNMENT_METADATA:
            g.assignment_epoch = 0 if tombstone else value.assignment_epoch
        elif rt == srec.TARGET_ASSIGNMENT_MEMBER:
            if tombstone:
                g.target.pop(mid, None)
            else:
                g.target[mid] = {tp.topic_id: frozenset(tp.partitions)
                                 for tp in value.topic_partitions if tp.partitions}
        elif rt == srec.CURRENT_MEMBER_ASSIGNMENT:
            if tombstone:
                return                          # the metadata tombstone removes the member
            old = g.members.get(mid) or ShareGroupMember(mid)
            g.members[mid] = replace(
                old, member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                assigned={tp.topic_id: frozenset(tp.partitions)
                          for tp in value.assigned_partitions if tp.partitions})
        elif rt == srec.STATE_PARTITION_METADATA:
            g.initialized = {} if tombstone else {
                t.topic_id: (t.topic_name, frozenset(t.partitions))
                for t in value.initialized_topics}

    # ----------------------------------------------------------------- lifecycle hooks
    def on_loaded(self, g: ShareGroup, now: int) -> None:
        """A replayed group starts serving: sessions run from now, the topics seen are the
        current ones (no epoch bump for topics that did not change), and an assignment left
        pending by the previous coordinator is computed on the next heartbeat."""
        cfg = self.config_for(g.group_id)
        g.topics_seen = None            # compared with the replayed metadata hash on first use
        if g.group_epoch > g.assignment_epoch:
            g.assignment_due_ms = now
        for mid in g.members:
            self._schedule_session(g.group_id, mid, cfg.session_timeout_ms)

    def _maybe_restore_topics_seen(self, g: ShareGroup, topics: dict) -> None:
        """After a load: the subscribed topics count as seen if their metadata hash is the
        one the previous coordinator wrote (Kafka's check), else the next heartbeat bumps
        the group epoch and a new assignment follows."""
        if g.topics_seen is not None:
            return
        names = g.subscribed_topic_names()
        same = self.shard.consumer.topics.metadata_hash(names) == g.metadata_hash
        g.topics_seen = {t: topics[t] for t in names if t in topics} if same else {}

    def group_tombstones(self, g: ShareGroup) -> list:
        return srec.group_tombstones(self.partition_for(g.group_id), g.group_id, list(g.members))

    # offsets: a share group commits none (Kafka: the group is not found for these APIs)
    def validate_offset_commit(self, g, mid, instance, epoch, now, api_version):
        return E.GROUP_ID_NOT_FOUND

    def validate_txn_offset_commit(self, g, mid, instance, epoch) -> int:
        return E.GROUP_ID_NOT_FOUND

    def validate_offset_fetch(self, g, mid, epoch) -> int:
        return E.GROUP_ID_NOT_FOUND


def _metadata(m: ShareGroupMember) -> tuple:
    return (m.rack_id, m.client_id, m.client_host, tuple(m.subscribed_topic_names))


def _norm(assignment) -> dict:
    return {t: frozenset(ps) for t, ps in assignment.items() if ps}
