"""DescribeGroups (key 15), v0–v6: state, protocol and members of groups.

Member metadata and assignments (and the protocol name) are shown only for Stable groups,
as Kafka does; an unknown group, or a group of another type (a consumer-protocol group), is
described as ``Dead`` with no error before v6 and with GROUP_ID_NOT_FOUND and a message from
v6 (KIP-1043; Kafka 4.3.1: "Group X not found." / "Group X is not a classic group."). v4 adds
``group.instance.id``; authorized operations (v3+, KIP-430) come from the ACLs (every group
operation with no authorizer).

ACLs (``kbroker.authz``): DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_names
from kbroker.authz.acls import DESCRIBE, GROUP
from kbroker.group.service import coordinator_of
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.DescribeGroupsResponse


@api(15, versions=(0, 6))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    denied = denied_names(ctx, DESCRIBE, GROUP, request.groups)
    allowed = [g for g in request.groups if g not in denied]
    described = iter(await coordinator_of(ctx.broker).describe_groups(allowed) if allowed else ())
    requested = v >= 3 and request.include_authorized_operations
    out = []
    for g in request.groups:
        if g in denied:
            out.append(Response.DescribedGroup(error_code=E.GROUP_AUTHORIZATION_FAILED, group_id=g,
                                               group_state="", protocol_type="", protocol_data="",
                                               members=[]))
            continue
        d = next(described)
        if v >= 6 and d.error == E.NONE and d.not_found is not None:
            out.append(Response.DescribedGroup(
                error_code=E.GROUP_ID_NOT_FOUND, error_message=d.not_found, group_id=d.group_id,
                group_state="Dead", protocol_type="", protocol_data="", members=[],
                authorized_operations=ctx.authorized_operations(requested, GROUP, d.group_id)))
            continue
        out.append(Response.DescribedGroup(
            error_code=d.error, group_id=d.group_id, group_state=d.state,
            protocol_type=d.protocol_type, protocol_data=d.protocol_data,
            authorized_operations=ctx.authorized_operations(requested, GROUP, d.group_id),
            members=[Response.DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id if v >= 4 else None,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata, member_assignment=m.assignment)
                for m in d.members]))
    return Response(throttle_time_ms=0, groups=out)
