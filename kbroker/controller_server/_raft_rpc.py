"""Shared plumbing of the Raft RPC handlers: decode → step the core → encode.

Misconfigured peers are named to the operator here, on the receiving side, once per peer
and kind (never once per retry), each line with the fix: a caller of another cluster
(INCONSISTENT_CLUSTER_ID), a caller that addresses this node as another voter
(INVALID_VOTER_KEY, KIP-853's voter key: a wrong ``node.id`` or a voters entry pointing at
the wrong node), and a candidate that asks for a vote although it is not one of this node's
voters (INCONSISTENT_VOTER_SET: the nodes' ``controller.quorum.voters`` differ). The caller
logs its side in ``kbroker.raft.driver``.
"""
from __future__ import annotations

import logging

from kbroker.raft import messages as m
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
                   "%d but its node.id is %d: check node.id here and the peer's "
                   "controller.quorum.voters entry for %d (the two may be swapped)",
                   ctx.client_host, voter_id, quorum.node_id, voter_id)
        return error_response(ErrorCode.INVALID_VOTER_KEY)
    try:
        msg = from_wire(request)
    except NotForRaft:
        return error_response(ErrorCode.INVALID_REQUEST)
    answer = await quorum.driver.handle_request(msg, timeout)
    if answer is None:
        return error_response(ErrorCode.REQUEST_TIMED_OUT)
    if isinstance(msg, m.VoteRequest) and answer.error_code == m.INCONSISTENT_VOTER_SET:
        _warn_once(quorum, ("vote", msg.candidate_id), "raft: node %d (%s) asked for a vote but is "
                   "not in this node's controller.quorum.voters %s: give every node the same "
                   "controller.quorum.voters", msg.candidate_id, ctx.client_host,
                   ",".join(str(v) for v in sorted(quorum.voters)))
    return to_wire(answer)
