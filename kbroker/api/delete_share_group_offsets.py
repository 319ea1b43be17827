"""DeleteShareGroupOffsets (key 92), v0: forget a share group's state for whole topics
(KIP-932; ``kafka-share-groups --delete-offsets``). The group must have no members
(``NON_EMPTY_GROUP``)."""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._share_admin import group_error, reset
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.DeleteShareGroupOffsetsResponse


@api(92, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Resp:
    broker = ctx.broker
    err = group_error(broker, request.group_id, must_be_empty=True, feature_checked=True)
    if err:
        return Resp(throttle_time_ms=0, error_code=err, error_message=None, responses=[])
    out = []
    for t in request.topics or []:
        topic = broker.metadata.topics.get(t.topic_name)
        if topic is None:
            out.append(Resp.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=None, error_code=E.UNKNOWN_TOPIC_OR_PARTITION,
                error_message=None))
            continue
        code = E.NONE
        for p in topic.partitions:
            code = reset(broker, request.group_id, topic.topic_id, p, None) or code
        out.append(Resp.DeleteShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=topic.topic_id, error_code=code, error_message=None))
    return Resp(throttle_time_ms=0, error_code=0, error_message=None, responses=out)
