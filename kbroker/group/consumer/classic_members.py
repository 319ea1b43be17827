"""Classic members of a consumer group and the online migration between the two protocols
(KIP-848 "upgrade/downgrade"; Kafka 4.3's ``GroupMetadataManager.classicGroup*ToConsumerGroup``,
``convertToConsumerGroup`` and ``convertToClassicGroup``).

A consumer that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup with
protocol type ``consumer``) may be a member of a group that uses the consumer protocol:

- **JoinGroup** makes it a :class:`~kbroker.group.consumer.state.ConsumerGroupMember` whose
  subscription is read from its ``ConsumerProtocolSubscription`` and whose join request is
  kept in ``ClassicMemberMetadata`` (session timeout, protocols). The group epoch, target
  assignment and reconciliation are the consumer protocol's (the owned partitions of the
  subscription play the heartbeat's ``TopicPartitions``). The answer makes it a follower
  (no leader, no member list) at generation = its member epoch, once the records are durable.
- **SyncGroup** hands it its current assignment (the server-side assignor's, serialized with
  the version of its subscription); REBALANCE_IN_PROGRESS if the group epoch moved past it
  (unless it still has partitions to revoke).
- **Heartbeat** answers REBALANCE_IN_PROGRESS while it must rejoin: the group epoch moved,
  it has partitions to revoke, or partitions it waited for were released.
- **LeaveGroup** removes it and bumps the group epoch.
- Timers: its session (the JoinGroup's session timeout), a *join* timeout once it was told to
  rejoin and a *sync* timeout after its join (both the rebalance timeout): expiry fences it.

Migration (``group.consumer.migration.policy``: ``bidirectional`` (default), ``upgrade``,
``downgrade``, ``disabled``):

- **upgrade** — the first ConsumerGroupHeartbeat to a non-empty classic group using the
  ``consumer`` protocol type converts it: group epoch = assignment epoch = the generation,
  every member Stable at that epoch with its last classic assignment as target. Records:
  the classic group's tombstone, then each member's metadata, the group epoch, each
  member's target, the target epoch and each member's current assignment (Kafka's order).
  Parked joins and syncs are answered REBALANCE_IN_PROGRESS.
- **downgrade** — when the last consumer-protocol member leaves (or is fenced) and classic
  members remain, the group becomes a Stable classic group at generation = group epoch with
  each member's target assignment, then rebalances; also when a classic static member takes
  the place (``group.instance.id``) of the last consumer-protocol one (no rebalance then). Records: the consumer group's tombstones,
  then a ``GroupMetadata`` record.

Pure: no clock, no I/O; part of the coordinator shard like the protocol it serves.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from ..base import ShardPart, append_error_to_response_error
from ..classic.protocol import JoinResponse, SyncResponse
from ..classic.state import ClassicGroup, GroupState, Member
from . import records as crec
from .state import (ConsumerGroup, ConsumerGroupMember,
                    GroupError, MemberState, members_equal, reconcile)

PROTOCOL_TYPE = "consumer"
_MAX_SUBSCRIPTION_VERSION = 3
_MAX_ASSIGNMENT_VERSION = 3


@dataclass
class Subscription:
    """A classic member's decoded ``ConsumerProtocolSubscription``: topics, owned partitions,
    rack."""
    version: int
    topics: list[str]
    owned: list[tuple[str, list[int]]]
    rack_id: str | None


def decode_subscription(meta: bytes) -> Subscription:
    """A ``ConsumerProtocolSubscription`` (int16 version + the struct at that version;
    newer versions are read as the newest known, as Kafka does)."""
    if len(meta) < 2:
        raise ValueError("subscription too short")
    version = int.from_bytes(meta[:2], "big", signed=True)
    if version < 0:
        raise ValueError("negative subscription version")
    s = messages.get("ConsumerProtocolSubscription").decode(
        bytes(meta), min(version, _MAX_SUBSCRIPTION_VERSION), 2)
    owned = [(tp.topic, list(tp.partitions)) for tp in (s.owned_partitions or ())]
    return Subscription(version, list(s.topics or ()), owned, s.rack_id)


def encode_assignment(partitions: list[tuple[str, list[int]]], version: int) -> bytes:
    """A ``ConsumerProtocolAssignment`` at ``version`` (the member's subscription's)."""
    version = max(0, min(version, _MAX_ASSIGNMENT_VERSION))
    cls = messages.get("ConsumerProtocolAssignment")
    value = cls(assigned_partitions=[cls.TopicPartition(topic=t, partitions=sorted(ps))
                                     for t, ps in partitions], user_data=None)
    return version.to_bytes(2, "big", signed=True) + value.encode(version)


def decode_assignment(data: bytes) -> list[tuple[str, list[int]]]:
    if not data or len(data) < 2:
        return []
    version = int.from_bytes(data[:2], "big", signed=True)
    a = messages.get("ConsumerProtocolAssignment").decode(
        bytes(data), max(0, min(version, _MAX_ASSIGNMENT_VERSION)), 2)
    return [(tp.topic, list(tp.partitions)) for tp in (a.assigned_partitions or ())]


def uses_classic(m: ConsumerGroupMember) -> bool:
    return m.classic_metadata is not None


def classic_protocols(m: ConsumerGroupMember) -> list[tuple[str, bytes]]:
    return [(p.name, bytes(p.metadata)) for p in (m.classic_metadata.supported_protocols or ())]


def classic_session_timeout_ms(m: ConsumerGroupMember) -> int:
    return int(m.classic_metadata.session_timeout_ms)


def _classic_metadata(session_timeout_ms: int, protocols: list[tuple[str, bytes]]):
    cls = crec.message("ConsumerGroupMemberMetadataValue")
    return cls.ClassicMemberMetadata(
        session_timeout_ms=session_timeout_ms,
        supported_protocols=[cls.ClassicProtocol(name=n, metadata=bytes(md)) for n, md in protocols])


class ClassicMembers(ShardPart):
    """The classic protocol's requests to consumer groups, and the conversions. Owned by
    the :class:`~kbroker.group.consumer.protocol.ConsumerGroupProtocol` (``proto``), whose
    record helpers it uses. Timers: ``("consumer-join", group, member)`` and
    ``("consumer-sync", group, member)``."""

    def __init__(self, shard, proto) -> None:
        super().__init__(shard)
        self.proto = proto

    @property
    def topics(self):
        return self.proto.topics

    # ----------------------------------------------------------------- helpers
    def _names(self, assignment) -> list[tuple[str, list[int]]]:
        out = []
        for t, ps in assignment.items():
            name = self.topics.name_of(t)
            if name is not None and ps:
                out.append((name, sorted(ps)))
        return sorted(out)

    def _ids(self, partitions: list[tuple[str, list[int]]]) -> list[tuple[uuid.UUID, list[int]]]:
        out = []
        for name, ps in partitions:
            tid = self.topics.id_of(name)
            if tid is not None:
                out.append((tid, list(ps)))
        return out

    def _assignment_bytes(self, m: ConsumerGroupMember, assignment) -> bytes:
        protocols = classic_protocols(m)
        try:
            version = decode_subscription(protocols[0][1]).version if protocols else 0
        except Exception:  # noqa: BLE001 - validated at join; stay answerable
            version = 0
        return encode_assignment(self._names(assignment), version)

    def _validate_member(self, group: ConsumerGroup, member_id: str,
                         instance_id: str | None) -> ConsumerGroupMember:
        if instance_id is None:
            m = group.members.get(member_id)
            if m is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {group.group_id}.")
        else:
            m = group.static_member(instance_id)
            if m is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID,
                                 f"Member with instance id {instance_id} is not a member of "
                                 f"group {group.group_id}.")
            if m.member_id != member_id:
                raise GroupError(E.FENCED_INSTANCE_ID)
        if not uses_classic(m):
            raise GroupError(E.UNKNOWN_MEMBER_ID,
                             f"Member {m.member_id} does not use the classic protocol.")
        return m

    def _supports(self, group: ConsumerGroup, protocol_type: str, names: list[str]) -> bool:
        """Kafka's ``supportsClassicProtocols``: one of ``names`` is supported by every
        classic member."""
        if protocol_type != PROTOCOL_TYPE or not names:
            return False
        classic = [m for m in group.members.values() if uses_classic(m)]
        if not classic:
            return True
        return any(all(n in {p for p, _ in classic_protocols(m)} for m in classic) for n in names)

    def schedule_session(self, gid: str, m: ConsumerGroupMember) -> None:
        self.proto._schedule_session(gid, m.member_id, classic_session_timeout_ms(m))

    def _schedule_join_timeout_if_absent(self, gid: str, m: ConsumerGroupMember) -> None:
        key = ("consumer-join", gid, m.member_id)
        if key in self.timers:
            return
        mid = m.member_id
        self.timers.schedule(key, m.rebalance_timeout_ms,
                             lambda t: self.proto._fence_by_timer(gid, mid, lambda _m: True, t))

    def _schedule_sync_timeout(self, gid: str, mid: str, timeout: int) -> None:
        self.timers.schedule(("consumer-sync", gid, mid), timeout,
                             lambda t: self.proto._fence_by_timer(gid, mid, lambda _m: True, t))

    def waiting_on_unreleased(self, group: ConsumerGroup, m: ConsumerGroupMember) -> bool:
        if m.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for t, ps in group.target.get(m.member_id, {}).items():
            mine = m.assigned.get(t, {})
            for p in ps:
                if p not in mine and group.owner_epoch(t, p) != -1:
                    return True
        return False

    # ----------------------------------------------------------------- JoinGroup
    def join(self, group: ConsumerGroup, req, slot: Any, now: int) -> None:
        """A classic JoinGroup to a non-empty consumer group (the reply goes to ``slot``)."""
        gid = group.group_id
        before = self.proto._snapshot(gid)
        records: list = []
        try:
            resp, member = self._join(group, req, records, now)
        except GroupError as e:
            self.proto._restore(gid, before)
            self._reply(slot, JoinResponse(error=e.code, member_id=req.member_id))
            return
        if resp.error:                               # MEMBER_ID_REQUIRED
            self._reply(slot, resp)
            return

        def done(t: int) -> None:
            if isinstance(member, ClassicGroup):
                self._reply(slot, resp)               # downgraded: a classic group now
                return
            self.timers.cancel(("consumer-join", gid, resp.member_id))
            self.proto._schedule_session(gid, resp.member_id, req.session_timeout_ms)
            self._schedule_sync_timeout(gid, resp.member_id, req.rebalance_timeout_ms)
            self._reply(slot, resp)

        if not records:
            done(now)
            return

        def then(error: int, t: int) -> None:
            if error:
                self.proto._restore(gid, before)
                self._reply(slot, JoinResponse(error=append_error_to_response_error(error),
                                               member_id=req.member_id))
            else:
                done(t)
        self._emit(records, then=then)

    def _join(self, group: ConsumerGroup, req, records: list, now: int):
        gid = group.group_id
        part = self.partition_for(gid)
        unknown = req.member_id == ""
        member_id = req.member_id or self.proto._new_member_id()
        if len(group.members) >= self.config.consumer_max_size and member_id not in group.members:
            raise GroupError(E.GROUP_MAX_SIZE_REACHED)
        if not self._supports(group, req.protocol_type, [n for n, _ in req.protocols]):
            raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL,
                             f"Member {member_id}'s protocols are not supported.")
        if unknown and req.api_version >= 4 and req.group_instance_id is None:
            # KIP-394: a dynamic member first gets its id
            return JoinResponse(error=E.MEMBER_ID_REQUIRED, member_id=member_id), None
        try:
            sub = decode_subscription(req.protocols[0][1])
        except Exception:  # noqa: BLE001 - bad embedded protocol from a client
            raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL,
                             "The embedded consumer protocol is malformed.")

        # the member (Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember)
        replaced = None
        if req.group_instance_id is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id)
        else:
            existing = group.static_member(req.group_instance_id)
            if existing is None:
                if not unknown:
                    raise GroupError(E.UNKNOWN_MEMBER_ID,
                                     f"Instance id {req.group_instance_id} is unknown.")
                member = ConsumerGroupMember(member_id)
            elif unknown:
                # a static member rejoining takes over the old member's assignment
                member = self.proto._replace_static(group, existing, member_id, records, part)
                replaced = existing
            elif existing.member_id != member_id:
                raise GroupError(E.FENCED_INSTANCE_ID)
            else:
                member = existing

        updated = replace(
            member, instance_id=req.group_instance_id,
            rack_id=sub.rack_id if sub.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            subscribed_topic_names=tuple(sorted(set(sub.topics))),
            client_id=req.client_id, client_host=req.client_host,
            classic_metadata=_classic_metadata(req.session_timeout_ms, req.protocols))
        is_new = member_id not in group.members
        names_changed = set(updated.subscribed_topic_names) != set(member.subscribed_topic_names)
        if is_new or _metadata_differs(member, updated):
            self.proto._apply(records, crec.member_metadata_record(part, gid, updated))
        new_hash = self.topics.metadata_hash(group.subscribed_topic_names())
        step = (1 if is_new else 0) + (1 if names_changed or new_hash != group.metadata_hash else 0)
        if step:
            self.proto._apply(records, crec.group_epoch_record(part, gid, group.group_epoch + step,
                                                               new_hash))
            # Kafka's classicGroupJoinToConsumerGroup bumps through updateSubscriptionMetadata,
            # which records ConsumerGroupRebalances
            self.counters["consumer_rebalances"] += 1
        self.proto._maybe_update_target(group, records, part, now, force=True)

        m = group.members[member_id]
        new_m = reconcile(m, target_epoch=group.assignment_epoch,
                          target=group.target.get(member_id, {}), owner_epoch=group.owner_epoch,
                          subscribed=self.topics.ids_of(group.member_subscribed_names(m)),
                          subscription_changed=names_changed, owned=self._ids(sub.owned))
        if not members_equal(new_m, m):
            self.proto._apply(records, crec.current_assignment_record(part, gid, new_m))
        final = group.members[member_id]
        if (replaced is not None and not uses_classic(replaced)
                and self._may_downgrade(list(group.members.values()))):
            # the last consumer-protocol (static) member was replaced by a classic one: the
            # group becomes a classic group with the new member in the old one's place
            cg = self._to_classic(group, list(group.members.values()), records, now)
            return JoinResponse(error=E.NONE, generation_id=cg.generation_id,
                                protocol_type=PROTOCOL_TYPE, protocol_name=cg.protocol_name,
                                leader="", member_id=member_id,
                                members=[]), cg
        return JoinResponse(error=E.NONE, generation_id=final.member_epoch,
                            protocol_type=PROTOCOL_TYPE,
                            protocol_name=classic_protocols(final)[0][0],
                            leader="", member_id=member_id, members=[]), final

    # ----------------------------------------------------------------- SyncGroup
    def sync(self, group: ConsumerGroup, mid, gen, instance, ptype, pname, slot, now) -> None:
        gid = group.group_id
        try:
            m = self._validate_member(group, mid, instance)
            if gen != m.member_epoch:
                raise GroupError(E.ILLEGAL_GENERATION)
            name = classic_protocols(m)[0][0]
            if (ptype is not None and ptype != PROTOCOL_TYPE) or (pname is not None and pname != name):
                raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL)
            if group.group_epoch > m.member_epoch and m.state is not MemberState.UNREVOKED_PARTITIONS:
                self._schedule_join_timeout_if_absent(gid, m)
                raise GroupError(E.REBALANCE_IN_PROGRESS)
        except GroupError as e:
            self._reply(slot, SyncResponse(error=e.code))
            return
        self.timers.cancel(("consumer-sync", gid, m.member_id))
        self.schedule_session(gid, m)
        self._reply(slot, SyncResponse(error=E.NONE, protocol_type=PROTOCOL_TYPE, protocol_name=name,
                                       assignment=self._assignment_bytes(m, m.assigned)))

    # ----------------------------------------------------------------- Heartbeat
    def heartbeat(self, group: ConsumerGroup, mid, gen, instance, now) -> int:
        gid = group.group_id
        try:
            m = self._validate_member(group, mid, instance)
        except GroupError as e:
            return e.code
        if gen != m.member_epoch:
            return E.ILLEGAL_GENERATION
        self.schedule_session(gid, m)
        if (m.member_epoch < group.group_epoch or m.state is MemberState.UNREVOKED_PARTITIONS
                or (m.state is MemberState.UNRELEASED_PARTITIONS
                    and not self.waiting_on_unreleased(group, m))):
            self._schedule_join_timeout_if_absent(gid, m)
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    # ----------------------------------------------------------------- LeaveGroup
    def leave(self, group: ConsumerGroup, members, now):
        gid = group.group_id
        part = self.partition_for(gid)
        before = self.proto._snapshot(gid)
        records: list = []
        out = []
        for mid, instance in members:
            try:
                if instance is None:
                    m = group.members.get(mid)
                    if m is None:
                        raise GroupError(E.UNKNOWN_MEMBER_ID)
                else:
                    m = group.static_member(instance)
                    if m is None:
                        raise GroupError(E.UNKNOWN_MEMBER_ID)
                    if mid != "" and mid != m.member_id:
                        raise GroupError(E.FENCED_INSTANCE_ID)
                if not uses_classic(m):
                    raise GroupError(E.UNKNOWN_MEMBER_ID)
            except GroupError as e:
                out.append((mid, instance, int(e.code)))
                continue
            self.proto._remove_member_records(group, m.member_id, records, part)
            out.append((m.member_id, instance, int(E.NONE)))
        if records:
            new_hash = self.topics.metadata_hash(group.subscribed_topic_names())
            self.proto._apply(records, crec.group_epoch_record(part, gid, group.group_epoch + 1,
                                                               new_hash))
            self.proto._target_of_emptied_group(group, records, part)

            def then(error: int, t: int) -> None:
                if error:
                    self.proto._restore(gid, before)
                    self._out.response = (append_error_to_response_error(error), [])
            self._emit(records, then=then)
        return E.NONE, out

    # ----------------------------------------------------------------- upgrade
    def can_upgrade(self, g: ClassicGroup) -> bool:
        return (self.config.consumer_migration_policy in ("bidirectional", "upgrade")
                and g.uses_consumer_protocol()
                and len(g.members) <= self.config.consumer_max_size)

    def upgrade(self, g: ClassicGroup, records: list, now: int) -> ConsumerGroup:
        """Convert the live classic group ``g`` (Kafka's ``convertToConsumerGroup``)."""
        gid = g.group_id
        part = self.partition_for(gid)
        members = []
        for cm in g.members.values():
            meta = cm.metadata(g.protocol_name) or (cm.protocols[0][1] if cm.protocols else b"")
            try:
                sub = decode_subscription(meta)
                owned = decode_assignment(cm.assignment)
            except Exception:  # noqa: BLE001 - a malformed embedded protocol
                raise GroupError(E.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade the classic group {gid} to consumer group "
                                 "because the embedded consumer protocol is malformed.")
            gen = g.generation_id
            assigned = {t: {p: gen for p in ps} for t, ps in self._ids(owned) if ps}
            members.append(ConsumerGroupMember(
                cm.member_id, instance_id=cm.group_instance_id, rack_id=sub.rack_id,
                client_id=cm.client_id, client_host=cm.client_host,
                subscribed_topic_names=tuple(sorted(set(sub.topics))),
                rebalance_timeout_ms=cm.rebalance_timeout_ms,
                classic_metadata=_classic_metadata(cm.session_timeout_ms, cm.protocols),
                member_epoch=gen, previous_member_epoch=gen, state=MemberState.STABLE,
                assigned=assigned))
        # parked classic requests: another rebalance follows, they rejoin
        for slot, reply in self.shard.classic.abort_parked(g, E.REBALANCE_IN_PROGRESS):
            self._reply(slot, reply)
        for m in g.members.values():
            m.awaiting_join = m.awaiting_sync = None
        records.extend(self.shard.classic.group_tombstones(g))
        c = self.groups[gid] = ConsumerGroup(gid)
        for m in members:
            self.proto._apply(records, crec.member_metadata_record(part, gid, m))
        self.proto._apply(records, crec.group_epoch_record(
            part, gid, g.generation_id, self.topics.metadata_hash(c.subscribed_topic_names())))
        for m in members:
            self.proto._apply(records, crec.target_assignment_member_record(
                part, gid, m.member_id, {t: frozenset(ps) for t, ps in m.assigned.items()}))
        self.proto._apply(records, crec.target_assignment_metadata_record(part, gid, g.generation_id, now))
        for m in members:
            self.proto._apply(records, crec.current_assignment_record(part, gid, m))
        for m in members:
            self.schedule_session(gid, c.members[m.member_id])
        return c

    # ----------------------------------------------------------------- downgrade
    def _may_downgrade(self, members: list[ConsumerGroupMember]) -> bool:
        return (bool(members) and all(uses_classic(m) for m in members)
                and self.config.consumer_migration_policy in ("bidirectional", "downgrade")
                and len(members) <= self.config.max_size)

    def maybe_downgrade(self, group: ConsumerGroup, leaving: ConsumerGroupMember, records: list,
                        now: int) -> bool:
        """``leaving`` leaves or is fenced: convert to a classic group if every other member
        speaks the classic protocol (Kafka's ``validateOnlineDowngradeWithFencedMember`` and
        ``convertToClassicGroup``), then rebalance. True if converted (``records`` then hold
        the conversion)."""
        others = [m for m in group.members.values() if m.member_id != leaving.member_id]
        if not self._may_downgrade(others):
            return False
        cg = self._to_classic(group, others, records, now)
        self.shard.classic._prepare_rebalance(cg, now)
        return True

    def _to_classic(self, group: ConsumerGroup, members: list[ConsumerGroupMember],
                    records: list, now: int) -> ClassicGroup:
        """Replace ``group`` by a Stable classic group of ``members`` at generation = the
        group epoch, each with its target assignment; the records: the consumer group's
        tombstones, then the classic group's ``GroupMetadata``."""
        gid = group.group_id
        records.extend(self.proto.group_tombstones(group))
        cg = ClassicGroup(gid, state=GroupState.STABLE, state_timestamp_ms=now,
                          generation_id=group.group_epoch, protocol_type=PROTOCOL_TYPE)
        for m in members:
            cg.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host,
                          m.rebalance_timeout_ms, classic_session_timeout_ms(m), PROTOCOL_TYPE,
                          classic_protocols(m)))
        cg.protocol_name = cg.select_protocol()
        cg.subscribed_topics = cg._compute_subscribed_topics()
        for m in members:
            cm = cg.members[m.member_id]
            try:
                version = decode_subscription(cm.metadata(cg.protocol_name)).version
            except Exception:  # noqa: BLE001
                version = 0
            cm.assignment = encode_assignment(self._names(group.target.get(m.member_id, {})),
                                              version)
        records.append(self.shard.classic._group_record(cg, now))
        self.shard._remove_group(gid, keep_offsets=True)
        self.groups[gid] = cg
        for cm in cg.members.values():
            self.shard.classic._schedule_heartbeat(cg, cm)
        return cg


def _metadata_differs(a: ConsumerGroupMember, b: ConsumerGroupMember) -> bool:
    return (a.instance_id, a.rack_id, a.client_id, a.client_host, a.subscribed_topic_names,
            a.rebalance_timeout_ms, a.classic_metadata) != (
        b.instance_id, b.rack_id, b.client_id, b.client_host, b.subscribed_topic_names,
        b.rebalance_timeout_ms, b.classic_metadata)
