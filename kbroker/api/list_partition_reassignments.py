"""ListPartitionReassignments (key 46), v0 (KIP-455, flexible): the ongoing reassignments —
replicas, adding and removing replicas per partition — for the asked partitions, or every
partition when the topic list is null (``kafka-reassign-partitions.sh --verify/--list``,
``Admin.listPartitionReassignments``). Topics and partitions with nothing ongoing (or
unknown) are left out, as Kafka does. Answered from the active controller's image
(forwarded like Kafka's brokers do); ``NOT_CONTROLLER`` at the top when none answers.
Not implemented: authorization.

ACLs (``kbroker.authz``): DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import DESCRIBE
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire import messages

Response = messages.ListPartitionReassignmentsResponse
Topic = Response.OngoingTopicReassignment
Partition = Topic.OngoingPartitionReassignment


@api(46, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize_cluster(DESCRIBE):
        return Response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=None, topics=[])
    if request.topics is None:
        topics = None
    else:
        topics = [(t.name, list(t.partition_indexes)) for t in request.topics]
        if not topics:
            return Response(throttle_time_ms=0, error_code=0, error_message=None, topics=[])
    found = await ctx.broker.controller.list_partition_reassignments(topics)
    if isinstance(found, int):
        return Response(throttle_time_ms=0, error_code=found, error_message="No active controller.", topics=[])
    return Response(throttle_time_ms=0, error_code=0, error_message=None, topics=[
        Topic(name=name, partitions=[
            Partition(partition_index=i, replicas=r, adding_replicas=a, removing_replicas=rm)
            for i, r, a, rm in parts])
        for name, parts in found])
