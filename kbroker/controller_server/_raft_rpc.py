"""Shared plumbing of the Raft RPC handlers: decode → step the core → encode."""
from __future__ import annotations

from kbroker.raft.wire_map import NotForRaft
from kbroker.wire.error_codes import ErrorCode


async def step(ctx, request, from_wire, to_wire, error_response, timeout=None):
    quorum = ctx.broker.quorum
    cid = getattr(request, "cluster_id", None)
    if cid is not None and cid != quorum.cluster_id:
        return error_response(ErrorCode.INCONSISTENT_CLUSTER_ID)
    try:
        msg = from_wire(request)
    except NotForRaft:
        return error_response(ErrorCode.INVALID_REQUEST)
    answer = await quorum.driver.handle_request(msg, timeout)
    if answer is None:
        return error_response(ErrorCode.REQUEST_TIMED_OUT)
    return to_wire(answer)
