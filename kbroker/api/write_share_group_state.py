"""WriteShareGroupState (key 85), v0–v1: store a share-partition's state (start offset,
state epoch, state batches) as a ShareSnapshot in ``__share_group_state`` (KIP-932). A write
with an older state epoch than the stored one is ``FENCED_STATE_EPOCH``. kbroker stores the
batches it is given as the whole in-flight state (a snapshot, not a ShareUpdate delta);
v1's ``DeliveryCompleteCount`` is accepted and not kept.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._share_state import forget_cached, persister_of, state_error
from kbroker.share.partition import StateBatch
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.WriteShareGroupStateResponse


@api(85, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Resp:
    per = persister_of(ctx.broker)
    await per.ensure_topic()
    results = []
    for t in request.topics or []:
        parts = []
        for p in t.partitions or []:
            err = state_error(ctx.broker, request.group_id, t.topic_id, p.partition,
                              unknown=E.INVALID_REQUEST)
            if not err:
                old = per.read(request.group_id, t.topic_id, p.partition)
                if old is not None and p.state_epoch < old[1]:
                    err = E.FENCED_STATE_EPOCH
            if not err:
                batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state,
                                      b.delivery_count) for b in p.state_batches or []]
                err = await per.write_replicated(request.group_id, t.topic_id, p.partition,
                                                 p.start_offset, p.state_epoch, batches,
                                                 leader_epoch=p.leader_epoch)
                forget_cached(ctx.broker, request.group_id, t.topic_id, p.partition)
            parts.append(Resp.PartitionResult(partition=p.partition, error_code=err,
                                              error_message=None))
        results.append(Resp.WriteStateResult(topic_id=t.topic_id, partitions=parts))
    return Resp(results=results)
