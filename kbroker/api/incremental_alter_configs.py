"""IncrementalAlterConfigs (key 44), v0–v1: SET / DELETE / APPEND / SUBTRACT per key (KIP-339).

- Topic resources. APPEND/SUBTRACT apply to list-typed configs (``cleanup.policy``,
  throttled replicas) and start from the effective value; any other type is
  ``INVALID_CONFIG`` as in Kafka. Values are validated; a key named twice in a resource is
  ``INVALID_REQUEST``; ``validate_only`` changes nothing.
Not implemented: dynamic broker configs (``INVALID_CONFIG``), alter-config policies.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.wire import messages

Response = messages.IncrementalAlterConfigsResponse
Result = Response.AlterConfigsResourceResponse


@api(44, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    resources = [(r.resource_type, r.resource_name,
                  [(c.name, c.config_operation, c.value) for c in r.configs or ()])
                 for r in request.resources or ()]
    results = await ctx.broker.controller.incremental_alter_configs(
        resources, validate_only=request.validate_only)
    return Response(throttle_time_ms=0, responses=[
        Result(error_code=r.error_code, error_message=r.error_message,
               resource_type=r.resource_type, resource_name=r.resource_name) for r in results])
