"""Envelope (key 58, v0): a broker forwards a client's request with the client's principal
(KIP-590), so the controller authorizes and acts as that principal.

kbroker's brokers forward this way every client admin write they route to a remote
controller (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
IncrementalAlterConfigs, ElectLeaders, Alter/ListPartitionReassignments, AlterClientQuotas,
CreateAcls, DeleteAcls, AlterUserScramCredentials) and the delegation-token writes
(CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken: a token's owner and
requester, and who may renew or expire it, are the caller). ``request_data`` is the inner
request without its size prefix (header + body), ``request_principal`` Kafka's
version-prefixed ``DefaultPrincipalData`` (type, name, token-authenticated: what Kafka's
``DefaultKafkaPrincipalBuilder`` serializes), ``client_host_address`` the client's IP
address bytes (4 or 16); the answer's ``response_data`` is the inner response (header +
body).

The controller's checks, as Kafka's ``ControllerApis.handleEnvelopeRequest``: the sender
(the broker's own principal on the controller listener) needs CLUSTER_ACTION on the
cluster (else CLUSTER_AUTHORIZATION_FAILED); a principal that does not decode is
PRINCIPAL_DESERIALIZATION_FAILURE; an inner API this plane does not serve through
envelopes, a version it does not serve, or bytes that do not decode get INVALID_REQUEST; a
non-active controller NOT_CONTROLLER. The inner request then runs through the same handler
as a direct one, with the envelope's principal and client host on its context, so the
controller's authorizer decides for the client (an unauthorized forwarded CreateTopics gets
TOPIC_AUTHORIZATION_FAILED from the controller, as in Kafka).
"""
from __future__ import annotations

import ipaddress
import logging
import struct

from kbroker.api import RequestContext
from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.metadata.authz_control import TokenResult
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire.errors import WireError
from kbroker.wire.protocol import decode_request, decode_response, encode_request, encode_response

from .registry import CONTROLLER_REGISTRY, controller_api

log = logging.getLogger("kbroker.controller_server")

PRINCIPAL_VERSION = 0

# client admin APIs a broker forwards inside an envelope (served by ``forwarded``)
FORWARDED = frozenset({19, 20, 30, 31, 33, 37, 43, 44, 45, 46, 49, 51})
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


def host_bytes(client_host: str) -> bytes:
    """The client's address as Kafka puts it in an Envelope (``InetAddress.getAddress()``).
    A connection whose peer address could not be read ("unknown") is sent as 0.0.0.0: like
    "unknown" on the broker, it matches only ACLs for every host ("*")."""
    try:
        return ipaddress.ip_address(client_host).packed
    except ValueError:
        return bytes(4)


def host_text(raw) -> str | None:
    """The client's address back as text; None when it is not 4 or 16 bytes."""
    raw = bytes(raw or b"")
    if len(raw) not in (4, 16):
        return None
    address = ipaddress.ip_address(raw)
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


def wrap(api_key: int, version: int, body, principal: str, client_host: str, node_id: int,
         token_authenticated: bool = False, client_id: str | None = None):
    inner = encode_request(api_key, version, 0, client_id or f"broker-{node_id}", body)[4:]
    return messages.EnvelopeRequest(request_data=inner,
                                    request_principal=encode_principal(principal, token_authenticated),
                                    client_host_address=host_bytes(client_host))


def unwrap(api_key: int, version: int, resp):
    """The inner response of an EnvelopeResponse, or None when the envelope failed or the
    inner bytes do not decode (the caller routes again or gives up)."""
    if resp is None or resp.error_code or not resp.response_data:
        return None
    try:
        return decode_response(bytes(resp.response_data), api_key, version)[1]
    except WireError:
        return None


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
    if not ctx.authorize_cluster(CLUSTER_ACTION):
        return R(response_data=None, error_code=E.CLUSTER_AUTHORIZATION_FAILED)
    c = ctx.broker.controller
    if c is None or not c.active:
        return R(response_data=None, error_code=E.NOT_CONTROLLER)
    try:
        principal, token_auth = decode_principal(request.request_principal)
    except WireError as e:
        log.warning("bad envelope principal from %s: %s", ctx.client_host, e)
        return R(response_data=None, error_code=E.PRINCIPAL_DESERIALIZATION_FAILURE)
    client_host = host_text(request.client_host_address)
    try:
        header, inner = decode_request(bytes(request.request_data))
    except WireError as e:
        log.warning("bad envelope from %s: %s", ctx.client_host, e)
        return R(response_data=None, error_code=E.INVALID_REQUEST)
    handler = _INNER.get(header.api_key)
    if handler is None:
        spec = CONTROLLER_REGISTRY.get(header.api_key)
        if header.api_key in FORWARDED and spec is not None and \
                spec.min_version <= header.api_version <= spec.max_version:
            handler = spec.handler
    if handler is None or client_host is None:
        log.warning("envelope from %s refused: api key %d v%d, client address %r", ctx.client_host,
                    header.api_key, header.api_version, bytes(request.client_host_address or b""))
        return R(response_data=None, error_code=E.INVALID_REQUEST)
    inner_ctx = RequestContext(ctx.broker, header.api_key, header.api_version, header.correlation_id,
                               header.client_id, client_host, ctx.listener,
                               extra={"forwarded": True, "token_authenticated": token_auth},
                               principal=principal, security_protocol=ctx.security_protocol)
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
