"""ReadShareGroupState (key 84), v0: a share-partition's durable state (state epoch, start
offset, state batches) from ``__share_group_state`` (KIP-932). A share-partition never
initialized answers start offset -1 and no batches.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._share_state import persister_of, state_error
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.ReadShareGroupStateResponse


@api(84, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Resp:
    per = persister_of(ctx.broker)
    results = []
    for t in request.topics or []:
        parts = []
        for p in t.partitions or []:
            err = state_error(ctx.broker, request.group_id, t.topic_id, p.partition,
                              unknown=E.INVALID_REQUEST)
            state = None if err else per.read(request.group_id, t.topic_id, p.partition)
            start, epoch, batches = state if state is not None else (0 if err else -1, 0, [])
            parts.append(Resp.PartitionResult(
                partition=p.partition, error_code=err, error_message=None, state_epoch=epoch,
                start_offset=start, state_batches=[Resp.StateBatch(
                    first_offset=b.first_offset, last_offset=b.last_offset,
                    delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                    for b in batches]))
        results.append(Resp.ReadStateResult(topic_id=t.topic_id, partitions=parts))
    return Resp(results=results)
