"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat and ConsumerGroupDescribe
as pure rules over :class:`~kbroker.group.consumer.state.ConsumerGroup`, one part of the
coordinator shard (Kafka 4.3's ``GroupMetadataManager.consumerGroup*``).

A heartbeat, in order (``consumerGroupHeartbeat``):

1. request checks (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR) — before the group is looked up;
2. epoch -1 / -2: the member leaves (a static member with -2 keeps its partitions for its
   session timeout so it can come back under a new member id);
3. the group is found or (epoch 0) created — an *empty* classic group of the same id is
   replaced; a non-empty one is converted (the online upgrade, :mod:`.classic_members`)
   or answers GROUP_ID_NOT_FOUND; ``group.consumer.max.size`` → GROUP_MAX_SIZE_REACHED;
4. the member is found or created: fencing by member epoch (FENCED_MEMBER_EPOCH), unknown
   ids (UNKNOWN_MEMBER_ID), static members (``group.instance.id``: UNRELEASED_INSTANCE_ID
   while the previous holder has not left, FENCED_INSTANCE_ID for an old member id);
5. subscription: topic names and/or a regular expression (resolved at once against the
   topics); a changed subscription, a newly resolved regex or a change of the subscribed
   topics' metadata bumps the **group epoch**;
6. a group epoch above the assignment epoch computes a new **target assignment** with the
   group's assignor (the one most members ask for via ServerAssignor, else the first of
   ``group.consumer.assignors``);
7. the member **reconciles** towards its target (revocation before assignment);
8. the session timer is (re)armed; a member asked to revoke gets a rebalance timer
   (its rebalance timeout) and is fenced if it is still at that epoch when it fires.

