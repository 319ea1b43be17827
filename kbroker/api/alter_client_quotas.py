"""AlterClientQuotas (key 49), v0–v1 (KIP-546): set or remove quota keys of user, client-id,
user+client-id and ip entities (``None`` name: the default entity).

Validated by the active controller as Kafka's ``ClientQuotaControlManager`` does (entity
combinations, known keys, values above 0, whole numbers for byte and connection rates; one
error per failing entry, the other entries still apply) and stored as ``ClientQuotaRecord``s
in the metadata log; ``validate_only`` changes nothing. The brokers enforce the quotas
(``kbroker.quota``). Forwarded to the active controller from any node.

ACLs (``kbroker.authz``): ALTER_CONFIGS on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER_CONFIGS
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire import messages

Response = messages.AlterClientQuotasResponse


@api(49, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    entries = [([(e.entity_type, e.entity_name) for e in entry.entity or ()],
                [(op.key, op.value, bool(op.remove)) for op in entry.ops or ()])
               for entry in request.entries or ()]
    if not ctx.authorize_cluster(ALTER_CONFIGS):
        results = [(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)] * len(entries)
    else:
        results = await ctx.broker.controller.alter_client_quotas(
            entries, validate_only=bool(request.validate_only)) if entries else []
    E = Response.EntryData
    return Response(throttle_time_ms=0, entries=[
        E(error_code=code, error_message=message,
          entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in pairs])
        for (pairs, _), (code, message) in zip(entries, results)])
