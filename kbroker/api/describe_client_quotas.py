"""DescribeClientQuotas (key 48), v0–v1 (KIP-546): the quota entities matching a filter.

Each filter component names an entity type with a match type — EXACT (that name),
DEFAULT (the default entity), SPECIFIED (any entity of that type); ``strict`` keeps only
entities with exactly the filtered types. Bad filters answer ``INVALID_REQUEST`` (or
``UNSUPPORTED_VERSION`` for an unknown entity type) with Kafka's message, as
``ClientQuotasImage.describe``. Read from this node's metadata image.

ACLs (``kbroker.authz``): DESCRIBE_CONFIGS on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import DESCRIBE_CONFIGS
from kbroker.wire.error_codes import ErrorCode
from kbroker.metadata.client_quotas import QuotaError, describe
from kbroker.wire import messages

Response = messages.DescribeClientQuotasResponse


@api(48, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize_cluster(DESCRIBE_CONFIGS):
        return Response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=None, entries=None)
    components = [(c.entity_type, c.match_type, c.match) for c in request.components or ()]
    try:
        found = describe(ctx.broker.metadata.client_quotas, components, bool(request.strict))
    except QuotaError as e:
        return Response(throttle_time_ms=0, error_code=e.code, error_message=str(e), entries=None)
    E = Response.EntryData
    return Response(throttle_time_ms=0, error_code=0, error_message=None, entries=[
        E(entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in key],
          values=[E.ValueData(key=k, value=v) for k, v in sorted(values.items())])
        for key, values in found])
