"""The streams group protocol (KIP-1071): StreamsGroupHeartbeat and StreamsGroupDescribe as
pure rules over :class:`~kbroker.group.streams.state.StreamsGroup`, one part of the
coordinator shard (Kafka 4.3's ``GroupMetadataManager.streamsGroup*``).

A heartbeat, in order:

1. request checks (INVALID_REQUEST; STREAMS_INVALID_TOPOLOGY for a malformed topology);
2. epoch -1 / -2: the member leaves, its tasks are reassigned (a new group epoch);
3. the group is found or (epoch 0) created — an empty classic group of the same id makes way;
   ``group.streams.max.size`` → GROUP_MAX_SIZE_REACHED;
4. the member is found or created (static members below); fencing by member epoch
   (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID);
5. the **topology**: the first one becomes the group's (``StreamsGroupTopology``) and bumps the
   group epoch; another topology is refused while the group has other members (INVALID_REQUEST
   "Topology updates are not supported yet.", as Kafka 4.3) and replaces the group's when the
   group is empty; a member on an older topology epoch is told ``STALE_TOPOLOGY``;
6. the topology is **configured** against the topics (:mod:`.topology`): missing source
   topics and internal topics being created are reported in ``Status`` (the API module creates
   the missing internal topics, as Kafka's broker does) and leave the group ``NotReady`` with
   no tasks; a change of the topics' metadata (hash), of the member's process/rack/tags, of
   the membership or of ``num.standby.replicas`` bumps the **group epoch**;
7. a group epoch above the assignment epoch computes a new **target assignment** with the
   group's task assignor (:mod:`.assignor`; KIP-1357's ``group.streams.assignors`` and GROUP
   ``streams.assignor.name``), at most once per assignment interval;
8. the member **reconciles** towards its target (revocation before assignment) — with
   warm-up tasks on, towards the target's refinement (:mod:`.warmup`), and a Stable group
   whose refinement moved on (a warm-up task caught up) gets a new group epoch first;
9. the session timer is (re)armed; a member asked to revoke tasks gets a rebalance timer.

Every change is a ``__consumer_offsets`` record (:mod:`.records`) replayed into the group at
once and appended before the response is released; a failed append restores the group as it
was before the request. ``PartitionsByUserEndpoint`` (interactive queries) is sent when the
member's ``EndpointInformationEpoch`` is behind the group's, which moves whenever a member's
tasks change or a member comes or goes.

A member joining an empty group starts its **rebalance delay**
(``group.streams.initial.rebalance.delay.ms``, GROUP ``streams.initial.rebalance.delay.ms``,
Kafka 4.3): until it ends, the members get an empty target assignment at the epoch below the group's
and the status ``ASSIGNMENT_DELAYED``, so instances started together are assigned at once; a
new group's epoch goes from 0 to 2 as in Kafka.

Target assignments are batched as in Kafka 4.3 (``group.streams.assignment.interval.ms``,
default 1000; GROUP ``streams.assignment.interval.ms``): within the interval after the last
one, members keep reconciling towards the previous target and a later heartbeat computes the
new one.

Clocks, as Kafka's: the session, rebalance and initial-rebalance-delay timers are delays on
the shard's monotonic clock; the assignment interval is measured on the wall clock from the
timestamp the target assignment metadata record carries.

Static members (``InstanceId``, Kafka 4.4): a join with an instance id a live member holds is
refused (UNRELEASED_INSTANCE_ID) — also under that member's own id, as KIP-848's consumer
groups do; a heartbeat of a replaced member id is fenced (FENCED_INSTANCE_ID); a leave with
epoch -2 keeps the member and its tasks at epoch -2 until it rejoins — under any member id,
taking over its tasks without a new group epoch — or its session times out. A dynamic member
joining again (epoch 0) under its member id keeps its tasks, as in Kafka.

Task offsets (StreamsGroupHeartbeat v1): a member's reported restore progress is checked
(a task twice is INVALID_REQUEST), kept in memory, shown by StreamsGroupDescribe and used by
the sticky assignor to place standby tasks where their state is; reported tasks must exist in
the configured topology (INVALID_REQUEST). Warm-up tasks are handed out only with
``kbroker.streams.warmup.tasks.enable`` (Kafka 4.4.0 gives none; :mod:`.warmup`).

Rack-aware assignment tags (``group.streams.rack.aware.assignment.tags``, GROUP
``streams.rack.aware.assignment.tags``, Kafka 4.4) are part of the assignment configs (a
change starts a rebalance) and a v1 member lacking one of them hears MISSING_CLIENT_TAGS; as
Kafka 4.4's sticky assignor, kbroker's places standby tasks without them.

Not implemented: source topic regular expressions (INVALID_REQUEST, as Kafka 4.4).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
import logging
from typing import Callable

from kbroker.wire.error_codes import ErrorCode as E

from ..classic.state import ClassicGroup
from ..epoch_protocol import DescribedEpochGroup, EpochGroupProtocol, check_not_empty
from ..epoch_state import GroupError
from . import records as srec
from .assignor import ASSIGNORS, AssignorMember
from .config import StreamsGroupConfig
from .state import (EMPTY, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                    MemberState, StreamsGroup, StreamsGroupMember, TaskSet, check_member_epoch,
                    norm, pairs_of, reconcile, tasks_of)
from .warmup import EMPTY_OFFSETS, offsets_of, refine, stateful_subtopologies
from .topology import (ASSIGNMENT_DELAYED, MISSING_CLIENT_TAGS, SHUTDOWN_APPLICATION,
                       STALE_TOPOLOGY, ConfiguredTopology, TopicInfo, Topology, configure,
                       task_topics, validate, with_partitions)


log = logging.getLogger(__name__)


@dataclass
class StreamsHeartbeatRequest:
    """A StreamsGroupHeartbeat as the coordinator reads it (null fields: unchanged)."""
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active: dict | None = None
    standby: dict | None = None
    warmup: dict | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: list[tuple[str, str]] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""
    task_offsets: list | None = None         # [(subtopology, partition, offset)], v1
    task_end_offsets: list | None = None
    api_version: int = 1


@dataclass
class StreamsHeartbeatResponse:
    """What StreamsGroupHeartbeat answers: the error or the member's epoch, status and tasks."""
    error: int = 0
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    acceptable_recovery_lag: int = -1       # what error answers carry (Kafka 4.4)
    task_offset_interval_ms: int = 0
    status: list[tuple[int, str]] | None = None
    tasks: TaskSet | None = None
    endpoint_information_epoch: int = 0
    # [((host, port), [(topic, [partitions])] active, [...] standby)]
    partitions_by_endpoint: list | None = None
    internal_topics_to_create: list[TopicInfo] = field(default_factory=list)


