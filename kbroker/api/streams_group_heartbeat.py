"""StreamsGroupHeartbeat (key 88), v0–v1: the streams group protocol (KIP-1071).

v1 (Kafka 4.4, KIP-1071's second part) answers the acceptable recovery lag as an int64
(``group.streams.acceptable.recovery.lag``; v0's int32 field stays 0, as Kafka 4.4 answers it)
and ``TopologyDescriptionRequired``, always false: kbroker has no topology description plugin
(see ``streams_group_topology_description_update``). Static members (``InstanceId``) follow
Kafka 4.4's rules in :mod:`kbroker.group.streams.protocol`.

A Kafka Streams member (``group.protocol=streams``) joins (epoch 0) with its topology,
process id, user endpoint and client tags, heartbeats with its member epoch and the tasks it
owns, and leaves (epoch -1); the coordinator answers its member epoch, the heartbeat
interval, its active/standby/warm-up tasks when they changed, ``Status`` entries (missing
source topics, internal topics being created, stale topology, application shutdown) and —
when the member's endpoint information epoch is behind — the partitions of every member's
user endpoint (interactive queries). The rules are in :mod:`kbroker.group.streams.protocol`.

Internal topics (repartition and changelog topics) the topology needs and that do not exist
are created here with the partition counts the coordinator derived, as Kafka's broker does
after a heartbeat that reports ``MISSING_INTERNAL_TOPICS``; the member learns of them on its
next heartbeat.

ACLs (``kbroker.authz``): READ on the group (GROUP_AUTHORIZATION_FAILED); DESCRIBE on every
topic of a topology sent (TOPIC_AUTHORIZATION_FAILED); missing internal topics are created only
with CREATE on the cluster or on each of them (otherwise the member keeps reporting them
missing).
Without ``streams`` in ``group.coordinator.rebalance.protocols``, or with the finalized
``streams.version`` at 0, the answer is UNSUPPORTED_VERSION, as Kafka 4.4's
(``kbroker/group/streams/feature.py``).
"""
from __future__ import annotations

import logging

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import CREATE, DESCRIBE, GROUP, READ
from kbroker.group.service import coordinator_of
from kbroker.group.streams.feature import streams_protocol_enabled
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.StreamsGroupHeartbeatResponse
log = logging.getLogger("kbroker.group.streams")


def _tasks(task_ids):
    if task_ids is None:
        return None
    out: dict[str, frozenset[int]] = {}
    for t in task_ids:
        out[t.subtopology_id] = frozenset(out.get(t.subtopology_id, frozenset()) | set(t.partitions))
    return out


def _task_ids(tasks):
    return [Response.TaskIds(subtopology_id=s, partitions=sorted(ps))
            for s, ps in sorted(tasks.items()) if ps]


async def _create_internal_topics(ctx: RequestContext, topics) -> None:
    from kbroker.metadata.controller import NewTopic
    if not ctx.authorize_cluster(CREATE):
        denied = denied_topics(ctx, CREATE, [t.name for t in topics])
        if denied:
            log.warning("not creating internal topics %s: CREATE not authorized", sorted(denied))
        topics = [t for t in topics if t.name not in denied]
        if not topics:
            return
    new = [NewTopic(t.name, t.partitions, t.replication_factor if t.replication_factor > 0 else -1,
                    None, dict(t.configs)) for t in topics]
    try:
        results = await ctx.broker.controller.create_topics(new)
    except Exception as exc:  # noqa: BLE001 - the member is told again on its next heartbeat
        log.warning("creating internal topics %s failed: %s", [t.name for t in topics], exc)
        return
    for r in results:
        if r.error_code and r.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.warning("internal topic %s not created: %s %s", r.name, r.error_code,
                        getattr(r, "error_message", ""))


def _offsets(entries):
    if entries is None:
        return None
    return [(e.subtopology_id, e.partition, e.offset) for e in entries]


def _refused(code: int, message: str | None = None) -> Response:
    return Response(throttle_time_ms=0, error_code=code, error_message=message, member_id="",
                    member_epoch=0, heartbeat_interval_ms=0, acceptable_recovery_lag_legacy=0,
                    acceptable_recovery_lag=-1,
                    task_offset_interval_ms=0, endpoint_information_epoch=0, status=[])


@api(88, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    from kbroker.group.streams.protocol import StreamsHeartbeatRequest  # on first use (start-up)
    from kbroker.group.streams.topology import topology_of
    if not streams_protocol_enabled(ctx.broker):
        return _refused(ErrorCode.UNSUPPORTED_VERSION)     # off: see the feature module
    if not ctx.authorize(READ, GROUP, request.group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topology = None if request.topology is None else topology_of(request.topology)
    if topology is not None and ctx.authorizer is not None:
        hidden = denied_topics(ctx, DESCRIBE, sorted(topology.topic_names()))
        if hidden:
            return _refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            "The following topics are not authorized: " + ", ".join(sorted(hidden)))
    ep = request.user_endpoint
    req = StreamsHeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        topology=topology,
        active=_tasks(request.active_tasks), standby=_tasks(request.standby_tasks),
        warmup=_tasks(request.warmup_tasks), process_id=request.process_id,
        user_endpoint=None if ep is None else (ep.host, ep.port),
        client_tags=(None if request.client_tags is None
                     else [(kv.key, kv.value) for kv in request.client_tags]),
        task_offsets=_offsets(request.task_offsets),
        task_end_offsets=_offsets(request.task_end_offsets), api_version=ctx.version,
        shutdown_application=bool(request.shutdown_application),
        client_id=ctx.client_id or "", client_host="/" + (ctx.client_host or ""))
    r = await coordinator_of(ctx.broker).streams_group_heartbeat(req)
    if r.internal_topics_to_create:
        await _create_internal_topics(ctx, r.internal_topics_to_create)
    by_endpoint = None
    if r.partitions_by_endpoint is not None:
        def tps(entries):
            return [Response.TopicPartition(topic=t, partitions=ps) for t, ps in entries]
        by_endpoint = [Response.EndpointToPartitions(
            user_endpoint=Response.Endpoint(host=host, port=port),
            active_partitions=tps(active), standby_partitions=tps(standby))
            for (host, port), active, standby in r.partitions_by_endpoint]
    t = r.tasks
    return Response(
        throttle_time_ms=0, error_code=r.error, error_message=r.message, member_id=r.member_id,
        member_epoch=r.member_epoch, heartbeat_interval_ms=r.heartbeat_interval_ms,
        # v1's int64; v0's int32 AcceptableRecoveryLagLegacy is 0, as Kafka 4.4 answers it
        acceptable_recovery_lag=r.acceptable_recovery_lag,
        task_offset_interval_ms=r.task_offset_interval_ms,
        status=[] if r.status is None else [
            Response.Status(status_code=c, status_detail=d) for c, d in r.status],
        active_tasks=None if t is None else _task_ids(t.active),
        standby_tasks=None if t is None else _task_ids(t.standby),
        warmup_tasks=None if t is None else _task_ids(t.warmup),
        endpoint_information_epoch=r.endpoint_information_epoch,
        partitions_by_user_endpoint=by_endpoint)
