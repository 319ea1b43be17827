"""AlterConfigs (key 33), v0–v2: replace a resource's dynamic configs (legacy, non-incremental).

- Topic resources: the configs given become the topic's complete set of overrides; keys
  not listed revert to their defaults (the legacy API's meaning, hence KIP-339's
  incremental API). Values are checked against the topic config definitions
  (``INVALID_CONFIG``); an unknown topic is ``UNKNOWN_TOPIC_OR_PARTITION``.
- Broker resources (KIP-226): ``""`` is the cluster default, otherwise the name must be
  the receiving broker's id (``INVALID_REQUEST`` "Unexpected broker id", checked here
  before forwarding, as Kafka's brokers do). Read-only keys, security keys without a
  listener prefix, bad values and per-broker keys at the cluster level are
  ``INVALID_REQUEST`` (Kafka's answer). Stored as ``ConfigRecord``s (BROKER) in the
  metadata log; see ``kbroker.config.broker.BrokerConfig.effective_values`` for what applies.
- ``validate_only`` changes nothing.
Not implemented: alter-config policies, password encryption of sensitive dynamic values.

ACLs (``kbroker.authz``): ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or, for
brokers, on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import config_denied
from kbroker.authz.acls import ALTER_CONFIGS
from kbroker.metadata.image import BROKER_RESOURCE
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.AlterConfigsResponse
Result = Response.AlterConfigsResourceResponse


def on_client_plane(ctx: RequestContext) -> bool:
    """False on the controller listeners (forwarded requests were checked by the broker)."""
    names = {n.upper() for n in ctx.broker.config.get("controller.listener.names") or ()}
    return (ctx.listener or "").upper() not in names


def broker_precheck(ctx: RequestContext, rtype: int, rname: str, keys, values=None):
    """Kafka's broker-side checks of a BROKER resource before forwarding: (code, message)
    or None."""
    if rtype != BROKER_RESOURCE or not on_client_plane(ctx):
        return None
    if len(set(keys)) != len(list(keys)):
        return ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    if values is not None:
        nulls = [k for k, v in zip(keys, values) if v is None]
        if nulls:
            return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    node = str(ctx.broker.config.node_id)
    if rname != "" and rname != node:
        return (ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {node}, but received {rname}")
    return None


@api(33, versions=(0, 2))
async def handle(ctx: RequestContext, request) -> Response:
    early: dict[int, tuple[int, str]] = {}
    resources = []
    for i, r in enumerate(request.resources or ()):
        configs = list(r.configs or ())
        err = config_denied(ctx, ALTER_CONFIGS, r.resource_type, r.resource_name) or \
            broker_precheck(ctx, r.resource_type, r.resource_name,
                            [c.name for c in configs], [c.value for c in configs])
        if err is not None:
            early[i] = err
        else:
            resources.append((r.resource_type, r.resource_name, {c.name: c.value for c in configs}))
    results = (await ctx.broker.controller.alter_configs(resources, validate_only=request.validate_only)
               if resources else ())
    return Response(throttle_time_ms=0, responses=merge_results(request, early, results, Result))


def merge_results(request, early: dict, results, result_cls) -> list:
    """One answer per requested resource, in request order: the broker-side refusal
    (``early``: index -> (code, message)) or the controller's next result."""
    results = iter(results)
    out = []
    for i, r in enumerate(request.resources or ()):
        if i in early:
            code, msg = early[i]
            out.append(result_cls(error_code=code, error_message=msg, resource_type=r.resource_type,
                                  resource_name=r.resource_name))
            continue
        res = next(results)
        out.append(result_cls(error_code=res.error_code, error_message=res.error_message,
                              resource_type=res.resource_type, resource_name=res.resource_name))
    return out