@dataclass
class DescribedStreamsGroup(DescribedEpochGroup):
    """A streams group as StreamsGroupDescribe answers it: topology, members and their targets."""
    topology: Topology | None = None
    members: list = field(default_factory=list)       # [(StreamsGroupMember, TaskSet target)]
    assignor_name: str | None = None                  # the next assignment's (KIP-1357)
    task_offsets: dict = field(default_factory=dict)  # member id -> warmup.TaskOffsets


class StreamsGroupProtocol(EpochGroupProtocol):
    """The streams protocol's decisions; the groups live in the shard's table.

    Timers: ``("streams-session", group, member)``, ``("streams-rebalance", group, member)``
    and ``("streams-initial-rebalance", group)`` (the rebalance delay of an empty group)."""

    group_class = StreamsGroup
    member_class = StreamsGroupMember
    member_states = MemberState
    revoking_state = MemberState.UNREVOKED_TASKS
    response_class = StreamsHeartbeatResponse
    rec = srec
    group_type = "streams"
    timer_prefix = "streams-"

    @staticmethod
    def _empty_assignment() -> TaskSet:
        return EMPTY

    def __init__(self, shard, config: StreamsGroupConfig | None = None) -> None:
        super().__init__(shard)
        self.streams_config = config or StreamsGroupConfig()
        self.group_configs: Callable[[str], dict] = lambda gid: {}

    @property
    def topics(self):
        return self.shard.consumer.topics            # the driver's view of the image

    def cfg(self, gid: str) -> StreamsGroupConfig:
        return self.streams_config.for_group(self.group_configs(gid))

    def session_timeout_ms(self, gid: str) -> int:
        return self.cfg(gid).session_timeout_ms

    def heartbeat_interval_ms(self, gid: str) -> int:
        return self.cfg(gid).heartbeat_interval_ms

    # ----------------------------------------------------------------- request checks
    def _validate(self, r: StreamsHeartbeatRequest) -> None:
        """Kafka 4.4's request checks, in its order (``GroupCoordinatorService``): an
        unsupported feature first, then the fields, then the topology's shape."""
        if r.topology is not None and any(s.source_topic_regex for s in r.topology.subtopologies):
            raise GroupError(E.INVALID_REQUEST,
                             "Regular expressions for source topics are not supported yet.")
        if r.member_id is None or r.member_id == "":
            raise GroupError(E.INVALID_REQUEST, "MemberId can't be empty.")
        check_not_empty(r.group_id, "GroupId")
        check_not_empty(r.instance_id, "InstanceId")
        check_not_empty(r.rack_id, "RackId")
        owned = (("ActiveTasks", r.active), ("StandbyTasks", r.standby), ("WarmupTasks", r.warmup))
        if r.member_epoch == 0:
            if r.rebalance_timeout_ms == -1:
                raise GroupError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            for what, v in owned:
                if v is not None and norm(v):
                    raise GroupError(E.INVALID_REQUEST, f"{what} must be empty when (re-)joining.")
            if r.topology is None:
                raise GroupError(E.INVALID_REQUEST, "Topology must be non-null when (re-)joining.")
            for s in r.topology.subtopologies:
                for t in s.state_changelog_topics:
                    if t.partitions != 0:
                        raise GroupError(E.STREAMS_INVALID_TOPOLOGY, f"Changelog topic {t.name} "
                                         "must have an undefined partition count, but it is set "
                                         f"to {t.partitions}.")
        elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if r.instance_id is None:
                raise GroupError(E.INVALID_REQUEST, "InstanceId can't be null.")
        elif r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(E.INVALID_REQUEST, f"MemberEpoch is {r.member_epoch}, but must be "
                             "greater than or equal to -2.")
        if any(v is not None for _, v in owned) and any(v is None for _, v in owned):
            raise GroupError(E.INVALID_REQUEST, "If one task-type is non-null, all must be non-null.")
        if r.member_epoch != 0 and r.topology is not None:
            raise GroupError(E.INVALID_REQUEST, "Topology can only be provided when (re-)joining.")
        if r.topology is not None:
            why = validate(r.topology)
            if why:
                raise GroupError(E.STREAMS_INVALID_TOPOLOGY, why)

    # ----------------------------------------------------------------- StreamsGroupHeartbeat
    def _get_or_create(self, gid: str, create: bool, records: list) -> StreamsGroup:
        g = self.groups.get(gid)
        if isinstance(g, StreamsGroup):
            return g
        if g is None or (isinstance(g, ClassicGroup) and g.is_empty()):
            if not create:
                raise GroupError(E.GROUP_ID_NOT_FOUND, f"Streams group {gid} not found.")
            if g is not None:
                records.extend(self.shard.classic.group_tombstones(g))
            g = self.groups[gid] = StreamsGroup(gid)
            return g
        raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a streams group.")

    def _heartbeat(self, r: StreamsHeartbeatRequest, records: list, now: int) -> StreamsHeartbeatResponse:
        gid = r.group_id
        cfg = self.cfg(gid)
        group = self._get_or_create(gid, r.member_epoch == 0, records)
        part = self.partition_for(gid)
        joining = r.member_epoch == 0
        if joining and group.static_member(r.instance_id) is None \
                and len(group.members) >= cfg.max_size and r.member_id not in group.members:
            raise GroupError(E.GROUP_MAX_SIZE_REACHED,
                             f"The streams group has reached its maximum capacity of {cfg.max_size} members.")
        was_empty = not group.members
        member, is_new = self._find_member(group, r, records, part)
        bump = is_new
        status: list[tuple[int, str]] = []

        # 5. topology
        topology_epoch = member.topology_epoch
        if r.topology is not None:
            topology_epoch = r.topology.epoch
            others = any(mid != r.member_id for mid in group.members)
            if group.topology is None or (r.topology != group.topology and not others):
                self._apply(records, srec.topology_record(part, gid, r.topology))
                bump = True
            elif r.topology != group.topology:
                # Kafka 4.3 refuses a changed topology while the group has members
                raise GroupError(E.INVALID_REQUEST, "Topology updates are not supported yet.")
        if group.topology is not None and topology_epoch < group.topology.epoch:
            status.append((STALE_TOPOLOGY, f"The member's topology epoch {topology_epoch} is "
                           f"behind the group's topology epoch {group.topology.epoch}."))

        updated = replace(
            member,
            instance_id=r.instance_id if r.instance_id is not None else member.instance_id,
            rack_id=r.rack_id if r.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(r.rebalance_timeout_ms if r.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            topology_epoch=topology_epoch,
            process_id=r.process_id if r.process_id is not None else member.process_id,
            user_endpoint=r.user_endpoint if r.user_endpoint is not None else member.user_endpoint,
            client_tags=(tuple(sorted(r.client_tags)) if r.client_tags is not None
                         else member.client_tags),
            client_id=r.client_id, client_host=r.client_host)
        if is_new or updated.metadata() != member.metadata():
            self._apply(records, srec.member_metadata_record(part, gid, updated))
            # Kafka 4.4 (hasStreamsMemberMetadataChanged): any change of a dynamic member's
            # metadata rebalances; a static member's only when what assignors read changed
            if r.instance_id is None or (updated.topology_epoch, updated.rack_id,
                                         updated.client_tags, updated.process_id) != (
                    member.topology_epoch, member.rack_id, member.client_tags, member.process_id):
                bump = True

        # 6. configured topology, metadata hash, assignment configs
        configured = self._configure(group)
        if configured.ready:
            for owned_tasks in (r.active, r.standby, r.warmup):
                _check_tasks(configured.tasks, owned_tasks)
        offs, ends = offsets_of(r.task_offsets), offsets_of(r.task_end_offsets)
        if offs is not None or ends is not None:
            group.task_offsets[r.member_id] = group.task_offsets.get(
                r.member_id, EMPTY_OFFSETS).update(offs, ends)
        group.reports_progress[r.member_id] = r.api_version >= 1
        new_hash = self.topics.metadata_hash(group.topology.topic_names()) if group.topology else 0
        configs = cfg.assignment_configs()
        validated = group.topology.epoch if (group.topology and configured.ready) else group.validated_topology_epoch
        if bump or new_hash != group.metadata_hash or configs != group.last_assignment_configs \
                or validated != group.validated_topology_epoch:
            epoch = group.group_epoch
            if bump or new_hash != group.metadata_hash or configs != group.last_assignment_configs:
                # Kafka 4.3: a new group goes from epoch 0 to 2 (epoch 1 is the empty
                # assignment its first members hold during the initial rebalance delay)
                epoch += 2 if epoch == 0 else 1
                self.counters["streams_rebalances"] += 1     # Kafka's StreamsGroupRebalances
                if was_empty and cfg.initial_rebalance_delay_ms > 0:
                    self._schedule_initial_delay(gid, cfg.initial_rebalance_delay_ms)
            self._apply(records, srec.group_metadata_record(part, gid, epoch, new_hash, validated,
                                                            configs))

        # 6b. a Stable group whose refined assignment moved on for this member (a warm-up
        # task caught up): a new group epoch, the same target (Kafka 4.4's REFINED update)
        if group.group_epoch == group.assignment_epoch and group.state_name() == "Stable" \
                and self._refining(cfg):
            fresh = self._refine(group, cfg)
            if fresh.get(r.member_id, EMPTY).normalized() != member_now(group, r.member_id):
                epoch = group.group_epoch + 1
                self._apply(records, srec.group_metadata_record(
                    part, gid, epoch, group.metadata_hash, group.validated_topology_epoch,
                    group.last_assignment_configs))
                self._apply(records, srec.target_assignment_metadata_record(
                    part, gid, epoch, group.assignment_timestamp_ms))
                group.refined = (epoch, fresh)

        # 7. target assignment (not while the group's initial rebalance delay runs: its
        # first members get an empty assignment at the epoch below the group's)
        delayed = ("streams-initial-rebalance", gid) in self.timers
        if group.group_epoch > group.assignment_epoch:
            batched = (group.assignment_timestamp_ms and cfg.assignment_interval_ms
                       and now < group.assignment_timestamp_ms + cfg.assignment_interval_ms)
            if not delayed and not batched:
                self._compute_target(group, configured, cfg, records, part, now)
            elif group.assignment_epoch < group.group_epoch - 1:
                self._compute_target(group, ConfiguredTopology(), cfg, records, part, now,
                                     epoch=group.group_epoch - 1)
        if delayed and group.group_epoch > group.assignment_epoch:
            status.append((ASSIGNMENT_DELAYED,
                           "Assignment delayed due to the configured initial rebalance delay."))
        elif group.group_epoch > group.assignment_epoch:
            # Kafka 4.4 tells a member its assignment waits for the batching interval
            status.append((ASSIGNMENT_DELAYED,
                           "Assignment delayed due to the configured assignment interval."))
        status.extend(configured.status)

        # 8. reconcile
        m = group.members[r.member_id]
        owned = None if r.active is None else TaskSet(norm(r.active), norm(r.standby), norm(r.warmup))
        rec = reconcile(m, target_epoch=group.assignment_epoch,
                        target=self._refined(group, cfg).get(m.member_id, EMPTY),
                        active_owner=group.active_owner, owned=owned)
        if rec != m or is_new:
            self._apply(records, srec.current_assignment_record(part, gid, rec))
            self._arm_rebalance(gid, rec)
        m = group.members[r.member_id]

        # 9. session, shutdown, response
        self._schedule_session(gid, m.member_id)
        if r.shutdown_application:
            group.shutdown_requested = True
        if group.shutdown_requested:
            status.append((SHUTDOWN_APPLICATION, "A KafkaStreams instance encountered a fatal "
                           "error and requested a shutdown for the entire application."))
        missing_tags = [t for t in cfg.rack_aware_assignment_tags
                        if t not in {k for k, _ in m.client_tags}]
        if r.api_version >= 1 and missing_tags:
            status.append((MISSING_CLIENT_TAGS, "Missing required client tags for rack-aware "
                           f"standby assignment: [{', '.join(missing_tags)}]. Configure them "
                           "via 'client.tag.<tagKey>' in your Streams config."))
        send_tasks = is_new or r.active is not None or m.assigned.normalized() != member.assigned.normalized()
        resp = StreamsHeartbeatResponse(
            member_id=m.member_id, member_epoch=m.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(gid),
            # Kafka 4.4 answers its settings (v0's int32 AcceptableRecoveryLagLegacy stays 0)
            acceptable_recovery_lag=cfg.acceptable_recovery_lag,
            task_offset_interval_ms=cfg.task_offset_interval_ms,
            status=status, tasks=m.assigned.normalized() if send_tasks else None,
            endpoint_information_epoch=group.endpoint_epoch,
            internal_topics_to_create=list(configured.to_create))
        if r.endpoint_information_epoch < group.endpoint_epoch:
            resp.partitions_by_endpoint = self._partitions_by_endpoint(group)
        return resp

    # ----------------------------------------------------------------- warm-up tasks
    @staticmethod
    def _refining(cfg: StreamsGroupConfig) -> bool:
        return cfg.warmup_tasks_enabled and cfg.num_warmup_replicas > 0

    def _refine(self, group: StreamsGroup, cfg: StreamsGroupConfig) -> dict:
        """The refined assignment of the group now (:func:`.warmup.refine`); members that
        do not report their restore progress (StreamsGroupHeartbeat v0) get no warm-up task
        and have their tasks at once."""
        reporting = {mid: m for mid, m in group.members.items()
                     if group.reports_progress.get(mid, True)}
        out = refine(group.target, reporting, group.task_offsets,
                     stateful_subtopologies(group.topology) if group.is_ready() else frozenset(),
                     cfg.num_warmup_replicas, cfg.acceptable_recovery_lag)
        for mid in set(group.target) - set(reporting):
            out[mid] = group.target[mid].normalized()
        return out

    def _refined(self, group: StreamsGroup, cfg: StreamsGroupConfig) -> dict:
        """What members reconcile towards: the target, or with warm-up tasks its refinement,
        derived once per assignment epoch."""
        if not self._refining(cfg):
            return group.target
        if group.refined is None or group.refined[0] != group.assignment_epoch:
            group.refined = (group.assignment_epoch, self._refine(group, cfg))
        return group.refined[1]

    def _schedule_initial_delay(self, gid: str, delay_ms: int) -> None:
        key = ("streams-initial-rebalance", gid)
        if key in self.timers:
            return

        def fire(now: int) -> None:
            group = self._get(gid)
            if group is None or group.group_epoch <= group.assignment_epoch:
                return
            before = self._snapshot(gid)
            records: list = []
            self._compute_target(group, self._configure(group), self.cfg(gid), records,
                                 self.partition_for(gid), now)
            self._emit_with_revert(gid, before, records, respond=False)
        self.timers.schedule(key, delay_ms, fire)

    def _configure(self, group: StreamsGroup) -> ConfiguredTopology:
        if group.topology is None:
            group.ready = False
            return ConfiguredTopology()
        c = configure(group.topology, self.topics)
        group.ready = c.ready
        return c

    def _compute_target(self, group: StreamsGroup, configured: ConfiguredTopology,
                        cfg: StreamsGroupConfig, records: list, part: int, now: int,
                        epoch: int | None = None) -> None:
        """A new target assignment at ``epoch`` (default: the group epoch); an unready
        topology (or the empty one of a rebalance delay) assigns no task."""
        gid = group.group_id
        tasks = configured.tasks if configured.ready else {}
        members = [AssignorMember(m.member_id, m.process_id,
                                  frozenset(pairs_of(m.assigned.active) | pairs_of(m.pending_revocation.active)),
                                  frozenset(pairs_of(m.assigned.standby) | pairs_of(m.assigned.warmup)),
                                  tuple(sorted(group.task_offsets.get(
                                      m.member_id, EMPTY_OFFSETS).offsets.items())))
                   for m in group.members.values()]
        name = cfg.assignor()
        if cfg.assignor_name is not None and cfg.assignor_name != name:
            log.warning("[GroupId %s] The configured task assignor '%s' is not available; "
                        "falling back to the default assignor '%s'.", gid, cfg.assignor_name, name)
        new = ASSIGNORS[name](tasks, members, cfg.num_standby_replicas,
                              stateful_subtopologies(group.topology))
        for mid, t in new.items():
            target = TaskSet(tasks_of(t.active), tasks_of(t.standby), {})
            old = group.target.get(mid)
            if old is None or old.normalized() != target.normalized():
                self._apply(records, srec.target_assignment_member_record(part, gid, mid, target))
        self._apply(records, srec.target_assignment_metadata_record(
            part, gid, group.group_epoch if epoch is None else epoch, now))

    def _partitions_by_endpoint(self, group: StreamsGroup) -> list:
        out = []
        topo = group.topology
        for m in sorted(group.members.values(), key=lambda x: x.member_id):
            if m.user_endpoint is None or topo is None:
                continue

            def tps(tasks):
                by_topic: dict[str, set[int]] = {}
                for sid, p in pairs_of(norm(tasks)):
                    for t in task_topics(topo, sid):
                        by_topic.setdefault(t, set()).add(p)
                return [(t, sorted(ps)) for t, ps in sorted(by_topic.items())]
            # Kafka 4.4: the standby partitions include those of warm-up tasks
            replicas = {s: frozenset(norm(m.assigned.standby).get(s, frozenset())
                                     | norm(m.assigned.warmup).get(s, frozenset()))
                        for s in set(norm(m.assigned.standby)) | set(norm(m.assigned.warmup))}
            out.append((m.user_endpoint, tps(m.assigned.active), tps(replicas)))
        return out

    # ----------------------------------------------------------------- fencing
    def _fence(self, group: StreamsGroup, members, records: list, now: int = 0) -> None:
        part, gid = self.partition_for(group.group_id), group.group_id
        for m in members:
            self._remove_member_records(group, m.member_id, records, part)
        self._apply(records, srec.group_metadata_record(
            part, gid, group.group_epoch + 1, group.metadata_hash,
            group.validated_topology_epoch, group.last_assignment_configs))
        self._target_of_emptied_group(group, records, part)

    def _still_revoking(self, m: StreamsGroupMember, epoch: int) -> bool:
        return m.member_epoch == epoch and m.state is MemberState.UNREVOKED_TASKS

    # ----------------------------------------------------------------- members and static members
    def _find_member(self, group: StreamsGroup, r: StreamsHeartbeatRequest, records: list,
                     part: int) -> tuple[StreamsGroupMember, bool]:
        """The member a heartbeat speaks for, and whether it is new (Kafka 4.4's
        ``getOrMaybeCreate{Dynamic,Static}StreamsGroupMember``).

        A join (epoch 0) under a member id the group knows keeps that member and what it
        holds, as Kafka does. A static join whose instance id a live member holds is refused
        (UNRELEASED_INSTANCE_ID) unless that member left with epoch -2 — also when it is the
        same member id, as for KIP-848's consumer groups; the rejoining instance then takes
        over the old member's tasks without a new group epoch. A static heartbeat is
        UNKNOWN_MEMBER_ID for an unknown instance id and FENCED_INSTANCE_ID for a member id
        that no longer holds it."""
        joining = r.member_epoch == 0
        if r.instance_id is None:
            m = group.members.get(r.member_id)
            if m is None:
                if not joining:
                    raise GroupError(E.UNKNOWN_MEMBER_ID,
                                     f"Member {r.member_id} is not a member of group {group.group_id}.")
                return StreamsGroupMember(r.member_id), True
            check_member_epoch(m, r.member_epoch, r.active)
            return m, False
        holder = group.static_member(r.instance_id)
        if joining:
            if holder is None:
                m = group.members.get(r.member_id)
                return (StreamsGroupMember(r.member_id), True) if m is None else (m, False)
            if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise self._unreleased_instance(r.member_id, r.instance_id, holder)
            if group.refined is not None and holder.member_id in group.refined[1]:
                refined = dict(group.refined[1])        # Kafka relabels the refined tasks
                refined[r.member_id] = refined.pop(holder.member_id)
                group.refined = (group.refined[0], refined)
            return self._replace_static(group, holder, r.member_id, records, part), False
        if holder is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
        if holder.member_id != r.member_id:
            raise self._fenced_instance(r.member_id, r.instance_id, holder)
        check_member_epoch(holder, r.member_epoch, r.active)
        return holder, False

    # ----------------------------------------------------------------- replay
    def _replay_group_metadata(self, g: StreamsGroup, value) -> None:
        g.validated_topology_epoch = value.validated_topology_epoch
        g.last_assignment_configs = tuple((c.key, c.value)
                                          for c in value.last_assignment_configs or ())

    def _replay_member_gone(self, g: StreamsGroup, member_id: str) -> None:
        g.task_offsets.pop(member_id, None)
        g.reports_progress.pop(member_id, None)
        if g.remove_member(member_id) is not None:
            g.endpoint_epoch += 1

    def _replay_member_metadata(self, g: StreamsGroup, old: StreamsGroupMember, value) -> None:
        ep = value.user_endpoint
        g.put_member(replace(
            old, instance_id=value.instance_id, rack_id=value.rack_id,
            client_id=value.client_id, client_host=value.client_host,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            topology_epoch=value.topology_epoch, process_id=value.process_id,
            user_endpoint=None if ep is None else (ep.host, ep.port),
            client_tags=tuple((t.key, t.value) for t in value.client_tags or ())))
        if old.user_endpoint != g.members[old.member_id].user_endpoint:
            g.endpoint_epoch += 1

    def _replay_target(self, value) -> TaskSet:
        return srec.taskset_from(value)

    def _replay_current_assignment(self, g: StreamsGroup, old: StreamsGroupMember, value) -> None:
        new = replace(old, member_epoch=value.member_epoch,
                      previous_member_epoch=value.previous_member_epoch,
                      state=MemberState.of(value.state),
                      assigned=srec.taskset_from(value),
                      pending_revocation=srec.taskset_from(value, "_pending_revocation"))
        if new.assigned.normalized() != old.assigned.normalized():    # warm-up tasks count
            g.endpoint_epoch += 1
        g.put_member(new)

    def _replay_other(self, g: StreamsGroup, k: srec.StreamsKey, value, tombstone: bool) -> None:
        if k.record_type == srec.TOPOLOGY:
            g.topology = None if tombstone else srec.topology_from(value)

    # ----------------------------------------------------------------- lifecycle hooks
    def on_loaded(self, g: StreamsGroup, now: int) -> None:
        self._configure(g)
        super().on_loaded(g, now)

    def group_tombstones(self, g: StreamsGroup) -> list:
        part, gid = self.partition_for(g.group_id), g.group_id
        out = []
        for mid in list(g.members):
            out += [srec.tombstone(part, srec.CURRENT_MEMBER_ASSIGNMENT, gid, mid),
                    srec.tombstone(part, srec.TARGET_ASSIGNMENT_MEMBER, gid, mid),
                    srec.tombstone(part, srec.MEMBER_METADATA, gid, mid)]
        out += [srec.tombstone(part, srec.TARGET_ASSIGNMENT_METADATA, gid),
                srec.tombstone(part, srec.TOPOLOGY, gid),
                srec.tombstone(part, srec.GROUP_METADATA, gid)]
        return out

    # ----------------------------------------------------------------- describe
    def streams_describe(self, gid: str) -> DescribedStreamsGroup:
        g, refused = self._describe_lookup(gid, DescribedStreamsGroup)
        if refused is not None:
            return refused
        configured = self._configure(g)
        topology = None if g.topology is None else with_partitions(g.topology, configured.partitions)
        return DescribedStreamsGroup(
            gid, E.NONE, None, g.state_name(), g.group_epoch, g.assignment_epoch, topology,
            [(m, g.target.get(m.member_id, EMPTY)) for m in g.members.values()],
            assignor_name=self.cfg(gid).assignor(), task_offsets=dict(g.task_offsets))

    # ----------------------------------------------------------------- offsets (per type)
    def validate_offset_commit(self, g: StreamsGroup, mid: str, instance: str | None,
                               epoch: int, now: int, api_version: int):
        if epoch < 0 and not g.members:
            return E.NONE
        m = g.members.get(mid)
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if epoch != m.member_epoch:
            return E.STALE_MEMBER_EPOCH
        return E.NONE


def member_now(group: StreamsGroup, member_id: str) -> TaskSet:
    m = group.members.get(member_id)
    return EMPTY if m is None else m.assigned.normalized()


def _check_tasks(tasks: dict[str, int], owned) -> None:
    """Reported tasks must exist in the configured topology (Kafka 4.4's
    ``throwIfRequestContainsInvalidTasks``)."""
    for sid, parts in (owned or {}).items():
        if sid not in tasks:
            raise GroupError(E.INVALID_REQUEST, f"Subtopology {sid} does not exist in the topology.")
        for p in sorted(parts):
            if not 0 <= p < tasks[sid]:
                raise GroupError(E.INVALID_REQUEST, f"Task {p} for subtopology {sid} is invalid. "
                                 f"Number of tasks for this subtopology: {tasks[sid]}")
