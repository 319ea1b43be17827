"""DescribeConfigs (key 32), v1–v4 (Kafka 4's floor is v1): topic, broker and group configs.

- Every config of the resource (or the keys asked for) with value, source, read-only and
  sensitive flags (KIP-226 sources, v1+), synonyms when asked (v1+), the config type (v3+,
  KIP-569); documentation is not provided (null).
- Topic configs layer as in Kafka: topic override (DYNAMIC_TOPIC_CONFIG) → the broker's
  ``log.*`` synonym when set in the broker config (STATIC_BROKER_CONFIG) → the default.
- Broker resources: this node's id lists every (non-internal) broker config of Kafka plus
  keys set in the file or dynamically, with Kafka's sources and synonyms (dynamic per
  broker, dynamic cluster default, static file, default); "" lists the cluster-default
  dynamic configs. Read-only as in Kafka (keys Kafka cannot update dynamically);
  password values are sensitive (null).
- Group resources (type 32, KIP-848): every group config (``consumer.*``, ``share.*``,
  ``streams.*``) with the group's override (source GROUP_CONFIG) or the broker's value of
  its synonym (DEFAULT_CONFIG), for any group name, existing or not, as Kafka
  (``kbroker.metadata.group_configs``); an empty name is ``INVALID_REQUEST``.
- Errors: unknown topic ``UNKNOWN_TOPIC_OR_PARTITION``; another broker id or an unsupported
  resource type ``INVALID_REQUEST`` (broker loggers and client metrics are not served).
Not implemented: authorization, documentation strings.

ACLs (``kbroker.authz``): DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or,
for brokers, on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import config_denied
from kbroker.authz.acls import DESCRIBE_CONFIGS
from kbroker.metadata import configs as tc
from kbroker.metadata import group_configs
from kbroker.metadata.image import BROKER_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.DescribeConfigsResponse
Result = Response.DescribeConfigsResult
Entry = Response.DescribeConfigsResourceResult
Synonym = Response.DescribeConfigsSynonym


def describe_resource(broker, rtype: int, rname: str):
    """(error_code, message, entries) of one resource."""
    image = broker.metadata
    if rtype == TOPIC_RESOURCE:
        t = image.topics.get(rname)
        if t is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {rname} does not exist.", []
        return ErrorCode.NONE, None, tc.describe_topic(broker.config, dict(t.configs),
                                                       image.broker_configs)
    if rtype == BROKER_RESOURCE:
        if rname not in ("", str(broker.node_id)):
            return ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.node_id} or empty string, but received {rname}", []
        return ErrorCode.NONE, None, tc.describe_broker(broker.config, image.broker_configs,
                                                        broker.node_id, rname)
    if rtype == GROUP_RESOURCE:
        if not rname:
            return ErrorCode.INVALID_REQUEST, "Group name can't be empty.", []
        return ErrorCode.NONE, None, group_configs.describe(
            dict(image.group_configs.get(rname, {})), broker.config.get)
    return ErrorCode.INVALID_REQUEST, f"Unsupported resource type {rtype}", []


@api(32, versions=(1, 4))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    results = []
    for res in request.resources or ():
        denied = config_denied(ctx, DESCRIBE_CONFIGS, res.resource_type, res.resource_name)
        code, message, entries = (*denied, []) if denied else \
            describe_resource(ctx.broker, res.resource_type, res.resource_name)
        if res.configuration_keys is not None:
            keys = set(res.configuration_keys)
            entries = [e for e in entries if e.name in keys]
        out = []
        for e in entries:
            item = Entry(name=e.name, value=e.value, read_only=e.read_only,
                         config_source=e.source, is_sensitive=e.sensitive)
            if request.include_synonyms:
                item.synonyms = [Synonym(name=n, value=val, source=src) for n, val, src in e.synonyms or ()]
            if v >= 3:
                item.config_type = tc.TYPE_IDS.get(e.type, 0)
                item.documentation = None
            out.append(item)
        results.append(Result(error_code=code, error_message=message, resource_type=res.resource_type,
                              resource_name=res.resource_name, configs=out))
    return Response(throttle_time_ms=0, results=results)
