"""AlterConfigs (key 33), v0–v2: replace a topic's config overrides (legacy, non-incremental).

- The configs given become the topic's complete set of overrides; keys not listed revert
  to their defaults (that is the legacy API's meaning, hence KIP-339's incremental API).
- Values are checked against the topic config definitions (``INVALID_CONFIG``); an
  unknown topic is ``UNKNOWN_TOPIC_OR_PARTITION``; ``validate_only`` changes nothing.
Not implemented: dynamic broker configs (``INVALID_CONFIG``), alter-config policies.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.wire import messages

Response = messages.AlterConfigsResponse
Result = Response.AlterConfigsResourceResponse


@api(33, versions=(0, 2))
async def handle(ctx: RequestContext, request) -> Response:
    resources = [(r.resource_type, r.resource_name, {c.name: c.value for c in r.configs or ()})
                 for r in request.resources or ()]
    results = await ctx.broker.controller.alter_configs(resources, validate_only=request.validate_only)
    return Response(throttle_time_ms=0, responses=[
        Result(error_code=r.error_code, error_message=r.error_message,
               resource_type=r.resource_type, resource_name=r.resource_name) for r in results])
