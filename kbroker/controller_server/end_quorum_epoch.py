"""EndQuorumEpoch (key 54), v0–v1, on the controller listener: handed to the Raft core
(KIP-595/KIP-630) through the driver; conversions in ``kbroker.raft.wire_map``.
The answer is the core's; a request for another cluster is ``INCONSISTENT_CLUSTER_ID``.
KIP-853 (v1): ``PreferredCandidates`` with directory ids and the leader's ``LeaderEndpoints``;
the answer names the leader's endpoint in ``NodeEndpoints``."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.raft import wire_map
from kbroker.wire import messages

from ._raft_rpc import step
from .registry import controller_api


@controller_api(54, versions=(0, 1), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    def answer_to_wire(answer):     # v1+: the leader's endpoint in NodeEndpoints (KIP-853)
        return wire_map.end_response_to_wire(answer, ctx.broker.quorum.node_endpoints(
            54, ctx.version, messages.EndQuorumEpochResponse, answer.leader_id))
    return await step(ctx, request, wire_map.end_request_from_wire, answer_to_wire,
                      lambda code: messages.EndQuorumEpochResponse(error_code=code, topics=[]))
