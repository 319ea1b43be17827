"""JoinGroup (key 11), v0–v9: join (or rejoin) a classic group and wait for the join phase.

The handler only translates; the rules are in :mod:`kbroker.group.classic.protocol`. Versions:
v1 adds the rebalance timeout (v0: the session timeout is used), v4 KIP-394 member ids
(``MEMBER_ID_REQUIRED``), v5 KIP-345 static members, v7 the protocol type in the response
(the Java client checks it), v8 a reason, v9 ``skip_assignment`` for a rejoining static
leader. The request stays parked until the group's join phase completes.

ACLs (``kbroker.authz``): READ on the group (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import GROUP, READ
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.group.manager import JoinRequest
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.JoinGroupResponse
Member = Response.JoinGroupResponseMember


@api(11, versions=(0, 9))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    if not ctx.authorize(READ, GROUP, request.group_id):
        return Response(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED, generation_id=-1,
                        protocol_type=None, protocol_name=None if v >= 7 else "", leader="",
                        skip_assignment=False, member_id="", members=[])
    req = JoinRequest(
        group_id=request.group_id, member_id=request.member_id or "",
        protocol_type=request.protocol_type or "",
        protocols=[(p.name or "", bytes(p.metadata or b"")) for p in request.protocols],
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms if v >= 1 else -1,
        group_instance_id=request.group_instance_id if v >= 5 else None,
        client_id=ctx.client_id or "", client_host="/" + (ctx.client_host or ""),
        api_version=v, reason=request.reason if v >= 8 else None)
    r = await coordinator_of(ctx.broker).join_group(req)
    return to_wire(r, v)


def to_wire(r, v: int) -> Response:
    return Response(
        throttle_time_ms=0, error_code=r.error, generation_id=r.generation_id,
        protocol_type=r.protocol_type if v >= 7 else None,
        protocol_name=r.protocol_name if (v >= 7 or r.protocol_name is not None) else "",
        leader=r.leader or "", skip_assignment=r.skip_assignment if v >= 9 else False,
        member_id=r.member_id or "",
        members=[Member(member_id=m, group_instance_id=i if v >= 5 else None, metadata=meta)
                 for m, i, meta in r.members])
