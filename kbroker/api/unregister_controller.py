"""UnregisterController (key 94), v0 (Kafka 4.4): remove a controller's registration from the
cluster metadata (an administrator's call, for a controller that is gone for good).

Kafka's rules, as Kafka 4.4 answers them: the active controller cannot unregister itself
(INVALID_REQUEST, "Controller cannot unregister itself while it is active."); an id that is no
registered controller answers CONTROLLER_ID_NOT_REGISTERED (136, "Controller ID N is not
currently registered."). kbroker's registered controllers are the voters of the metadata
quorum (every Kafka voter registers itself; kbroker keeps no separate
ControllerRegistration/RegisterControllerRecord state), so unregistering a voter that is not
the active controller succeeds and leaves nothing to remove: its endpoints come from the voter
set, as a running Kafka controller re-registers at once.

ACLs (``kbroker.authz``): ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
Not implemented: UnregisterControllerRecord (kbroker writes no controller registrations).
"""
from __future__ import annotations

import logging

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.UnregisterControllerResponse
log = logging.getLogger("kbroker.api")


def registered_controllers(broker) -> frozenset:
    quorum = getattr(broker, "quorum", None)
    voters = getattr(quorum, "voters", None)
    if voters:
        return frozenset(voters)
    active = broker.metadata.controller_id
    return frozenset() if active is None or active < 0 else frozenset({active})


def decide(broker, cid: int) -> tuple[int, str | None]:
    """Kafka's rule for unregistering controller ``cid`` on a node whose view is ``broker``
    (the client plane's broker or the controller plane): (error code, message). Shared by
    this module and ``kbroker/controller_server/unregister_controller.py``."""
    if cid == broker.metadata.controller_id:
        return ErrorCode.INVALID_REQUEST, "Controller cannot unregister itself while it is active."
    if cid not in registered_controllers(broker):
        return ErrorCode.CONTROLLER_ID_NOT_REGISTERED, f"Controller ID {cid} is not currently registered."
    log.info("UnregisterController %d: a voter of the quorum, nothing registered to remove", cid)
    return ErrorCode.NONE, None


@api(94, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize_cluster(ALTER):
        return Response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=None)
    code, message = decide(ctx.broker, request.controller_id)
    return Response(throttle_time_ms=0, error_code=code, error_message=message)
