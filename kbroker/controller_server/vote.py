"""Vote (key 52), v0–v2 (v2: KIP-996 ``PreVote``), on the controller listener: handed to the Raft core
(KIP-595/KIP-630) through the driver; conversions in ``kbroker.raft.wire_map``.
The answer is the core's; a request for another cluster is ``INCONSISTENT_CLUSTER_ID``.
KIP-853 (v1+): the candidate's and the voter's directory ids are carried (not checked against
this node's); the answer names the leader's endpoint in ``NodeEndpoints``."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.raft import wire_map
from kbroker.wire import messages

from ._raft_rpc import step
from .registry import controller_api


@controller_api(52, versions=(0, 2), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    def answer_to_wire(answer):     # v1+: the leader's endpoint in NodeEndpoints (KIP-853)
        return wire_map.vote_response_to_wire(answer, ctx.broker.quorum.node_endpoints(
            52, ctx.version, messages.VoteResponse, answer.leader_id))
    return await step(ctx, request, wire_map.vote_request_from_wire, answer_to_wire,
                      lambda code: messages.VoteResponse(error_code=code, topics=[]))
