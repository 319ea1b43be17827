"""AlterPartitionReassignments (key 45), v0–v1 (KIP-455, flexible): start, change or cancel
(null replicas) the reassignment of partitions to new replica lists —
``kafka-reassign-partitions.sh --execute/--cancel``, ``Admin.alterPartitionReassignments``.
v1 (KIP-860): ``allow_replication_factor_change`` false refuses a target whose size is not
the partition's replication factor (``INVALID_REPLICATION_FACTOR``, per partition;
``--disallow-replication-factor-change``); the answer echoes the flag.

Forwarded to the active controller (``ControllerChannel.alter_partition_reassignments``;
rules in ``kbroker/metadata/reassign.py``). Per partition: ``UNKNOWN_TOPIC_OR_PARTITION``,
``INVALID_REPLICA_ASSIGNMENT`` (empty list, unregistered or repeated broker, a cancel that
would need an unclean election), ``NO_REASSIGNMENT_IN_PROGRESS`` (cancel with none
running), ``INVALID_REQUEST`` for a partition named twice (the Java client cannot send that).
The answer comes when the first step is committed; the new replicas then catch up and the
reassignment completes on its own (ListPartitionReassignments shows it until then).
Not implemented: ``timeout_ms``, replication throttles, authorization.

ACLs (``kbroker.authz``): ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire import messages

Response = messages.AlterPartitionReassignmentsResponse
TopicResponse = Response.ReassignableTopicResponse
PartitionResponse = TopicResponse.ReassignablePartitionResponse


@api(45, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    allow = bool(request.allow_replication_factor_change) if ctx.version >= 1 else True
    if not ctx.authorize_cluster(ALTER):
        return Response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=None, responses=[], allow_replication_factor_change=allow)
    topics = [(t.name, [(p.partition_index, None if p.replicas is None else list(p.replicas))
                        for p in t.partitions]) for t in request.topics or ()]
    if not topics:
        return Response(throttle_time_ms=0, error_code=0, error_message=None, responses=[],
                        allow_replication_factor_change=allow)
    results = await ctx.broker.controller.alter_partition_reassignments(topics, allow)
    return Response(throttle_time_ms=0, error_code=0, error_message=None,
                    allow_replication_factor_change=allow, responses=[
        TopicResponse(name=name, partitions=[
            PartitionResponse(partition_index=i, error_code=c, error_message=m) for i, c, m in parts])
        for name, parts in results])
