"""DescribeDelegationToken (key 41), v1–v3: the live tokens of the given owners (null: all;
empty list: none) that the caller owns, requested, may renew, or may DESCRIBE (DELEGATION_TOKEN
resource named after the token id) — Kafka's ``DelegationTokenManager.getTokens`` filter.
Read from this broker's metadata image; the HMAC is recomputed from
``delegation.token.secret.key``. Channel checks as CreateDelegationToken. v0 (removed by
KIP-896) is not served.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._tokens import refusal
from kbroker.authz.acls import DELEGATION_TOKEN, DESCRIBE
from kbroker.authz.tokens import compute_hmac, split_principal
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.DescribeDelegationTokenResponse
Token = Response.DescribedDelegationToken


@api(41, versions=(1, 3))
async def handle(ctx: RequestContext, request) -> Response:
    code = refusal(ctx)
    if code is not None:
        return Response(error_code=code, tokens=[], throttle_time_ms=0)
    owners = None if request.owners is None else \
        {f"{o.principal_type}:{o.principal_name}" for o in request.owners}
    secret = ctx.broker.config.get("delegation.token.secret.key")
    now = ctx.broker.now_ms()
    out = []
    for t in sorted(ctx.broker.metadata.delegation_tokens.values(), key=lambda t: t.issue_timestamp):
        if t.expiry_timestamp < now or (owners is not None and t.owner not in owners):
            continue
        if not (t.owner_or_renewer(ctx.principal) or ctx.authorize(DESCRIBE, DELEGATION_TOKEN, t.token_id)):
            continue
        kind, name = split_principal(t.owner)
        rkind, rname = split_principal(t.requester) if ctx.version >= 3 else ("", "")
        out.append(Token(
            principal_type=kind, principal_name=name, token_requester_principal_type=rkind,
            token_requester_principal_name=rname, issue_timestamp=t.issue_timestamp,
            expiry_timestamp=t.expiry_timestamp, max_timestamp=t.max_timestamp,
            token_id=t.token_id, hmac=compute_hmac(secret, t.token_id),
            renewers=[Token.DescribedDelegationTokenRenewer(principal_type=split_principal(r)[0],
                                                            principal_name=split_principal(r)[1])
                      for r in t.renewers]))
    return Response(error_code=E.NONE, tokens=out, throttle_time_ms=0)
