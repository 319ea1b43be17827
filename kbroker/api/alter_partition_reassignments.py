"""AlterPartitionReassignments (key 45), v0 (KIP-455, flexible): start, change or cancel
(null replicas) the reassignment of partitions to new replica lists —
``kafka-reassign-partitions.sh --execute/--cancel``, ``Admin.alterPartitionReassignments``.

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


@api(45, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize_cluster(ALTER):
        return Response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=None, responses=[])
    topics = [(t.name, [(p.partition_index, None if p.replicas is None else list(p.replicas))
                        for p in t.partitions]) for t in request.topics or ()]
    if not topics:
        return Response(throttle_time_ms=0, error_code=0, error_message=None, responses=[])
    results = await ctx.broker.controller.alter_partition_reassignments(topics)
    return Response(throttle_time_ms=0, error_code=0, error_message=None, responses=[
        TopicResponse(name=name, partitions=[
            PartitionResponse(partition_index=i, error_code=c, error_message=m) for i, c, m in parts])
        for name, parts in results])
