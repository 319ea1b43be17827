"""Shared by AddRaftVoter/RemoveRaftVoter on client listeners (KIP-853): answered here when
this node leads the metadata quorum, else forwarded to the leader's controller listener, as
Kafka's brokers forward them to the controller. ACLs: ALTER on the cluster."""
from __future__ import annotations

from kbroker.authz.acls import ALTER
from kbroker.wire.error_codes import ErrorCode


async def forward(ctx, request, api_key: int, local, response_cls):
    if not ctx.authorize_cluster(ALTER):
        return response_cls(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message=None)
    quorum = ctx.broker.quorum
    if quorum.driver.is_leader:
        return await local(quorum, request, ctx.version)
    leader = quorum.leader_id
    addr = quorum.controller_endpoint(leader) if leader >= 0 else None
    if addr is not None:
        resp = await quorum.rpc.call_addr(addr, api_key, ctx.version, request, 60.0)
        if resp is not None:
            return resp
    return response_cls(throttle_time_ms=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                        error_message="No leader of the metadata quorum is known.")
