"""DescribeCluster (key 60), v0–v1, on the controller listener (KIP-919): what an admin
client bootstrapped with ``--bootstrap-controller`` asks first. Endpoint type 2
(controllers) lists the voters with their controller endpoints (a single node its own
controller listener) and names the quorum leader as controller; endpoint type 1 (brokers)
lists the live brokers of the image.
Cluster authorized operations are answered as with no authorizer (all allowed)."""
from __future__ import annotations

from kbroker.api._authorized import CLUSTER_OPERATIONS, authorized
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.DescribeClusterResponse
CONTROLLERS = 2


@controller_api(60, versions=(0, 1))
async def handle(ctx, request):
    plane = ctx.broker
    quorum = plane.quorum
    image = quorum.image
    etype = request.endpoint_type if ctx.version >= 1 else 1
    if etype == CONTROLLERS:
        brokers = []
        for vid in sorted(quorum.voters):
            # a single node formatted without voters (controller.quorum.bootstrap.servers
            # naming itself) knows its own controller listener, not a voters entry
            addr = quorum.voter_endpoints.get(vid) or quorum.endpoint_of(vid)
            if addr is not None:
                brokers.append(Response.DescribeClusterBroker(broker_id=vid, host=addr[0], port=addr[1],
                                                              rack=None))
        controller = quorum.leader_id
    else:
        brokers = []
        for b in sorted(image.live_brokers(), key=lambda b: b.node_id):
            if b.endpoints:
                brokers.append(Response.DescribeClusterBroker(broker_id=b.node_id, host=b.endpoints[0][1],
                                                              port=b.endpoints[0][2], rack=b.rack))
        controller = image.controller_id
    resp = Response(error_code=ErrorCode.NONE, cluster_id=image.cluster_id, controller_id=controller,
                    brokers=brokers, cluster_authorized_operations=authorized(
                        request.include_cluster_authorized_operations, CLUSTER_OPERATIONS))
    if ctx.version >= 1:
        resp.endpoint_type = etype
    return resp
