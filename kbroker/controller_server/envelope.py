"""Envelope (key 58, v0): a broker forwards a client's request with the client's principal
(KIP-590), so the controller acts as that principal.

kbroker forwards delegation-token writes this way (CreateDelegationToken,
RenewDelegationToken, ExpireDelegationToken: the token's owner and requester, and who may
renew or expire it, are the caller). ``request_data`` is the inner request without its size
prefix (header + body), ``request_principal`` Kafka's version-prefixed
``DefaultPrincipalData``; the answer's ``response_data`` is the inner response (header +
body). An inner API this plane does not serve through envelopes, or bytes that do not
decode, get INVALID_REQUEST; a non-active controller NOT_CONTROLLER.
"""
from __future__ import annotations

import logging
import struct

from kbroker.api import RequestContext
from kbroker.metadata.authz_control import TokenResult
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire.errors import WireError
from kbroker.wire.protocol import decode_request, decode_response, encode_request, encode_response

from .registry import controller_api

log = logging.getLogger("kbroker.controller_server")

PRINCIPAL_VERSION = 0
# inner APIs served through envelopes: key -> handler (set below, from kbroker.api)
_INNER: dict = {}


def encode_principal(principal: str, token_authenticated: bool = False) -> bytes:
    kind, _, name = principal.partition(":")
    data = messages.DefaultPrincipalData(type=kind, name=name, token_authenticated=token_authenticated)
    return struct.pack(">h", PRINCIPAL_VERSION) + data.encode(PRINCIPAL_VERSION)


def decode_principal(raw) -> tuple[str, bool]:
    view = memoryview(raw)
    if len(view) < 2:
        raise WireError("principal data too short")
    version = struct.unpack_from(">h", view)[0]
    d = messages.DefaultPrincipalData.decode(view, version, 2)
    return f"{d.type}:{d.name}", bool(d.token_authenticated)


def wrap(api_key: int, version: int, body, principal: str, client_host: str, node_id: int):
    inner = encode_request(api_key, version, 0, f"broker-{node_id}", body)[4:]
    return messages.EnvelopeRequest(request_data=inner, request_principal=encode_principal(principal),
                                    client_host_address=b"")


def parse_token_response(api_key: int, version: int, resp) -> TokenResult | None:
    """The TokenResult inside an EnvelopeResponse (None when it cannot be read)."""
    if resp.error_code or not resp.response_data:
        return TokenResult(resp.error_code or E.UNKNOWN_SERVER_ERROR)
    try:
        _, r = decode_response(bytes(resp.response_data), api_key, version)
    except WireError:
        return None
    if api_key == 38:
        from kbroker.authz.tokens import TokenInfo
        if r.error_code:
            return TokenResult(r.error_code)
        owner = f"{r.principal_type}:{r.principal_name}"
        requester = f"{r.token_requester_principal_type}:{r.token_requester_principal_name}"
        token = TokenInfo(r.token_id, owner, requester, (), r.issue_timestamp_ms,
                          r.max_timestamp_ms, r.expiry_timestamp_ms)
        return TokenResult(E.NONE, token, r.expiry_timestamp_ms)
    return TokenResult(r.error_code, None, r.expiry_timestamp_ms)


@controller_api(58, versions=(0, 0))
async def handle(ctx, request):
    R = messages.EnvelopeResponse
    c = ctx.broker.controller
    if c is None or not c.active:
        return R(response_data=None, error_code=E.NOT_CONTROLLER)
    try:
        header, inner = decode_request(bytes(request.request_data))
        principal, token_auth = decode_principal(request.request_principal)
    except WireError as e:
        log.warning("bad envelope from %s: %s", ctx.client_host, e)
        return R(response_data=None, error_code=E.INVALID_REQUEST)
    handler = _INNER.get(header.api_key)
    if handler is None:
        return R(response_data=None, error_code=E.INVALID_REQUEST)
    inner_ctx = RequestContext(ctx.broker, header.api_key, header.api_version, header.correlation_id,
                               header.client_id, ctx.client_host, ctx.listener,
                               extra={"forwarded": True, "token_authenticated": token_auth},
                               principal=principal)
    from kbroker.metadata.quorum_controller import NotController
    try:
        body = await handler(inner_ctx, inner)
    except NotController:
        return R(response_data=None, error_code=E.NOT_CONTROLLER)
    data = b"".join(encode_response(header.api_key, header.api_version, header.correlation_id, body))
    return R(response_data=data[4:], error_code=E.NONE)


def _register_inner() -> None:
    from kbroker.api import create_delegation_token, expire_delegation_token, renew_delegation_token
    _INNER[38] = create_delegation_token.handle
    _INNER[39] = renew_delegation_token.handle
    _INNER[40] = expire_delegation_token.handle


_register_inner()
