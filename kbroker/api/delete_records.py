"""DeleteRecords (API key 21): move a partition's log start offset forward (KIP-107).

Versions: v0–v2 (v2 flexible). ``offset`` -1 means "up to the high watermark"; an offset
above the high watermark (or negative) is OFFSET_OUT_OF_RANGE; compacted-only topics answer
POLICY_VIOLATION. Whole segments below the new log start offset are removed at once; fetches
below it get OFFSET_OUT_OF_RANGE from then on.

With followers the answer waits, as Kafka's DelayedDeleteRecords, until the partition's low
watermark (the smallest log start offset over the live replicas) reaches the requested
offset, or ``timeout_ms`` passes (REQUEST_TIMED_OUT with the low watermark of the moment of
the deletion); partitions of one request wait concurrently. ``low_watermark`` is that low
watermark (the log start offset with one replica).

ACLs (``kbroker.authz``): DELETE on each topic (else TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

import trio

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import DELETE
from kbroker.wire.error_codes import ErrorCode
from kbroker.replica import ReplicaError
from kbroker.wire import messages

Resp = messages.DeleteRecordsResponse


@api(21, versions=(0, 2))
async def handle(ctx: RequestContext, request):
    replicas = ctx.broker.replicas
    topics = []
    waits = []                       # (partition result, topic, partition, requested offset)
    denied = denied_topics(ctx, DELETE, (t.name for t in request.topics))
    for t in request.topics:
        parts = []
        for p in t.partitions:
            out = Resp.DeleteRecordsPartitionResult(partition_index=p.partition_index,
                                                    low_watermark=-1, error_code=0)
            if t.name in denied:
                out.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                parts.append(out)
                continue
            try:
                required, out.low_watermark = replicas.delete_records_on_leader(
                    t.name, p.partition_index, p.offset)
            except ReplicaError as exc:
                out.error_code = exc.error_code
            else:
                if out.low_watermark < required:
                    waits.append((out, t.name, p.partition_index, required))
            parts.append(out)
        topics.append(Resp.DeleteRecordsTopicResult(name=t.name, partitions=parts))
    if waits:
        async def one(out, topic, index, required):
            code, low = await replicas.wait_low_watermark(topic, index, required,
                                                          request.timeout_ms)
            out.error_code = code
            if low is not None:
                out.low_watermark = low

        async with trio.open_nursery() as nursery:
            for w in waits:
                nursery.start_soon(one, *w)
    return Resp(throttle_time_ms=0, topics=topics)