Timers are delays on the shard's monotonic clock, as Kafka's; what is compared with
written timestamps stays on the wall clock as in Kafka: the assignment interval (from the
target assignment's timestamp) and the refresh of resolved regular expressions.

Every state change is a ``__consumer_offsets`` record (the types of
:mod:`kbroker.group.consumer.records`) that is *replayed* into the group as soon as it is
produced — like Kafka's timeline state, the next request sees it — and appended before the
response is released. If the append fails, the group is restored from a copy taken before
the request (Kafka reverts its timeline to the last committed offset).

Target assignments are batched as in Kafka 4.3 (``group.consumer.assignment.interval.ms``,
default 1000; the GROUP config ``consumer.assignment.interval.ms``): within the interval after
the last one, members keep reconciling towards the previous target and a later heartbeat
computes the new one.

Classic members inside a consumer group and the classic⇄consumer migration
(``group.consumer.migration.policy``) are :mod:`.classic_members`. Not implemented:
offloading the assignor to another thread.
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field, replace
from typing import Callable

from kbroker.wire.error_codes import ErrorCode as E

from ..base import DescribedGroup
from ..classic.state import ClassicGroup
from ..epoch_protocol import DescribedEpochGroup, EpochGroupProtocol, check_not_empty
from . import records as crec
from .classic_members import ClassicMembers, classic_session_timeout_ms, uses_classic
from .assignors import AssignorError, GroupSpec, MemberSpec, assign
from .regex import compile_regex, resolve
from .state import (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroup,
                    ConsumerGroupMember, GroupError, MemberState, ResolvedRegex,
                    check_member_epoch, members_equal, reconcile)
from .topics import EMPTY as EMPTY_TOPICS, TopicsView

REGEX_MIN_REFRESH_INTERVAL_MS = 10_000
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


@dataclass
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat as the coordinator reads it (null fields: unchanged)."""
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: list[tuple[uuid.UUID, list[int]]] | None = None     # TopicPartitions
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass
class HeartbeatResponse:
    """What ConsumerGroupHeartbeat answers: the error or the member's epoch and assignment."""
    error: int = 0
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict[uuid.UUID, list[int]] | None = None


@dataclass
class DescribedConsumerMember:
    """One member of a consumer group as ConsumerGroupDescribe lists it."""
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: list[tuple[uuid.UUID, str, list[int]]]
    target_assignment: list[tuple[uuid.UUID, str, list[int]]]
    member_type: int = 1                     # KIP-1099: 1 = consumer protocol member


@dataclass
class DescribedConsumerGroup(DescribedEpochGroup):
    """A consumer group as ConsumerGroupDescribe answers it: its assignor and members."""
    assignor_name: str = ""
    members: list[DescribedConsumerMember] = field(default_factory=list)


def _kafka_uuid_string() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ConsumerGroupProtocol(EpochGroupProtocol):
    """The consumer protocol's decisions; the groups live in the shard's table.

    Timers: ``("consumer-session", group, member)`` and ``("consumer-rebalance", group,
    member)``."""

    group_class = ConsumerGroup
    member_class = ConsumerGroupMember
    member_states = MemberState
    revoking_state = MemberState.UNREVOKED_PARTITIONS
    response_class = HeartbeatResponse
    rec = crec
    group_type = "consumer"
    timer_prefix = "consumer-"
    # classic members of the group have join and sync timers too (:mod:`.classic_members`)
    member_timer_kinds = ("session", "rebalance", "join", "sync")

    @staticmethod
    def _empty_assignment() -> dict:
        return {}

    def __init__(self, shard, member_id_factory: Callable[[], str] = _kafka_uuid_string) -> None:
        super().__init__(shard)
        self._new_member_id = member_id_factory
        self.topics: TopicsView = EMPTY_TOPICS
        # group id -> {config name: value} of GROUP config resources (KIP-848 group configs)
        self.group_configs: Callable[[str], dict] = lambda gid: {}
        # classic-protocol members of consumer groups and the online migration
        self.classic_members = ClassicMembers(shard, self)

    # ----------------------------------------------------------------- helpers
    def session_timeout_ms(self, gid: str) -> int:
        v = self.group_configs(gid).get("consumer.session.timeout.ms")
        return int(v) if v is not None else self.config.consumer_session_timeout_ms

    def heartbeat_interval_ms(self, gid: str) -> int:
        v = self.group_configs(gid).get("consumer.heartbeat.interval.ms")
        return int(v) if v is not None else self.config.consumer_heartbeat_interval_ms

    def _partition(self, gid: str) -> int:
        return self.partition_for(gid)

    # ----------------------------------------------------------------- request checks
    def _validate(self, req: HeartbeatRequest) -> None:
        if (req.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
                or req.member_epoch > 0 or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH):
            check_not_empty(req.member_id, "MemberId")
        check_not_empty(req.group_id, "GroupId")
        check_not_empty(req.instance_id, "InstanceId")
        check_not_empty(req.rack_id, "RackId")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise GroupError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if req.owned is None or req.owned:
                raise GroupError(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise GroupError(E.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex "
                                 "must be non-null when (re-)joining.")
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if req.instance_id is None:
                raise GroupError(E.INVALID_REQUEST, "InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self.config.consumer_assignors:
            raise GroupError(E.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {req.server_assignor} is not supported. Supported "
                             f"assignors: {', '.join(self.config.consumer_assignors)}.")

    # ----------------------------------------------------------------- ConsumerGroupHeartbeat
    def _get_or_create(self, gid: str, create: bool, records: list, now: int = 0) -> ConsumerGroup:
        g = self.groups.get(gid)
        if g is None:
            if not create:
                raise GroupError(E.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found.")
            g = self.groups[gid] = ConsumerGroup(gid)
            return g
        if isinstance(g, ConsumerGroup):
            return g
        if create and isinstance(g, ClassicGroup) and g.is_empty():
            # an empty classic group (e.g. only committed offsets) makes way, as in Kafka
            records.extend(self.shard.classic.group_tombstones(g))
            c = self.groups[gid] = ConsumerGroup(gid)
            return c
        if create and isinstance(g, ClassicGroup) and self.classic_members.can_upgrade(g):
            # the online upgrade: a consumer-protocol member joins a live classic group
            return self.classic_members.upgrade(g, records, now)
        raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")

    def _heartbeat(self, req: HeartbeatRequest, records: list, now: int) -> HeartbeatResponse:
        gid = req.group_id
        create = req.member_epoch == 0
        group = self._get_or_create(gid, create, records, now)
        part = self._partition(gid)
        if (len(group.members) >= self.config.consumer_max_size
                and (not req.member_id or req.member_id not in group.members)):
            raise GroupError(E.GROUP_MAX_SIZE_REACHED,
                             "The consumer group has reached its maximum capacity of "
                             f"{self.config.consumer_max_size} members.")
        member_id = req.member_id or self._new_member_id()
        member = self._find_member(group, member_id, req, create, records, part)

        updated = replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=(req.server_assignor if req.server_assignor is not None
                             else member.server_assignor),
            subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names)))
                                    if req.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=(req.subscribed_topic_regex if req.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=req.client_id, client_host=req.client_host, classic_metadata=None)

        # 5. subscription
        names_changed = set(updated.subscribed_topic_names) != set(member.subscribed_topic_names)
        regex_changed, regex_resolved = self._update_regexes(group, member, updated, records,
                                                             part, now)
        is_new = member_id not in group.members
        if is_new or _metadata_differs(member, updated):
            self._apply(records, crec.member_metadata_record(part, gid, updated))
        refreshed = self._maybe_refresh_regexes(group, records, part, now)
        bump = names_changed or regex_resolved or refreshed
        new_hash = self.topics.metadata_hash(group.subscribed_topic_names())
        # Kafka 4.3.1 (observed, and relied on by clients replaying epochs): a member that
        # joins as a new member bumps the group epoch once more than a subscription change
        # alone — a new member with an empty subscription is at epoch 1, one subscribing
        # to topics at epoch 2
        step = (1 if is_new else 0) + (1 if bump or new_hash != group.metadata_hash else 0)
        if step:
            self._apply(records, crec.group_epoch_record(part, gid, group.group_epoch + step, new_hash))
            self.counters["consumer_rebalances"] += 1    # Kafka's ConsumerGroupRebalances

        # 6. target assignment
        self._maybe_update_target(group, records, part, now)

        # 7. reconciliation
        m = group.members[member_id]
        subscription_changed = names_changed or regex_changed
        if subscription_changed or not m.is_reconciled_to(group.assignment_epoch):
            new_m = reconcile(m, target_epoch=group.assignment_epoch,
                              target=group.target.get(member_id, {}),
                              owner_epoch=group.owner_epoch,
                              subscribed=self.topics.ids_of(group.member_subscribed_names(m)),
                              subscription_changed=subscription_changed, owned=req.owned)
            if not members_equal(new_m, m):
                self._apply(records, crec.current_assignment_record(part, gid, new_m))
                self._arm_rebalance(gid, new_m)
        final = group.members[member_id]

        # 8. session
        self._schedule_session(gid, member_id)
        resp = HeartbeatResponse(member_id=member_id, member_epoch=final.member_epoch,
                                 heartbeat_interval_ms=self.heartbeat_interval_ms(gid))
        full = (req.rebalance_timeout_ms != -1 and (req.subscribed_topic_names is not None
                or req.subscribed_topic_regex is not None) and req.owned is not None)
        if req.member_epoch == 0 or full or final.assigned_partitions() != member.assigned_partitions():
            resp.assignment = {t: sorted(ps) for t, ps in final.assigned_partitions().items()}
        return resp

    def _find_member(self, group: ConsumerGroup, member_id: str, req: HeartbeatRequest,
                     create: bool, records: list, part: int) -> ConsumerGroupMember:
        if req.instance_id is None:
            m = group.members.get(member_id)
            if m is None:
                if not create:
                    raise GroupError(E.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {group.group_id}.")
                return ConsumerGroupMember(member_id)
            check_member_epoch(m, req.member_epoch, req.owned)
            return m
        existing = group.static_member(req.instance_id)
        if create:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and not uses_classic(existing):
                raise self._unreleased_instance(member_id, req.instance_id, existing)
            # the rejoining instance takes over the old member's assignment under its new id
            return self._replace_static(group, existing, member_id, records, part)
        if existing is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise self._fenced_instance(member_id, req.instance_id, existing)
        check_member_epoch(existing, req.member_epoch, req.owned)
        return existing

    # ----------------------------------------------------------------- regular expressions
    def _regex_users(self, group: ConsumerGroup, regex: str, except_member: str) -> int:
        return sum(1 for m in group.members.values()
                   if m.subscribed_topic_regex == regex and m.member_id != except_member)

    def _update_regexes(self, group, member, updated, records, part, now) -> tuple[bool, bool]:
        """(regex changed, regex change resolved → epoch bump)."""
        old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
        if old == new:
            return False, False
        gid = group.group_id
        resolved = False
        if old and self._regex_users(group, old, member.member_id) == 0 \
                and old in group.resolved_regexes:
            self._apply(records, crec.regex_tombstone(part, gid, old))
        if new:
            compile_regex(new)                     # INVALID_REGULAR_EXPRESSION
            if new not in group.resolved_regexes:
                topics = resolve(new, self.topics.names())
                self._apply(records, crec.regex_record(part, gid, new, topics,
                                                       self.topics.version, now))
            resolved = True
        elif old:
            resolved = True
        return True, resolved

    def _maybe_refresh_regexes(self, group: ConsumerGroup, records, part, now) -> bool:
        """Re-resolve regexes once the topics changed (at most every 10 s, as Kafka)."""
        changed = False
        for regex, r in list(group.resolved_regexes.items()):
            if r.version == self.topics.version or now - r.timestamp_ms < REGEX_MIN_REFRESH_INTERVAL_MS:
                continue
            topics = resolve(regex, self.topics.names())
            self._apply(records, crec.regex_record(part, group.group_id, regex, topics,
                                                   self.topics.version, now))
            changed = changed or topics != r.topics
        return changed

    # ----------------------------------------------------------------- target assignment
    def assignment_interval_ms(self, gid: str) -> int:
        v = self.group_configs(gid).get("consumer.assignment.interval.ms")
        return int(v) if v is not None else self.config.consumer_assignment_interval_ms

    def _maybe_update_target(self, group: ConsumerGroup, records, part, now, *,
                             force: bool = False) -> None:
        if group.group_epoch <= group.assignment_epoch:
            return
        # Kafka 4.3 batches assignments: a new target at most every
        # ``group.consumer.assignment.interval.ms``; until then members reconcile towards
        # the previous one and a later heartbeat computes it (0 = at every epoch bump)
        interval = self.assignment_interval_ms(group.group_id)
        if (not force and group.assignment_timestamp_ms and interval
                and now < group.assignment_timestamp_ms + interval):
            # (a classic member's join computes it at once: its client cannot wait on a
            # later heartbeat for its assignment and would rejoin in a loop)
            return
        gid = group.group_id
        assignor = group.preferred_assignor(list(self.config.consumer_assignors))
        members = []
        partitions, names = {}, {}
        for m in group.members.values():
            ids = frozenset(self.topics.ids_of(group.member_subscribed_names(m)))
            for t in ids:
                partitions[t] = self.topics.num_partitions(t)
                names[t] = self.topics.name_of(t) or ""
            members.append(MemberSpec(m.member_id, m.instance_id, ids,
                                      group.target.get(m.member_id, {})))
        try:
            new = assign(assignor, GroupSpec(tuple(members), partitions, names))
        except AssignorError as exc:
            raise GroupError(E.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment: {exc}")
        for m in group.members.values():
            target = {t: ps for t, ps in new.get(m.member_id, {}).items() if ps}
            old = {t: ps for t, ps in group.target.get(m.member_id, {}).items() if ps}
            if target != old or m.member_id not in group.target:
                self._apply(records, crec.target_assignment_member_record(part, gid, m.member_id, target))
        self._apply(records, crec.target_assignment_metadata_record(part, gid, group.group_epoch, now))

    # ----------------------------------------------------------------- leaving and fencing
    def _missing_group(self, gid: str) -> GroupError:
        if gid in self.groups:
            return GroupError(E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
        return GroupError(E.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found.")

    def _static_left(self, m: ConsumerGroupMember) -> ConsumerGroupMember:
        return m.with_epochs_reset()

    def _fence(self, group: ConsumerGroup, members, records: list, now: int = 0) -> None:
        """Remove members and bump the group epoch (``consumerGroupFenceMembers``); the
        last consumer-protocol member leaving classic members behind downgrades the group."""
        if not members:
            return
        gid = group.group_id
        part = self._partition(gid)
        if len(members) == 1 and self.classic_members.maybe_downgrade(group, members[0], records, now):
            self._cancel_member_timers(gid, members[0].member_id)
            return
        regexes = {m.subscribed_topic_regex for m in members if m.subscribed_topic_regex}
        for m in members:
            self._remove_member_records(group, m.member_id, records, part)
        for regex in regexes:
            if regex in group.resolved_regexes and self._regex_users(group, regex, "") == 0:
                self._apply(records, crec.regex_tombstone(part, gid, regex))
        new_hash = self.topics.metadata_hash(group.subscribed_topic_names())
        self._apply(records, crec.group_epoch_record(part, gid, group.group_epoch + 1, new_hash))
        self._target_of_emptied_group(group, records, part)

    # ----------------------------------------------------------------- replay
    def _replaced_at_replay(self, g: ClassicGroup) -> None:
        g.state = g.state.__class__.DEAD       # the empty classic group made way: it is dead

    def _replay_member_metadata(self, g: ConsumerGroup, old: ConsumerGroupMember, value) -> None:
        g.put_member(replace(
            old, instance_id=value.instance_id, rack_id=value.rack_id,
            client_id=value.client_id, client_host=value.client_host,
            subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
            classic_metadata=value.classic_member_metadata))

    def _replay_target(self, value) -> dict:
        return {tp.topic_id: frozenset(tp.partitions)
                for tp in value.topic_partitions if tp.partitions}

    def _replay_current_assignment(self, g: ConsumerGroup, old: ConsumerGroupMember, value) -> None:
        g.put_member(replace(
            old, member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=MemberState.of(value.state),
            assigned=crec.assignment_from(value.assigned_partitions, value.member_epoch),
            pending_revocation=crec.assignment_from(value.partitions_pending_revocation,
                                                    value.member_epoch)))

    def _replay_other(self, g: ConsumerGroup, k: crec.ConsumerKey, value, tombstone: bool) -> None:
        if k.record_type == crec.PARTITION_METADATA:
            return                             # superseded by the metadata hash (Kafka 4.1+)
        if k.record_type == crec.REGULAR_EXPRESSION:
            if tombstone:
                g.resolved_regexes.pop(k.sub, None)
            else:
                g.resolved_regexes[k.sub] = ResolvedRegex(frozenset(value.topics), value.version,
                                                          value.timestamp)

    # ----------------------------------------------------------------- lifecycle hooks
    def _loaded_session_timeout(self, m: ConsumerGroupMember) -> int | None:
        return classic_session_timeout_ms(m) if uses_classic(m) else None

    def group_tombstones(self, g: ConsumerGroup) -> list:
        part, gid = self._partition(g.group_id), g.group_id
        out = []
        for mid in list(g.members):
            out += [crec.current_assignment_tombstone(part, gid, mid),
                    crec.target_assignment_member_tombstone(part, gid, mid),
                    crec.member_metadata_tombstone(part, gid, mid)]
        out += [crec.regex_tombstone(part, gid, r) for r in g.resolved_regexes]
        out += [crec.target_assignment_metadata_tombstone(part, gid),
                crec.partition_metadata_tombstone(part, gid),
                crec.group_epoch_tombstone(part, gid)]
        return out

    # ----------------------------------------------------------------- describe
    def describe(self, g: ConsumerGroup) -> DescribedGroup:
        """DescribeGroups (the classic API) on a consumer group: Kafka answers Dead with
        no error before v6, GROUP_ID_NOT_FOUND from v6 (also with classic members)."""
        return DescribedGroup(g.group_id, E.NONE, "Dead", "", "", [],
                              not_found=f"Group {g.group_id} is not a classic group.")

    def consumer_describe(self, gid: str) -> DescribedConsumerGroup:
        g, refused = self._describe_lookup(gid, DescribedConsumerGroup)
        if refused is not None:
            return refused

        def tps(assignment):
            out = []
            for t, ps in sorted(assignment.items(), key=lambda kv: self.topics.name_of(kv[0]) or ""):
                name = self.topics.name_of(t)
                if name is not None and ps:
                    out.append((t, name, sorted(ps)))
            return out
        members = [DescribedConsumerMember(
            m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
            sorted(m.subscribed_topic_names), m.subscribed_topic_regex,
            tps(m.assigned), tps(g.target.get(m.member_id, {})),
            member_type=0 if uses_classic(m) else 1)
            for m in g.members.values()]
        return DescribedConsumerGroup(
            gid, E.NONE, None, g.state_name(), g.group_epoch, g.assignment_epoch,
            g.preferred_assignor(list(self.config.consumer_assignors)), members)

    # ----------------------------------------------------------------- offsets (per type)
    def validate_offset_commit(self, g: ConsumerGroup, mid: str, instance: str | None,
                               epoch: int, now: int, api_version: int):
        """0, an error code, or a per-partition check ``(topic, partition) -> error``
        (Kafka 4.3's ``ConsumerGroup.validateOffsetCommit`` with KIP-1251)."""
        if epoch < 0 and not g.members:
            return E.NONE
        m = g.members.get(mid)
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if uses_classic(m):
            # a classic member commits with its generation (= its member epoch), any version
            return E.NONE if epoch == m.member_epoch else E.ILLEGAL_GENERATION
        if api_version < 9:
            return E.UNSUPPORTED_VERSION
        if epoch == m.member_epoch:
            return E.NONE
        if epoch > m.member_epoch:
            return E.STALE_MEMBER_EPOCH

        def per_partition(topic: str, partition: int) -> int:
            tid = self.topics.id_of(topic)
            ae = None if tid is None else m.assignment_epoch(tid, partition)
            if ae is None or epoch < ae:
                return E.STALE_MEMBER_EPOCH
            return E.NONE
        return per_partition



def _metadata_differs(a: ConsumerGroupMember, b: ConsumerGroupMember) -> bool:
    return (a.instance_id, a.rack_id, a.client_id, a.client_host, a.subscribed_topic_names,
            a.subscribed_topic_regex, a.rebalance_timeout_ms, a.server_assignor,
            a.classic_metadata) != (b.instance_id, b.rack_id, b.client_id, b.client_host,
                                    b.subscribed_topic_names, b.subscribed_topic_regex,
                                    b.rebalance_timeout_ms, b.server_assignor, b.classic_metadata)
