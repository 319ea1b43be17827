"""DeleteRecords (API key 21): move a partition's log start offset forward (KIP-107).

Versions: v0–v2 (v2 flexible). ``offset`` -1 means "up to the high watermark"; an offset
above the high watermark (or negative) is OFFSET_OUT_OF_RANGE; compacted-only topics answer
POLICY_VIOLATION. The answer's ``low_watermark`` is the new log start offset. Whole segments
below it are removed at once; fetches below it get OFFSET_OUT_OF_RANGE from then on.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.replica import ReplicaError
from kbroker.wire import messages

Resp = messages.DeleteRecordsResponse


@api(21, versions=(0, 2))
async def handle(ctx: RequestContext, request):
    replicas = ctx.broker.replicas
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            out = Resp.DeleteRecordsPartitionResult(partition_index=p.partition_index,
                                                    low_watermark=-1, error_code=0)
            try:
                out.low_watermark = replicas.delete_records(t.name, p.partition_index, p.offset)
            except ReplicaError as exc:
                out.error_code = exc.error_code
            parts.append(out)
        topics.append(Resp.DeleteRecordsTopicResult(name=t.name, partitions=parts))
    return Resp(throttle_time_ms=0, topics=topics)
