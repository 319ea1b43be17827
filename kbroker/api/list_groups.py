"""ListGroups (key 16), v0–v5: the groups this coordinator knows, with their protocol type.

v4 adds the group state and a state filter (KIP-518, case-insensitive); v5 the group type
("classic", "consumer" or "share") and a type filter (KIP-848); share groups (KIP-932, protocol
type "share") are groups of the same coordinator. Groups of partitions still loading are left out
and the answer carries ``COORDINATOR_LOAD_IN_PROGRESS``.

ACLs (``kbroker.authz``): every group with DESCRIBE on the cluster, else only the groups
the principal may DESCRIBE.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_names
from kbroker.authz.acls import DESCRIBE, GROUP
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
    if not ctx.authorize_cluster(DESCRIBE):
        denied = denied_names(ctx, DESCRIBE, GROUP, (g[0] for g in groups))
        groups = [g for g in groups if g[0] not in denied]
    err = E.COORDINATOR_LOAD_IN_PROGRESS if gc.manager.loading else E.NONE
    return Response(throttle_time_ms=0, error_code=err, groups=[
        Response.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type,
                             group_state=g.state if v >= 4 else "",
                             group_type=g.group_type if v >= 5 else "")
        for g in groups])

