"""DeleteShareGroupState (key 86), v0: forget a share-partition's durable state (a
ShareSnapshot tombstone in ``__share_group_state``, KIP-932)."""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._share_state import forget_cached, persister_of, run, state_error
from kbroker.wire import messages

Resp = messages.DeleteShareGroupStateResponse


@api(86, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Resp:
    per = persister_of(ctx.broker)
    results = []
    for t in request.topics or []:
        parts = []
        for p in t.partitions or []:
            err = state_error(ctx.broker, request.group_id, t.topic_id, p.partition)
            if not err:
                err, _ = run(lambda: per.delete(request.group_id, t.topic_id, p.partition))
                forget_cached(ctx.broker, request.group_id, t.topic_id, p.partition)
            parts.append(Resp.PartitionResult(partition=p.partition, error_code=err,
                                              error_message=None))
        results.append(Resp.DeleteStateResult(topic_id=t.topic_id, partitions=parts))
    return Resp(results=results)
