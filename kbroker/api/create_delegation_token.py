"""CreateDelegationToken (key 38), v1–v3: a token for the caller or, v3 (KIP-373), for an
owner the caller may CREATE_TOKENS for (USER resource named after the owner).

Kafka's checks, in order: an authenticated, non-token channel
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED — so never over PLAINTEXT); ``delegation.token.secret.key``
set (DELEGATION_TOKEN_AUTH_DISABLED); owner and renewers of principal type ``User`` (INVALID_PRINCIPAL_TYPE); another
owner needs CREATE_TOKENS on it (DELEGATION_TOKEN_AUTHORIZATION_FAILED). The controller writes
a ``DelegationTokenRecord`` (``kbroker.authz.tokens``); the answer carries the HMAC.
v0 (removed by KIP-896) is not served.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._tokens import refusal
from kbroker.authz.acls import CREATE_TOKENS, USER
from kbroker.authz.tokens import compute_hmac, split_principal
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.CreateDelegationTokenResponse


@api(38, versions=(1, 3))
async def handle(ctx: RequestContext, request) -> Response:
    requester = ctx.principal
    owner = requester
    if ctx.version >= 3 and request.owner_principal_name:
        owner = f"{request.owner_principal_type}:{request.owner_principal_name}"
    kind, name = split_principal(owner)
    rkind, rname = split_principal(requester) if ctx.version >= 3 else ("", "")   # v3+ fields

    def error(code: int) -> Response:
        return Response(error_code=code, principal_type=kind, principal_name=name,
                        token_requester_principal_type=rkind, token_requester_principal_name=rname,
                        issue_timestamp_ms=-1, expiry_timestamp_ms=-1, max_timestamp_ms=-1,
                        token_id="", hmac=b"", throttle_time_ms=0)
    code = refusal(ctx)
    if code is not None:
        return error(code)
    renewers = [f"{r.principal_type}:{r.principal_name}" for r in request.renewers or ()]
    if kind != "User" or any(r.principal_type != "User" for r in request.renewers or ()):
        return error(E.INVALID_PRINCIPAL_TYPE)
    if owner != requester and not ctx.authorize(CREATE_TOKENS, USER, owner):
        return error(E.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    res = await ctx.broker.controller.create_delegation_token(owner, requester, renewers,
                                                              request.max_lifetime_ms)
    if res.error_code:
        return error(res.error_code)
    t = res.token
    return Response(error_code=E.NONE, principal_type=kind, principal_name=name,
                    token_requester_principal_type=rkind, token_requester_principal_name=rname,
                    issue_timestamp_ms=t.issue_timestamp, expiry_timestamp_ms=t.expiry_timestamp,
                    max_timestamp_ms=t.max_timestamp, token_id=t.token_id,
                    hmac=compute_hmac(ctx.broker.config.get("delegation.token.secret.key"), t.token_id),
                    throttle_time_ms=0)
