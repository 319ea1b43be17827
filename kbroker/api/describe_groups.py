"""DescribeGroups (key 15), v0–v5: state, protocol and members of groups.

Member metadata and assignments (and the protocol name) are shown only for Stable groups,
as Kafka does; an unknown group is described as ``Dead`` with no error. v4 adds
``group.instance.id``; authorized operations (v3+) are answered as with no authorizer
(every group operation allowed).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import GROUP_OPERATIONS, authorized
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.DescribeGroupsResponse


@api(15, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    described = await coordinator_of(ctx.broker).describe_groups(list(request.groups))
    ops = authorized(v >= 3 and request.include_authorized_operations, GROUP_OPERATIONS)
    return Response(throttle_time_ms=0, groups=[
        Response.DescribedGroup(
            error_code=d.error, group_id=d.group_id, group_state=d.state,
            protocol_type=d.protocol_type, protocol_data=d.protocol_data,
            authorized_operations=ops,
            members=[Response.DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id if v >= 4 else None,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata, member_assignment=m.assignment)
                for m in d.members])
        for d in described])
