"""DeleteTopics (key 20), v1–v6 (Kafka 4's floor is v1): by name, and by topic id in v6.

- KIP-516 (v6: ``topics`` entries carry a name or an id; responses carry both).
- Unknown name → ``UNKNOWN_TOPIC_OR_PARTITION``; unknown id → ``UNKNOWN_TOPIC_ID``; an
  entry with both or neither → ``INVALID_REQUEST``; ``delete.topic.enable=false`` →
  ``TOPIC_DELETION_DISABLED``. Deletion is synchronous: logs are renamed for deletion when
  the response is sent.
Not implemented: ``timeout_ms`` (nothing to wait for), throttling.

ACLs (``kbroker.authz``): DELETE on each topic (else TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import DELETE
from kbroker.metadata.image import ZERO_UUID
from kbroker.wire import messages
from kbroker.quota.mutation import THROTTLED_MESSAGE, QuotaExceeded, quota_of_request
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
    if ctx.authorizer is not None:
        image = ctx.broker.metadata
        by_id = {i: image.topics_by_id[i].name for i in ids if i in image.topics_by_id}
        denied = denied_topics(ctx, DELETE, [*names, *by_id.values()])
        for n in names:
            if n in denied:
                out.append(Result(name=n, topic_id=ZERO_UUID, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        for i in ids:
            if by_id.get(i) in denied:
                out.append(Result(name=None, topic_id=i, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        names = [n for n in names if n not in denied]
        ids = [i for i in ids if by_id.get(i) not in denied]
    # controller_mutation_rate (KIP-599): each topic deleted takes its partition count
    quota = quota_of_request(ctx)
    image = ctx.broker.metadata
    kept_names, kept_ids = [], []
    for entry, is_id in [(n, False) for n in names] + [(i, True) for i in ids]:
        topic = image.topics_by_id.get(entry) if is_id else image.topics.get(entry)
        if topic is not None and ctx.broker.config.get("delete.topic.enable"):
            try:
                quota.record(len(topic.partitions))
            except QuotaExceeded:
                out.append(Result(name=None if is_id else entry,
                                  topic_id=entry if is_id else ZERO_UUID,
                                  error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                                  error_message=THROTTLED_MESSAGE))
                continue
        (kept_ids if is_id else kept_names).append(entry)
    names, ids = kept_names, kept_ids
    for name, topic_id, code, message in (await ctx.broker.controller.delete_topics(names, ids)
                                          if names or ids else ()):
        out.append(Result(name=name if ctx.version >= 6 else (name or ""), topic_id=topic_id,
                          error_code=code, error_message=message if ctx.version >= 5 else None))
    for t in bad:
        out.append(Result(name=t.name, topic_id=t.topic_id, error_code=ErrorCode.INVALID_REQUEST,
                          error_message="Each topic must be given by name or by id, not both."))
    return Response(throttle_time_ms=quota.throttle_time(), responses=out)
