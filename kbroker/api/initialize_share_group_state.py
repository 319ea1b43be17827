"""InitializeShareGroupState (key 83), v0: the share coordinator stores a share-partition's
first state (state epoch, start offset, nothing in flight) as a ShareSnapshot in
``__share_group_state`` (KIP-932). An inter-broker API: kbroker's own partition leaders
write the state topic directly (:mod:`kbroker.share.persister`); this serves other callers.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._share_state import forget_cached, persister_of, run, state_error
from kbroker.wire import messages

Resp = messages.InitializeShareGroupStateResponse


@api(83, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Resp:
    per = persister_of(ctx.broker)
    await per.ensure_topic()
    results = []
    for t in request.topics or []:
        parts = []
        for p in t.partitions or []:
            err = state_error(ctx.broker, request.group_id, t.topic_id, p.partition)
            if not err:
                err, _ = run(lambda: per.write_state(request.group_id, t.topic_id, p.partition,
                                                     p.start_offset, p.state_epoch, []))
                forget_cached(ctx.broker, request.group_id, t.topic_id, p.partition)
            parts.append(Resp.PartitionResult(partition=p.partition, error_code=err,
                                              error_message=None))
        results.append(Resp.InitializeStateResult(topic_id=t.topic_id, partitions=parts))
    return Resp(results=results)
