"""AlterShareGroupOffsets (key 91), v0: set a share group's start offset per partition
(KIP-932; ``kafka-share-groups --reset-offsets``). The group must have no members
(``NON_EMPTY_GROUP``); every in-flight state of those share-partitions is dropped."""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._share_admin import group_error, reset
from kbroker.share.service import share_partitions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.AlterShareGroupOffsetsResponse


@api(91, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Resp:
    broker = ctx.broker
    mgr = share_partitions(broker)        # started with the first share request
    if mgr.persister is not None:
        await mgr.persister.ensure_topic()
    err = group_error(broker, request.group_id, must_be_empty=True, feature_checked=True)
    if err:
        return Resp(throttle_time_ms=0, error_code=err, error_message=None, responses=[])
    out = []
    for t in request.topics or []:
        topic = broker.metadata.topics.get(t.topic_name)
        rows = []
        for p in t.partitions or []:
            if topic is None or p.partition_index not in topic.partitions:
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            elif p.start_offset < 0:
                code = E.INVALID_REQUEST
            else:
                code = reset(broker, request.group_id, topic.topic_id, p.partition_index,
                             p.start_offset)
            rows.append(Resp.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=code, error_message=None))
        out.append(Resp.AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=topic.topic_id if topic else None, partitions=rows))
    return Resp(throttle_time_ms=0, error_code=0, error_message=None, responses=out)
