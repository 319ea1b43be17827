"""GetTelemetrySubscriptions (key 71), v0: the client-metrics subscription of a client (KIP-714).

kbroker has no telemetry receiver, so every client gets a valid, empty subscription: no
requested metrics, so a client pushes nothing. As Kafka without a ``ClientTelemetry``
metrics reporter, the API is not listed in ApiVersions (clients then never ask); a client
that calls it anyway is served:

- a zero ``client_instance_id`` gets a fresh one (KIP-714: the broker assigns it);
- ``subscription_id`` is a stable hash of the (empty) subscription, so it never changes;
- accepted compressions zstd, lz4, gzip, snappy; ``push_interval_ms`` 300000 (Kafka's default
  interval); ``telemetry_max_bytes`` = ``telemetry.max.bytes``; delta temporality.
Push rules live in :mod:`kbroker.api.push_telemetry`.
"""
from __future__ import annotations

import uuid
import zlib

from kbroker.api import RequestContext, api
from kbroker.metadata.image import ZERO_UUID
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.GetTelemetrySubscriptionsResponse
ACCEPTED_COMPRESSIONS = [4, 3, 1, 2]      # zstd, lz4, gzip, snappy
PUSH_INTERVAL_MS = 300_000
EMPTY_SUBSCRIPTION_ID = zlib.crc32(b"kbroker-client-metrics:") & 0x7FFFFFFF


def telemetry_max_bytes(ctx: RequestContext) -> int:
    try:
        return int(ctx.broker.config.get("telemetry.max.bytes"))
    except (KeyError, AttributeError, TypeError, ValueError):
        return 1_048_576


@api(71, versions=(0, 0), advertised=False)
async def handle(ctx: RequestContext, request) -> Response:
    instance = request.client_instance_id
    if instance is None or instance == ZERO_UUID:
        instance = uuid.uuid4()
    return Response(throttle_time_ms=0, error_code=ErrorCode.NONE, client_instance_id=instance,
                    subscription_id=EMPTY_SUBSCRIPTION_ID,
                    accepted_compression_types=list(ACCEPTED_COMPRESSIONS),
                    push_interval_ms=PUSH_INTERVAL_MS, telemetry_max_bytes=telemetry_max_bytes(ctx),
                    delta_temporality=True, requested_metrics=[])
