"""AllocateProducerIds (key 67), v0 (KIP-730), on the controller listener: a block of
producer ids for a broker, reserved by a ``ProducerIdsRecord`` before it is answered.
``NOT_CONTROLLER`` off the active controller."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.metadata.controller import PRODUCER_ID_BLOCK
from kbroker.metadata.quorum_controller import NotController
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.AllocateProducerIdsResponse


@controller_api(67, versions=(0, 0), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    c = ctx.broker.controller
    if c is None or not c.active:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER)
    b = c.image.brokers.get(request.broker_id)
    if b is None or b.broker_epoch != request.broker_epoch:
        return Response(throttle_time_ms=0, error_code=ErrorCode.STALE_BROKER_EPOCH)
    try:
        first, count = await c.allocate_producer_ids(PRODUCER_ID_BLOCK)
    except NotController:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER)
    return Response(throttle_time_ms=0, error_code=0, producer_id_start=first, producer_id_len=count)
