"""CreatePartitions (key 37), v0–v3: add partitions to existing topics.

- KIP-195; v2+ flexible (KIP-482). Every topic asked about gets a result (the Java admin
  client and tools wait for each one).
- ``INVALID_PARTITIONS`` when the count does not grow the topic,
  ``UNKNOWN_TOPIC_OR_PARTITION`` for a missing topic, ``INVALID_REPLICA_ASSIGNMENT`` for
  a manual assignment of the wrong size or naming unknown brokers, ``INVALID_REQUEST`` for
  a topic named twice; ``validate_only`` checks without changing anything.
Not implemented: ``timeout_ms`` (synchronous).

``controller_mutation_rate`` (KIP-599, ``kbroker.quota.mutation``): the partitions added take
tokens from the client's bucket; v3+ answers a topic refused by the quota with
``THROTTLING_QUOTA_EXCEEDED``, older versions only carry the throttle time.

ACLs (``kbroker.authz``): ALTER on each topic (else TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import ALTER
from kbroker.quota.mutation import THROTTLED_MESSAGE, QuotaExceeded, quota_of_request
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire import messages

Response = messages.CreatePartitionsResponse
Result = Response.CreatePartitionsTopicResult


@api(37, versions=(0, 3))
async def handle(ctx: RequestContext, request) -> Response:
    wanted, throttled = [], []
    quota = quota_of_request(ctx)
    image = ctx.broker.metadata
    names = [t.name for t in request.topics or ()]
    denied = denied_topics(ctx, ALTER, names)
    for t in request.topics or ():
        if t.name in denied:
            continue
        topic = image.topics.get(t.name)
        if topic is not None and names.count(t.name) == 1 and t.count > len(topic.partitions):
            try:
                quota.record(t.count - len(topic.partitions))
            except QuotaExceeded:
                throttled.append(t.name)
                continue
        assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
        wanted.append((t.name, t.count, assignments))
    results = await ctx.broker.controller.create_partitions(wanted, validate_only=request.validate_only) \
        if wanted else []
    results = [(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
               for n in dict.fromkeys(t.name for t in request.topics or ()) if n in denied] + list(results)
    results += [(n, ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE) for n in throttled]
    return Response(throttle_time_ms=quota.throttle_time(), results=[
        Result(name=name, error_code=code, error_message=message) for name, code, message in results])
