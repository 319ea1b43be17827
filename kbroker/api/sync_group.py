"""SyncGroup (key 14), v0–v5: the leader hands in the assignment; every member gets its own.

Followers park until the leader's assignment is durable in ``__consumer_offsets``.
v3 adds static members (KIP-345); v5 adds protocol type and name to request (checked
against the group: ``INCONSISTENT_GROUP_PROTOCOL``) and response (the Java client needs
them). Assignment bytes are opaque (cooperative and eager protocols alike).

ACLs (``kbroker.authz``): READ on the group (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import GROUP, READ
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.SyncGroupResponse


@api(14, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    if not ctx.authorize(READ, GROUP, request.group_id):
        return Response(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED,
                        protocol_type=None, protocol_name=None, assignment=b"")
    r = await coordinator_of(ctx.broker).sync_group(
        request.group_id, request.member_id or "", request.generation_id,
        request.group_instance_id if v >= 3 else None,
        request.protocol_type if v >= 5 else None, request.protocol_name if v >= 5 else None,
        [(a.member_id or "", bytes(a.assignment or b"")) for a in request.assignments])
    return Response(throttle_time_ms=0, error_code=r.error,
                    protocol_type=r.protocol_type if v >= 5 else None,
                    protocol_name=r.protocol_name if v >= 5 else None,
                    assignment=r.assignment or b"")
