"""UnregisterBroker (key 64), v0 (KIP-631, flexible): remove a broker's registration from the
cluster metadata — ``Admin.unregisterBroker``, ``kafka-cluster.sh unregister --id N`` (for a
broker that is gone for good).

Forwarded to the active controller (``ControllerChannel.unregister_broker``): the broker
leaves every ISR and its leaderships move (as when it is fenced), then an
``UnregisterBrokerRecord`` removes it from the image, so Metadata and DescribeCluster stop
listing it. An id that is not registered answers ``BROKER_ID_NOT_REGISTERED``. A broker that
is still running re-registers when its next heartbeat is refused, as Kafka's do.

ACLs (``kbroker.authz``): ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.UnregisterBrokerResponse


@api(64, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize_cluster(ALTER):
        return Response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=None)
    code, message = await ctx.broker.controller.unregister_broker(request.broker_id)
    return Response(throttle_time_ms=0, error_code=code, error_message=message)
