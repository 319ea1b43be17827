"""DeleteTopics (key 20), v1–v6 (Kafka 4's floor is v1): by name, and by topic id in v6.

- KIP-516 (v6: ``topics`` entries carry a name or an id; responses carry both).
- Unknown name → ``UNKNOWN_TOPIC_OR_PARTITION``; unknown id → ``UNKNOWN_TOPIC_ID``; an
  entry with both or neither → ``INVALID_REQUEST``; ``delete.topic.enable=false`` →
  ``TOPIC_DELETION_DISABLED``. Deletion is synchronous: logs are renamed for deletion when
  the response is sent.
Not implemented: ``timeout_ms`` (nothing to wait for), throttling.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.metadata.image import ZERO_UUID
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.DeleteTopicsResponse
Result = Response.DeletableTopicResult


@api(20, versions=(1, 6))
async def handle(ctx: RequestContext, request) -> Response:
    names, ids, bad = [], [], []
    if ctx.version >= 6:
        for t in request.topics or ():
            has_id = t.topic_id is not None and t.topic_id != ZERO_UUID
            if (t.name is None) == (not has_id):
                bad.append(t)
            elif has_id:
                ids.append(t.topic_id)
            else:
                names.append(t.name)
    else:
        names = list(request.topic_names or ())
    out = []
    for name, topic_id, code, message in await ctx.broker.controller.delete_topics(names, ids):
        out.append(Result(name=name if ctx.version >= 6 else (name or ""), topic_id=topic_id,
                          error_code=code, error_message=message if ctx.version >= 5 else None))
    for t in bad:
        out.append(Result(name=t.name, topic_id=t.topic_id, error_code=ErrorCode.INVALID_REQUEST,
                          error_message="Each topic must be given by name or by id, not both."))
    return Response(throttle_time_ms=0, responses=out)
