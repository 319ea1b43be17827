"""StreamsGroupDescribe (key 89), v0–v1: streams groups (KIP-1071) with their epochs, topology
and every member's process, endpoint, client tags, current and target tasks.

v1 (Kafka 4.4, KIP-1331): ``IncludeTopologyDescription`` asks for the description a topology
description plugin stores; kbroker has no such plugin (nor has Kafka unless
``group.streams.topology.description.plugin.class`` is set), so a described group answers
status NOT_STORED (1) when asked and NOT_REQUESTED (0) otherwise, with a null description, as
Kafka 4.4 without a plugin does; ``AssignorName`` is the task assignor of the next assignment
(KIP-1357: the GROUP config ``streams.assignor.name`` if the broker's
``group.streams.assignors`` has it, else their first; null for a group answered with an error).

A group of another type (or an unknown id) answers ``GROUP_ID_NOT_FOUND``. Authorized
operations are not computed (``-2147483648``). A member's ``TaskOffsets`` and
``TaskEndOffsets`` are its last reported restore progress (KIP-1071, kept in memory by the
coordinator), by subtopology and partition.

ACLs (``kbroker.authz``): DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED).
Without ``streams`` in ``group.coordinator.rebalance.protocols``, or with the finalized
``streams.version`` at 0, every group answers UNSUPPORTED_VERSION, as Kafka 4.4 does
(``kbroker/group/streams/feature.py``).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_names
from kbroker.authz.acls import DESCRIBE, GROUP
from kbroker.group.service import coordinator_of
from kbroker.group.streams.feature import streams_protocol_enabled
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.StreamsGroupDescribeResponse
G = Response.DescribedGroup


def _task_ids(tasks):
    return [Response.TaskIds(subtopology_id=s, partitions=sorted(ps))
            for s, ps in sorted(tasks.items()) if ps]


def _assignment(ts):
    n = ts.normalized()
    return Response.Assignment(active_tasks=_task_ids(n.active), standby_tasks=_task_ids(n.standby),
                               warmup_tasks=_task_ids(n.warmup))


def _info(t):
    return Response.TopicInfo(name=t.name, partitions=t.partitions,
                              replication_factor=t.replication_factor,
                              topic_configs=[Response.KeyValue(key=k, value=v) for k, v in t.configs])


def _topology(t):
    if t is None:
        return None
    return G.Topology(epoch=t.epoch, subtopologies=[
        G.Topology.Subtopology(
            subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
            repartition_sink_topics=list(s.repartition_sink_topics),
            state_changelog_topics=[_info(x) for x in s.state_changelog_topics],
            repartition_source_topics=[_info(x) for x in s.repartition_source_topics])
        for s in t.subtopologies])


def _offsets(offsets):
    return [Response.TaskOffset(subtopology_id=s, partition=p, offset=o)
            for (s, p), o in sorted(offsets.items())]


def _member(m, target, reported=None):
    ep = None if m.user_endpoint is None else Response.Endpoint(host=m.user_endpoint[0],
                                                                port=m.user_endpoint[1])
    return G.Member(
        member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id,
        rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
        topology_epoch=m.topology_epoch, process_id=m.process_id, user_endpoint=ep,
        client_tags=[Response.KeyValue(key=k, value=v) for k, v in m.client_tags],
        task_offsets=_offsets(reported.offsets) if reported else [],
        task_end_offsets=_offsets(reported.end_offsets) if reported else [],
        assignment=_assignment(m.assigned),
        target_assignment=_assignment(target), is_classic=False)


NOT_REQUESTED, NOT_STORED = 0, 1        # TopologyDescriptionStatus


@api(89, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    if not streams_protocol_enabled(ctx.broker):       # off: see the feature module
        return Response(throttle_time_ms=0, groups=[
            G(error_code=ErrorCode.UNSUPPORTED_VERSION, group_id=g, group_state="", members=[])
            for g in request.group_ids])
    denied = denied_names(ctx, DESCRIBE, GROUP, request.group_ids)
    allowed = [g for g in request.group_ids if g not in denied]
    described = await coordinator_of(ctx.broker).streams_group_describe(allowed) if allowed else []
    return Response(throttle_time_ms=0, groups=[
        G(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=g, group_state="", members=[])
        for g in request.group_ids if g in denied] + [
        G(error_code=d.error, error_message=d.message, group_id=d.group_id, group_state=d.state,
          group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
          topology=_topology(d.topology), members=[_member(m, t, d.task_offsets.get(m.member_id))
                                                 for m, t in d.members],
          **({} if d.error else {
              "assignor_name": d.assignor_name,
              "topology_description_status": NOT_STORED if ctx.version >= 1
              and request.include_topology_description else NOT_REQUESTED}))
        for d in described])
