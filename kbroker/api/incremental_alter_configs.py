"""IncrementalAlterConfigs (key 44), v0–v1: SET / DELETE / APPEND / SUBTRACT per key (KIP-339).

- Topic resources. APPEND/SUBTRACT apply to list-typed configs (``cleanup.policy``,
  throttled replicas) and start from the effective value; any other type is
  ``INVALID_CONFIG`` as in Kafka. Values are validated; a key named twice in a resource is
  ``INVALID_REQUEST``; ``validate_only`` changes nothing.
- Broker resources (KIP-226): ``""`` (cluster default) or the receiving broker's id, checked
  here before forwarding; the controller applies the operations to that level's stored
  dynamic configs and checks the result as Kafka does (read-only keys, per-broker keys at
  the cluster level, bad values: ``INVALID_REQUEST``). See ``alter_configs``.
- Group resources (type 32, KIP-848): SET/DELETE of ``consumer.session.timeout.ms``,
  ``consumer.heartbeat.interval.ms``, the share and streams keys; the resulting values are
  checked as Kafka's ``GroupConfig.validate`` (``INVALID_CONFIG``) and stored as
  ConfigRecords of resource type 32 in the metadata log; the group coordinator uses them.
Not implemented: alter-config policies.

ACLs (``kbroker.authz``): ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or, for
brokers, on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import config_denied
from kbroker.authz.acls import ALTER_CONFIGS
from kbroker.api.alter_configs import broker_precheck, merge_results
from kbroker.wire import messages

Response = messages.IncrementalAlterConfigsResponse
Result = Response.AlterConfigsResourceResponse


@api(44, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    early: dict[int, tuple[int, str]] = {}
    resources = []
    for i, r in enumerate(request.resources or ()):
        ops = [(c.name, c.config_operation, c.value) for c in r.configs or ()]
        err = config_denied(ctx, ALTER_CONFIGS, r.resource_type, r.resource_name) or \
            broker_precheck(ctx, r.resource_type, r.resource_name, [k for k, _, _ in ops])
        if err is not None:
            early[i] = err
        else:
            resources.append((r.resource_type, r.resource_name, ops))
    results = (await ctx.broker.controller.incremental_alter_configs(
        resources, validate_only=request.validate_only) if resources else ())
    return Response(throttle_time_ms=0, responses=merge_results(request, early, results, Result))
