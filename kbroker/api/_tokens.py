"""What the delegation-token API modules share (Kafka's ``KafkaApis`` token checks)."""
from __future__ import annotations

from kbroker.wire.error_codes import ErrorCode as E


def security_protocol(ctx) -> str:
    """The request's security protocol, as the connection set it (``ctx.security_protocol``;
    in-process callers may put one in ``ctx.extra``)."""
    return ctx.extra.get("security_protocol") or ctx.security_protocol


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
