"""BrokerHeartbeat (key 63), v0–v2 (KIP-631), on the controller listener: keeps a broker's
session alive; a caught-up fenced broker asking to run is unfenced; ``want_shut_down``
fences it and moves its leaderships (controlled shutdown). ``STALE_BROKER_EPOCH`` for an
epoch that is not the broker's current registration, ``NOT_CONTROLLER`` off the active
controller. v1's ``OfflineLogDirs`` (KIP-858): the replicas the partition records assign to
those directories leave their ISRs, their leaderships move, and the broker's remaining online
dirs are recorded (``QuorumController._handle_offline_dirs``); brokers repeat the list in
every heartbeat, and a directory already recorded offline changes nothing. v2's
``CordonedLogDirs`` (KIP-1066, from metadata.version 4.3-IV0): a list that differs from the
one registered is written (``BrokerRegistrationChangeRecord``); null changes nothing."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.metadata.quorum_controller import NotController
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.BrokerHeartbeatResponse


@controller_api(63, versions=(0, 2), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    c = ctx.broker.controller
    if c is None or not c.active:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER)
    try:
        code, caught_up, fenced, shut = await c.heartbeat(
            request.broker_id, request.broker_epoch, request.current_metadata_offset,
            request.want_fence, request.want_shut_down,
            offline_dirs=tuple(getattr(request, "offline_log_dirs", None) or ()),
            cordoned_dirs=getattr(request, "cordoned_log_dirs", None))
    except NotController:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER)
    return Response(throttle_time_ms=0, error_code=code, is_caught_up=caught_up, is_fenced=fenced,
                    should_shut_down=shut)
