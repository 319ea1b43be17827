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

import logging

from kbroker.api import RequestContext
from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire.errors import WireError
from kbroker.wire.envelope import FORWARDED, decode_principal, host_text
from kbroker.wire.protocol import decode_request, encode_response

from .registry import CONTROLLER_REGISTRY, controller_api

log = logging.getLogger("kbroker.controller_server")

# inner APIs served through envelopes: key -> handler (set below, from kbroker.api)
_INNER: dict = {}


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
