"""CreateAcls (key 30), v1–v3: add ACL bindings (KIP-140; prefixed patterns KIP-290).

Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED per creation). Without an
authorizer every creation is answered SECURITY_DISABLED, as Kafka does. The controller
validates each binding as Kafka's ``AclControlManager`` (INVALID_REQUEST with its message)
and writes one ``AccessControlEntryRecord`` per new ACL; creating an existing binding
succeeds without a record. v0 (removed by KIP-896) is not served.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER, Acl
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.CreateAclsResponse


@api(30, versions=(1, 3))
async def handle(ctx: RequestContext, request) -> Response:
    creations = list(request.creations or ())
    if ctx.authorizer is None:
        code, msg = E.SECURITY_DISABLED, "No Authorizer is configured."
        results = [(code, msg)] * len(creations)
    elif not ctx.authorize_cluster(ALTER):
        results = [(E.CLUSTER_AUTHORIZATION_FAILED, None)] * len(creations)
    else:
        results = await ctx.broker.controller.create_acls([
            Acl(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                c.operation, c.permission_type) for c in creations])
    # a created ACL's message is empty, not null, as Kafka 4.4 answers it
    return Response(throttle_time_ms=0, results=[
        Response.AclCreationResult(error_code=code, error_message="" if code == E.NONE and msg is None else msg)
        for code, msg in results])
