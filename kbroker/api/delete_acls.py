"""DeleteAcls (key 31), v1–v3: remove the ACL bindings each filter matches (KIP-140).

Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED per filter); without an
authorizer every filter is answered SECURITY_DISABLED. Filters follow Kafka's
``AclBindingFilter`` (ANY/MATCH pattern types, null = any name/principal/host); a filter
with an UNKNOWN field gets INVALID_REQUEST. One ``RemoveAccessControlEntryRecord`` per
removed ACL, all committed at once. v0 (removed by KIP-896) is not served.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER, Filter
from kbroker.metadata.authz_control import AclDeleteResult
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.DeleteAclsResponse


@api(31, versions=(1, 3))
async def handle(ctx: RequestContext, request) -> Response:
    filters = [Filter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                      f.principal_filter, f.host_filter, f.operation, f.permission_type)
               for f in request.filters or ()]
    if ctx.authorizer is None:
        results = [AclDeleteResult(E.SECURITY_DISABLED, "No Authorizer is configured.")] * len(filters)
    elif not ctx.authorize_cluster(ALTER):
        results = [AclDeleteResult(E.CLUSTER_AUTHORIZATION_FAILED)] * len(filters)
    else:
        results = await ctx.broker.controller.delete_acls(filters)
    M = Response.DeleteAclsMatchingAcl
    return Response(throttle_time_ms=0, filter_results=[
        Response.DeleteAclsFilterResult(
            error_code=r.error_code, error_message=r.error_message, matching_acls=[
                M(error_code=0, error_message=None, resource_type=a.resource_type,
                  resource_name=a.resource_name, pattern_type=a.pattern_type, principal=a.principal,
                  host=a.host, operation=a.operation, permission_type=a.permission)
                for a in r.deleted])
        for r in results])
