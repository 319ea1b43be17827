"""Shared plumbing of the Raft RPC handlers: decode → step the core → encode."""
from __future__ import annotations

import logging

from kbroker.raft.wire_map import NotForRaft
from kbroker.wire.error_codes import ErrorCode

log = logging.getLogger("kbroker.raft")


def _warn_once(quorum, key, fmt, *args) -> None:
    seen = quorum.__dict__.setdefault("_warned_peers", set())
    if key not in seen:
        seen.add(key)
        log.warning(fmt, *args)


async def step(ctx, request, from_wire, to_wire, error_response, timeout=None):
    quorum = ctx.broker.quorum
    cid = getattr(request, "cluster_id", None)
    if cid is not None and cid != quorum.cluster_id:
        _warn_once(quorum, ("cluster", cid), "raft: a peer of cluster %s (%s) called this node of "
                   "cluster %s: format every node with the same cluster id", cid, ctx.client_host,
                   quorum.cluster_id)
        return error_response(ErrorCode.INCONSISTENT_CLUSTER_ID)
    voter_id = getattr(request, "voter_id", -1)
    if voter_id is not None and voter_id >= 0 and voter_id != quorum.node_id:
        # Kafka 4 names the receiver (KIP-853's voter key): a peer that believes this node
        # is another voter has a different controller.quorum.voters or this node.id is wrong
        _warn_once(quorum, ("voter", voter_id), "raft: a peer (%s) addressed this node as voter "
                   "%d but its node.id is %d: check node.id and controller.quorum.voters",
                   ctx.client_host, voter_id, quorum.node_id)
        return error_response(ErrorCode.INVALID_VOTER_KEY)
    try:
        msg = from_wire(request)
    except NotForRaft:
        return error_response(ErrorCode.INVALID_REQUEST)
    answer = await quorum.driver.handle_request(msg, timeout)
    if answer is None:
        return error_response(ErrorCode.REQUEST_TIMED_OUT)
    return to_wire(answer)
