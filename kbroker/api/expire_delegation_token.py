"""ExpireDelegationToken (key 40), v1–v2: bring a token's expiry forward to now + the period
(capped at its max timestamp); a negative period removes it at once
(``RemoveDelegationTokenRecord``). Same owner/renewer and channel rules as
RenewDelegationToken. v0 (removed by KIP-896) is not served.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._tokens import refusal
from kbroker.wire import messages

Response = messages.ExpireDelegationTokenResponse


@api(40, versions=(1, 2))
async def handle(ctx: RequestContext, request) -> Response:
    code = refusal(ctx)
    if code is not None:
        return Response(error_code=code, expiry_timestamp_ms=-1, throttle_time_ms=0)
    res = await ctx.broker.controller.expire_delegation_token(bytes(request.hmac), ctx.principal,
                                                              request.expiry_time_period_ms)
    return Response(error_code=res.error_code,
                    expiry_timestamp_ms=res.expiry_timestamp if not res.error_code else -1,
                    throttle_time_ms=0)
