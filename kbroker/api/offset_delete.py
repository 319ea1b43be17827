"""OffsetDelete (key 47), v0: delete a group's committed offsets for some partitions (KIP-496).

Allowed for Empty groups, and for active consumer-protocol groups on topics they are not
subscribed to (``GROUP_SUBSCRIBED_TO_TOPIC`` otherwise); other active groups answer
``NON_EMPTY_GROUP``; unknown groups ``GROUP_ID_NOT_FOUND``.

ACLs (``kbroker.authz``): DELETE on the group (else GROUP_AUTHORIZATION_FAILED), READ on
each topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import DELETE, GROUP, READ
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.OffsetDeleteResponse


@api(47, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize(DELETE, GROUP, request.group_id):
        return Response(error_code=E.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0, topics=[])
    denied = denied_topics(ctx, READ, (t.name for t in request.topics))
    topics = [(t.name, [p.partition_index for p in t.partitions]) for t in request.topics
              if t.name not in denied]
    err, results = await coordinator_of(ctx.broker).delete_offsets(request.group_id, topics)
    results = list(results) + [(t.name, [(p.partition_index, E.TOPIC_AUTHORIZATION_FAILED)
                                         for p in t.partitions])
                               for t in request.topics if t.name in denied]
    return Response(error_code=err, throttle_time_ms=0, topics=[
        Response.OffsetDeleteResponseTopic(name=t, partitions=[
            Response.OffsetDeleteResponsePartition(partition_index=p, error_code=e) for p, e in ps])
        for t, ps in results])
