"""DeleteGroups (key 42), v0–v2: delete Empty groups and their committed offsets.

Per group: ``GROUP_ID_NOT_FOUND`` when unknown, ``NON_EMPTY_GROUP`` while it has members,
``INVALID_GROUP_ID`` for an empty id. Deletion writes offset and group tombstones to
``__consumer_offsets``.

ACLs (``kbroker.authz``): DELETE on each group (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_names
from kbroker.authz.acls import DELETE, GROUP
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.DeleteGroupsResponse


@api(42, versions=(0, 2))
async def handle(ctx: RequestContext, request) -> Response:
    denied = denied_names(ctx, DELETE, GROUP, request.groups_names)
    names = [g for g in request.groups_names if g not in denied]
    results = await coordinator_of(ctx.broker).delete_groups(names) if names else []
    results = list(results) + [
        (g, E.GROUP_AUTHORIZATION_FAILED) for g in request.groups_names if g in denied]
    return Response(throttle_time_ms=0, results=[
        Response.DeletableGroupResult(group_id=g, error_code=e) for g, e in results])
