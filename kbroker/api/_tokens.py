"""What the delegation-token API modules share (Kafka's ``KafkaApis`` token checks)."""
from __future__ import annotations

from kbroker.wire.error_codes import ErrorCode as E


def security_protocol(ctx) -> str:
    """The request's security protocol: set by the connection when it knows it, else the
    listener's entry in ``listener.security.protocol.map`` (PLAINTEXT by default)."""
    proto = ctx.extra.get("security_protocol")
    if proto:
        return proto
    name = (ctx.listener or "").upper()
    for entry in ctx.broker.config.get("listener.security.protocol.map") or ():
        n, _, p = entry.partition(":")
        if n.strip().upper() == name:
            return p.strip().upper()
    return "PLAINTEXT"


def refusal(ctx) -> int | None:
    """Kafka's ``allowTokenRequests``, then the secret check: token requests need an
    authenticated channel (not PLAINTEXT, not one-way SSL as ANONYMOUS, not itself
    token-authenticated; else DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), then
    ``delegation.token.secret.key`` (else DELEGATION_TOKEN_AUTH_DISABLED). A request a broker forwarded
    through an Envelope was checked there."""
    if not ctx.extra.get("forwarded"):
        proto = security_protocol(ctx)
        if ctx.extra.get("token_authenticated") or proto == "PLAINTEXT" or \
                (proto == "SSL" and ctx.principal == "User:ANONYMOUS"):
            return E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    if not ctx.broker.config.get("delegation.token.secret.key"):
        return E.DELEGATION_TOKEN_AUTH_DISABLED
    return None
