"""ReadShareGroupStateSummary (key 87), v0–v1: a share-partition's start offset and state
epoch without its batches (what DescribeShareGroupOffsets shows, KIP-932); v1's
``DeliveryCompleteCount`` is the number of acknowledged or archived offsets at or after the
start offset."""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._share_state import persister_of, state_error
from kbroker.wire import messages

Resp = messages.ReadShareGroupStateSummaryResponse


def delivery_complete_count(batches) -> int:
    return sum(b.last_offset - b.first_offset + 1 for b in batches if b.delivery_state in (2, 4))


@api(87, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Resp:
    per = persister_of(ctx.broker)
    results = []
    for t in request.topics or []:
        parts = []
        for p in t.partitions or []:
            err = state_error(ctx.broker, request.group_id, t.topic_id, p.partition)
            state = None if err else per.read(request.group_id, t.topic_id, p.partition)
            start, epoch, batches = state if state is not None else (0 if err else -1, 0, [])
            parts.append(Resp.PartitionResult(
                partition=p.partition, error_code=err, error_message=None, state_epoch=epoch,
                leader_epoch=0, start_offset=start,
                delivery_complete_count=delivery_complete_count(batches) if state else -1))
        results.append(Resp.ReadStateSummaryResult(topic_id=t.topic_id, partitions=parts))
    return Resp(results=results)
