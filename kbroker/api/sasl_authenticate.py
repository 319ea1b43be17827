"""SaslAuthenticate (key 36), v0–v2 (KIP-152; v1 adds session_lifetime_ms, KIP-368).

SASL tokens are exchanged by the connection's SASL state machine
(``kbroker.security.authenticator``) before authentication completes. A SaslAuthenticate
that reaches this module came on a listener without SASL or after authentication without a
new handshake: Kafka answers ``ILLEGAL_SASL_STATE``.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.security.sasl_versions import AUTHENTICATE_VERSIONS
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.SaslAuthenticateResponse


@api(36, versions=AUTHENTICATE_VERSIONS)
async def handle(ctx: RequestContext, request) -> Response:
    return Response(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                    error_message="SaslAuthenticate request received after successful authentication"
                    if ctx.security_protocol.startswith("SASL") else
                    f"Unexpected SaslAuthenticate request on a {ctx.security_protocol} listener",
                    auth_bytes=b"", session_lifetime_ms=0)
