"""SaslHandshake (key 17), v0–v1 (KIP-43; v1: tokens in SaslAuthenticate, KIP-152).

On a SASL listener the handshake never reaches this module: the connection's SASL state
machine (``kbroker.security.authenticator``) answers it before authentication and for
re-authentication (KIP-368). Here it arrives on PLAINTEXT/SSL listeners — a client
configured for SASL against a listener without it — and is answered ``ILLEGAL_SASL_STATE``
with no mechanisms, as Kafka's ``KafkaApis`` does (not a silent close).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.security.sasl_versions import HANDSHAKE_VERSIONS
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.SaslHandshakeResponse


@api(17, versions=HANDSHAKE_VERSIONS)
async def handle(ctx: RequestContext, request) -> Response:
    return Response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
