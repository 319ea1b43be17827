"""ListGroups (key 16), v0–v5: the groups this coordinator knows, with their protocol type.

v4 adds the group state and a state filter (KIP-518, case-insensitive); v5 the group type
("classic", "consumer" or "share") and a type filter (KIP-848); share groups (KIP-932, protocol
type "share") come from the share group coordinator. Groups of partitions still loading are left out
and the answer carries ``COORDINATOR_LOAD_IN_PROGRESS``.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.group.base import ListedGroup
from kbroker.group.service import coordinator_of
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.ListGroupsResponse


@api(16, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    gc = coordinator_of(ctx.broker)
    groups = await gc.list_groups(request.states_filter if v >= 4 else None,
                                  request.types_filter if v >= 5 else None)
    err = E.COORDINATOR_LOAD_IN_PROGRESS if gc.manager.loading else E.NONE
    groups = list(groups) + _share_groups(ctx.broker, request.states_filter if v >= 4 else None,
                                          request.types_filter if v >= 5 else None)
    return Response(throttle_time_ms=0, error_code=err, groups=[
        Response.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type,
                             group_state=g.state if v >= 4 else "",
                             group_type=g.group_type if v >= 5 else "")
        for g in groups])


def _share_groups(broker, states, types) -> list:
    sg = getattr(broker, "share_groups", None)
    if sg is None or (types and "share" not in {t.lower() for t in types}):
        return []
    wanted = {s.lower() for s in states} if states else None
    return [ListedGroup(gid, "share", state, "share") for gid, state in sg.listed()
            if wanted is None or state.lower() in wanted]
