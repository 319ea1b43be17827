"""DeleteGroups (key 42), v0–v3: delete Empty groups and their committed offsets.

Per group: ``GROUP_ID_NOT_FOUND`` when unknown, ``NON_EMPTY_GROUP`` while it has members,
``INVALID_GROUP_ID`` for an empty id. Deletion writes offset and group tombstones to
``__consumer_offsets``; a deleted share group's share-partition states (the partitions its
ShareGroupStatePartitionMetadata lists) are deleted from ``__share_group_state`` where this
node leads their state partition (a recreated group starts afresh, as in Kafka).

v3 (Kafka 4.4) adds a per-group ``ErrorMessage``: null for every error kbroker answers, as
Kafka 4.4 answers GROUP_ID_NOT_FOUND and NON_EMPTY_GROUP (observed). Kafka's
GROUP_DELETION_FAILED (134) is for a deletion that fails part-way; kbroker has no such case.

ACLs (``kbroker.authz``): DELETE on each group (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_names
from kbroker.authz.acls import DELETE, GROUP
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.group.service import coordinator_of
from kbroker.share.service import share_groups_among
from kbroker.wire import messages

Response = messages.DeleteGroupsResponse


@api(42, versions=(0, 3))
async def handle(ctx: RequestContext, request) -> Response:
    denied = denied_names(ctx, DELETE, GROUP, request.groups_names)
    names = [g for g in request.groups_names if g not in denied]
    sg = share_groups_among(ctx.broker, names)
    shared = {g: dict(grp.initialized) for g, grp in sg.groups.items() if g in names} if sg else {}
    results = await coordinator_of(ctx.broker).delete_groups(names) if names else []
    for gid, code in results:
        if code == E.NONE and gid in shared:
            _delete_share_state(ctx.broker, gid, shared[gid])
    results = list(results) + [
        (g, E.GROUP_AUTHORIZATION_FAILED) for g in request.groups_names if g in denied]
    return Response(throttle_time_ms=0, results=[
        Response.DeletableGroupResult(group_id=g, error_code=e) for g, e in results])


def _delete_share_state(broker, group_id: str, initialized: dict) -> None:
    from kbroker.api._share_admin import reset
    for tid, (_name, partitions) in initialized.items():
        for p in partitions:
            reset(broker, group_id, tid, p, None)
