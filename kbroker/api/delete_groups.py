"""DeleteGroups (key 42), v0–v2: delete Empty groups and their committed offsets.

Per group: ``GROUP_ID_NOT_FOUND`` when unknown, ``NON_EMPTY_GROUP`` while it has members,
``INVALID_GROUP_ID`` for an empty id. Deletion writes offset and group tombstones to
``__consumer_offsets``.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.DeleteGroupsResponse


@api(42, versions=(0, 2))
async def handle(ctx: RequestContext, request) -> Response:
    names = list(request.groups_names)
    sg = getattr(ctx.broker, "share_groups", None)
    shared = {g: sg.delete(g) for g in names} if sg is not None else {}
    shared = {g: e for g, e in shared.items() if e is not None}       # share groups (KIP-932)
    results = await coordinator_of(ctx.broker).delete_groups([g for g in names if g not in shared])
    results = list(results) + list(shared.items())
    return Response(throttle_time_ms=0, results=[
        Response.DeletableGroupResult(group_id=g, error_code=e) for g, e in results])
