"""RenewDelegationToken (key 39), v1–v2: push a token's expiry (by its HMAC) to now + the
renew period (``delegation.token.expiry.time.ms`` when negative), never past its max
timestamp. Only its owner, requester or a renewer (DELEGATION_TOKEN_OWNER_MISMATCH); unknown HMAC
DELEGATION_TOKEN_NOT_FOUND; expired DELEGATION_TOKEN_EXPIRED; the channel checks of
CreateDelegationToken. v0 (removed by KIP-896) is not served.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._tokens import refusal
from kbroker.wire import messages

Response = messages.RenewDelegationTokenResponse


@api(39, versions=(1, 2))
async def handle(ctx: RequestContext, request) -> Response:
    code = refusal(ctx)
    if code is not None:
        return Response(error_code=code, expiry_timestamp_ms=-1, throttle_time_ms=0)
    res = await ctx.broker.controller.renew_delegation_token(bytes(request.hmac), ctx.principal,
                                                             request.renew_period_ms)
    return Response(error_code=res.error_code,
                    expiry_timestamp_ms=res.expiry_timestamp if not res.error_code else -1,
                    throttle_time_ms=0)
