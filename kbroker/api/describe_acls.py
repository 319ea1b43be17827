"""DescribeAcls (key 29), v1–v3: the ACL bindings one filter matches, grouped by resource
pattern (KIP-140; MATCH/ANY pattern filters KIP-290).

Needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED); without an authorizer
the answer is SECURITY_DISABLED, as Kafka's. A filter with an UNKNOWN field gets
INVALID_REQUEST. Read from this broker's metadata image. v0 (removed by KIP-896) is not
served.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import DESCRIBE, Filter
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.DescribeAclsResponse


@api(29, versions=(1, 3))
async def handle(ctx: RequestContext, request) -> Response:
    def error(code, msg=None):
        return Response(throttle_time_ms=0, error_code=code, error_message=msg, resources=[])
    if ctx.authorizer is None:
        return error(E.SECURITY_DISABLED, "No Authorizer is configured.")
    if not ctx.authorize_cluster(DESCRIBE):
        return error(E.CLUSTER_AUTHORIZATION_FAILED)
    f = Filter(request.resource_type_filter, request.resource_name_filter,
               request.pattern_type_filter, request.principal_filter, request.host_filter,
               request.operation, request.permission_type)
    err = f.error()
    if err:
        return error(E.INVALID_REQUEST, err)
    by_pattern: dict = {}
    for acl in ctx.broker.metadata.acls.values():
        if f.matches(acl):
            by_pattern.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    D = Response.DescribeAclsResource.AclDescription
    return Response(throttle_time_ms=0, error_code=0, error_message=None, resources=[
        Response.DescribeAclsResource(
            resource_type=rt, resource_name=name, pattern_type=pt, acls=[
                D(principal=a.principal, host=a.host, operation=a.operation, permission_type=a.permission)
                for a in sorted(acls, key=lambda a: (a.principal, a.host, a.operation, a.permission))])
        for (rt, name, pt), acls in sorted(by_pattern.items())])
