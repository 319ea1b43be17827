"""BeginQuorumEpoch (key 53), v0–v1, on the controller listener: handed to the Raft core
(KIP-595/KIP-630) through the driver; conversions in ``kbroker.raft.wire_map``.
The answer is the core's; a request for another cluster is ``INCONSISTENT_CLUSTER_ID``.
KIP-853 (v1): the leader's ``LeaderEndpoints`` are handed to the driver (a dynamic quorum
follows them), the answer names the leader's endpoint in ``NodeEndpoints``."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.raft import wire_map
from kbroker.wire import messages

from ._raft_rpc import step
from .registry import controller_api


@controller_api(53, versions=(0, 1), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    def answer_to_wire(answer):     # v1+: the leader's endpoint in NodeEndpoints (KIP-853)
        return wire_map.begin_response_to_wire(answer, ctx.broker.quorum.node_endpoints(
            53, ctx.version, messages.BeginQuorumEpochResponse, answer.leader_id))
    return await step(ctx, request, wire_map.begin_request_from_wire, answer_to_wire,
                      lambda code: messages.BeginQuorumEpochResponse(error_code=code, topics=[]))
