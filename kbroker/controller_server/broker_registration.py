"""BrokerRegistration (key 62), v0–v4 (KIP-631), on the controller listener: a broker joins
the cluster. The active controller writes a fenced ``RegisterBrokerRecord`` whose offset is
the broker epoch (same incarnation id: the same epoch again) and answers that epoch; the
broker is unfenced by a later heartbeat. ``NOT_CONTROLLER`` when this node is not active,
``INCONSISTENT_CLUSTER_ID`` for another cluster, ``UNSUPPORTED_VERSION`` for a broker whose
feature ranges leave out a finalized level (the ranges are kept in the registration, and
UpdateFeatures checks every registered broker against them), ``INVALID_REGISTRATION`` for
one that lists no ``metadata.version`` range. A controller that has just become active
writes the bootstrap feature levels before it checks the first registration (Kafka's order),
so no broker of a new cluster is refused for "finalized version 0 of metadata.version".
v2's ``LogDirs`` (KIP-858) are recorded in the registration from ``metadata.version``
3.7-IV2 on; there a registration without them, with a reserved or repeated id, or with
another broker's directory is ``INVALID_REGISTRATION``, as in Kafka. v3's
``PreviousBrokerEpoch`` (KIP-966) tells a clean restart from an unclean one; below v3 every
new incarnation counts as unclean, as Kafka's controller decides. Not implemented:
ZooKeeper migration fields."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.metadata.quorum_controller import NotController
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.BrokerRegistrationResponse


@controller_api(62, versions=(0, 4), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    c = ctx.broker.controller
    if c is None or not c.active:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER, broker_epoch=-1)
    try:
        code, epoch = await c.register_broker(
            request.broker_id, request.cluster_id, request.incarnation_id,
            [(l.name, l.host, l.port) for l in request.listeners or ()], request.rack,
            [(f.name, f.min_supported_version, f.max_supported_version) for f in request.features or ()],
            log_dirs=list(getattr(request, "log_dirs", None) or ()),
            previous_broker_epoch=request.previous_broker_epoch if ctx.version >= 3 else None)
    except NotController:
        code, epoch = ErrorCode.NOT_CONTROLLER, -1
    return Response(throttle_time_ms=0, error_code=code, broker_epoch=epoch)
