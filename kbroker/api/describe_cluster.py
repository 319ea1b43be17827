"""DescribeCluster (key 60), v0–v2: cluster id, controller id and brokers (KIP-700).

- v1 (KIP-919) has ``endpoint_type``: 1 (brokers) is answered; 2 (controllers) gets
  ``UNSUPPORTED_ENDPOINT_TYPE`` as from any Kafka broker.
- Brokers are listed with the endpoint of the listener the request arrived on.
- v2 (KIP-1073): ``include_fenced_brokers`` lists fenced brokers too, each broker with
  ``is_fenced``; without it only unfenced brokers are listed, as before.
Cluster authorized operations (KIP-430) from the ACLs.
"""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER
from kbroker.api import RequestContext, api
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.DescribeClusterResponse


@api(60, versions=(0, 2))
async def handle(ctx: RequestContext, request) -> Response:
    image = ctx.broker.metadata
    if ctx.version >= 1 and request.endpoint_type != 1:
        return Response(error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                        error_message="The endpoint type is not supported by a broker.",
                        endpoint_type=request.endpoint_type, cluster_id=image.cluster_id)
    brokers = []
    with_fenced = ctx.version >= 2 and request.include_fenced_brokers
    listed = image.brokers.values() if with_fenced else image.live_brokers()
    for b in sorted(listed, key=lambda b: b.node_id):
        ep = b.endpoint(ctx.listener) or (b.endpoints[0][1:] if b.endpoints else None)
        if ep is not None:
            entry = Response.DescribeClusterBroker(broker_id=b.node_id, host=ep[0],
                                                   port=ep[1], rack=b.rack)
            if ctx.version >= 2:
                entry.is_fenced = bool(b.fenced)
            brokers.append(entry)
    return Response(error_code=ErrorCode.NONE, cluster_id=image.cluster_id,
                    controller_id=image.controller_id, brokers=brokers,
                    cluster_authorized_operations=ctx.authorized_operations(
                        request.include_cluster_authorized_operations, CLUSTER, "kafka-cluster"),
                    endpoint_type=request.endpoint_type if ctx.version >= 1 else 1)
