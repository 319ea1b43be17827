"""ListConfigResources (key 74), v0–v1: the resources that configs can be described for.

KIP-1000 (v0, formerly ListClientMetricsResources: client-metrics resources only) and
KIP-1142 (v1: ``resource_types`` filter; empty = every type; each entry says its type).
What ``kafka-configs.sh --describe`` without an entity name and ``Admin.listConfigResources``
use. Answered per type:

- TOPIC (2): every topic; BROKER (4): every registered broker id; BROKER_LOGGER (8): this
  broker's id; CLIENT_METRICS (16): none (kbroker keeps no client-metrics subscriptions);
  GROUP (32): every group with dynamic configs (GROUP config resources, KIP-848).
- Any other type: ``INVALID_REQUEST`` with no resources.
Names are listed type by type, each sorted. Not implemented: authorization (everything is
listed, as Kafka with no authorizer).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.ListConfigResourcesResponse
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
ALL_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


def _names(ctx: RequestContext, rtype: int) -> list[str]:
    image = ctx.broker.metadata
    if rtype == TOPIC:
        return sorted(image.topics)
    if rtype == BROKER:
        return [str(i) for i in sorted(image.brokers)]
    if rtype == BROKER_LOGGER:
        return [str(ctx.broker.config.node_id)]
    if rtype == GROUP:
        return sorted(image.group_configs)
    return []       # CLIENT_METRICS: nothing configured


@api(74, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    types = list(request.resource_types) if ctx.version >= 1 else [CLIENT_METRICS]
    if not types:
        types = list(ALL_TYPES)
    if any(t not in ALL_TYPES for t in types):
        return Response(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, config_resources=[])
    out = []
    for rtype in dict.fromkeys(types):
        for name in _names(ctx, rtype):
            entry = Response.ConfigResource(resource_name=name)
            if ctx.version >= 1:
                entry.resource_type = rtype
            out.append(entry)
    return Response(throttle_time_ms=0, error_code=ErrorCode.NONE, config_resources=out)
