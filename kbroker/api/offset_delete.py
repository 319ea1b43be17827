"""OffsetDelete (key 47), v0: delete a group's committed offsets for some partitions (KIP-496).

Allowed for Empty groups, and for active consumer-protocol groups on topics they are not
subscribed to (``GROUP_SUBSCRIBED_TO_TOPIC`` otherwise); other active groups answer
``NON_EMPTY_GROUP``; unknown groups ``GROUP_ID_NOT_FOUND``.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.OffsetDeleteResponse


@api(47, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    topics = [(t.name, [p.partition_index for p in t.partitions]) for t in request.topics]
    err, results = await coordinator_of(ctx.broker).delete_offsets(request.group_id, topics)
    return Response(error_code=err, throttle_time_ms=0, topics=[
        Response.OffsetDeleteResponseTopic(name=t, partitions=[
            Response.OffsetDeleteResponsePartition(partition_index=p, error_code=e) for p, e in ps])
        for t, ps in results])
