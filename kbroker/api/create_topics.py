"""CreateTopics (key 19), v2–v7 (Kafka 4's floor is v2, KIP-896).

- ``num_partitions``/``replication_factor`` of -1 take ``num.partitions`` /
  ``default.replication.factor`` (KIP-464, v4+); manual assignments; topic configs checked
  against the topic config definitions (``INVALID_CONFIG``); ``validate_only``.
- Errors as Kafka: ``TOPIC_ALREADY_EXISTS``, ``INVALID_TOPIC_EXCEPTION``,
  ``INVALID_PARTITIONS``, ``INVALID_REPLICATION_FACTOR`` (more replicas than live
  brokers — one here), ``INVALID_REPLICA_ASSIGNMENT``, ``INVALID_REQUEST`` for a topic
  named twice in one request.
- v5+ (KIP-525) returns partitions, replication factor and every config of the new topic;
  v7+ the topic id (KIP-516).
Not implemented: create-topic policies, ``timeout_ms`` (creation is synchronous).

``controller_mutation_rate`` (KIP-599, ``kbroker.quota.mutation``): each new topic takes its
partitions from the client's token bucket; v6+ answers a topic refused by the quota with
``THROTTLING_QUOTA_EXCEEDED``, older versions only carry the throttle time. Topics that
already exist or are named twice take nothing (Kafka checks the quota after validating).

ACLs (``kbroker.authz``): CREATE on the cluster or on each topic (else
TOPIC_AUTHORIZATION_FAILED); the configs of the answer need DESCRIBE_CONFIGS on the topic
(else ``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import CREATE, DESCRIBE_CONFIGS
from kbroker.wire.error_codes import ErrorCode
from kbroker.metadata import configs as tc
from kbroker.metadata.controller import NewTopic
from kbroker.quota.mutation import THROTTLED_MESSAGE, QuotaExceeded, quota_of_request
from kbroker.wire import messages

Response = messages.CreateTopicsResponse
Result = Response.CreatableTopicResult
Config = Response.CreatableTopicConfigs


@api(19, versions=(2, 7))
async def handle(ctx: RequestContext, request) -> Response:
    new, throttled = [], []
    quota = quota_of_request(ctx)
    image = ctx.broker.metadata
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    denied = frozenset() if ctx.authorize_cluster(CREATE) else \
        denied_topics(ctx, CREATE, (t.name for t in request.topics))
    refused = [t.name for t in request.topics if t.name in denied]
    for t in request.topics:
        if t.name in denied:
            continue
        assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments or ()}
        if counts[t.name] == 1 and t.name not in image.topics:
            partitions = len(assignments) or (t.num_partitions if t.num_partitions > 0
                                              else ctx.broker.config.get("num.partitions"))
            try:
                quota.record(partitions)
            except QuotaExceeded:
                throttled.append(t.name)
                continue
        new.append(NewTopic(t.name, t.num_partitions, t.replication_factor, assignments or None,
                            {c.name: c.value for c in t.configs or ()}))
    results = await ctx.broker.controller.create_topics(new, validate_only=request.validate_only) \
        if new else []
    asked = {t.name: t for t in new}
    hidden = denied_topics(ctx, DESCRIBE_CONFIGS, (r.name for r in results if not r.error_code))
    out = [Result(name=n, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                  error_message="Authorization failed.") for n in refused]
    out += [Result(name=n, error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                   error_message=THROTTLED_MESSAGE) for n in throttled]
    for r in results:
        res = Result(name=r.name, error_code=r.error_code, error_message=r.error_message)
        if ctx.version >= 7:
            res.topic_id = r.topic_id
        if ctx.version >= 5 and not r.error_code and r.name in hidden:
            res.num_partitions = r.num_partitions
            res.replication_factor = r.replication_factor
            res.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif ctx.version >= 5 and not r.error_code:
            res.num_partitions = r.num_partitions
            res.replication_factor = r.replication_factor
            # the created topic's DescribeConfigs entries: only this answer carries them
            overrides = {k: v for k, v in asked[r.name].configs.items() if v is not None}
            res.configs = [Config(name=e.name, value=e.value, read_only=e.read_only,
                                  config_source=e.source, is_sensitive=e.sensitive)
                           for e in tc.describe_topic(ctx.broker.config, overrides)]
        out.append(res)
    return Response(throttle_time_ms=quota.throttle_time(), topics=out)
