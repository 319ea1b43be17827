"""LeaveGroup (key 13), v0–v5: members leave (and the group rebalances without them).

v0–v2 carry one member id and answer with one top-level error; v3+ batch members and
allow removing a static member by ``group.instance.id`` alone (KIP-345 admin removal),
answering per member; v5 adds a reason (logged nowhere yet).

ACLs (``kbroker.authz``): READ on the group (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import GROUP, READ
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.LeaveGroupResponse


@api(13, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    if not ctx.authorize(READ, GROUP, request.group_id):
        return Response(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED, members=[])
    if v >= 3:
        members = [(m.member_id or "", m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id or "", None)]
    err, results = await coordinator_of(ctx.broker).leave_group(request.group_id, members)
    if v < 3:
        # one member: its error is the response's error
        if not err and results:
            err = results[0][2]
        return Response(throttle_time_ms=0, error_code=err)
    return Response(throttle_time_ms=0, error_code=err, members=[
        Response.MemberResponse(member_id=m, group_instance_id=i, error_code=e)
        for m, i, e in results])
