"""Heartbeat (key 12), v0–v4: keep a member's session alive; learn of rebalances.

Answers ``REBALANCE_IN_PROGRESS`` while the group prepares a rebalance (the member must
rejoin), ``ILLEGAL_GENERATION`` / ``UNKNOWN_MEMBER_ID`` / ``FENCED_INSTANCE_ID`` (v3+,
KIP-345) when the member is out of date.

ACLs (``kbroker.authz``): READ on the group (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import GROUP, READ
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.HeartbeatResponse


@api(12, versions=(0, 4))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize(READ, GROUP, request.group_id):
        return Response(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED)
    err = await coordinator_of(ctx.broker).heartbeat(
        request.group_id, request.member_id or "", request.generation_id,
        request.group_instance_id if ctx.version >= 3 else None)
    return Response(throttle_time_ms=0, error_code=err)
