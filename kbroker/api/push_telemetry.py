"""PushTelemetry (key 72), v0: a client pushes its metrics (KIP-714).

kbroker's subscriptions are empty (:mod:`kbroker.api.get_telemetry_subscriptions`), so a
well-behaved client never pushes; a push is checked and dropped:

- a zero ``client_instance_id`` → ``INVALID_REQUEST``;
- a ``subscription_id`` other than the current one → ``UNKNOWN_SUBSCRIPTION_ID`` (the client
  fetches its subscription again);
- an unknown compression type → ``UNSUPPORTED_COMPRESSION_TYPE``; metrics larger than
  ``telemetry.max.bytes`` → ``TELEMETRY_TOO_LARGE``;
- otherwise NONE, and the metrics are discarded (there is no receiver).
Not listed in ApiVersions (see GetTelemetrySubscriptions). Not implemented: the push-interval
throttle (a client pushing too early is not refused).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api.get_telemetry_subscriptions import (ACCEPTED_COMPRESSIONS, EMPTY_SUBSCRIPTION_ID,
                                                     telemetry_max_bytes)
from kbroker.metadata.image import ZERO_UUID
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.PushTelemetryResponse


@api(72, versions=(0, 0), advertised=False)
async def handle(ctx: RequestContext, request) -> Response:
    if request.client_instance_id is None or request.client_instance_id == ZERO_UUID:
        code = ErrorCode.INVALID_REQUEST
    elif request.subscription_id != EMPTY_SUBSCRIPTION_ID:
        code = ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    elif request.compression_type not in [0, *ACCEPTED_COMPRESSIONS]:
        code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    elif len(request.metrics or b"") > telemetry_max_bytes(ctx):
        code = ErrorCode.TELEMETRY_TOO_LARGE
    else:
        code = ErrorCode.NONE
    return Response(throttle_time_ms=0, error_code=code)
