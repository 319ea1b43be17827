"""UnregisterController (key 94), v0 (Kafka 4.4, KIP-853's controller removal), on the
controller listener: how ``kafka-cluster unregister``-style admin calls made with
``--bootstrap-controller`` reach the quorum (Kafka's ``ControllerApis`` serves the key on
both listener types, ``"listeners": ["broker", "controller"]``).

Rules kept (Kafka 4.4's ControllerApis and ClusterControlManager): ALTER on the cluster
(else CLUSTER_AUTHORIZATION_FAILED); a controller that is not the active one answers
NOT_CONTROLLER (the admin client retries on the leader it learns); on the active controller
the same decision as the broker listener (``kbroker.api.unregister_controller.decide``):
the active controller cannot remove itself (INVALID_REQUEST), an id outside the voters is
CONTROLLER_ID_NOT_REGISTERED, a registered voter answers NONE (kbroker keeps no separate
controller registrations, so nothing is written).
"""
from __future__ import annotations

from kbroker.api.unregister_controller import decide
from kbroker.authz.acls import ALTER
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.UnregisterControllerResponse


@controller_api(94, versions=(0, 0), cluster_operation=ALTER)
async def handle(ctx, request):
    controller = ctx.broker.controller
    if controller is None or not controller.active:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER, error_message=None)
    code, message = decide(ctx.broker, request.controller_id)
    return Response(throttle_time_ms=0, error_code=code, error_message=message)
