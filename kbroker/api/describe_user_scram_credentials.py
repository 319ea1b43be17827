"""DescribeUserScramCredentials (key 50), v0 (KIP-554): which SCRAM mechanisms and
iteration counts each user has, from the metadata image (never salts or keys).

No users (null or empty list) describes every user with a credential. A user named twice
is ``DUPLICATE_RESOURCE``, a user without credentials ``RESOURCE_NOT_FOUND``, with
Kafka's messages (``ScramImage.describe``).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.DescribeUserScramCredentialsResponse
Result = Response.DescribeUserScramCredentialsResult
Info = Result.CredentialInfo


def _infos(mechs) -> list:
    return [Info(mechanism=m, iterations=c.iterations) for m, c in sorted(mechs.items())]


@api(50, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    creds = ctx.broker.metadata.scram_credentials
    names = [u.name for u in request.users or ()]
    results = []
    if not names:
        results = [Result(user=u, error_code=E.NONE, error_message=None, credential_infos=_infos(m))
                   for u, m in sorted(creds.items())]
    else:
        seen: dict[str, int] = {}
        for n in names:
            seen[n] = seen.get(n, 0) + 1
        for n in dict.fromkeys(names):
            if seen[n] > 1:
                results.append(Result(user=n, error_code=E.DUPLICATE_RESOURCE, credential_infos=[],
                                      error_message="Cannot describe SCRAM credentials for the same "
                                                    f"user twice in a single request: {n}"))
            elif n not in creds:
                results.append(Result(user=n, error_code=E.RESOURCE_NOT_FOUND, credential_infos=[],
                                      error_message="Attempt to describe a user credential that "
                                                    f"does not exist: {n}"))
            else:
                results.append(Result(user=n, error_code=E.NONE, error_message=None,
                                      credential_infos=_infos(creds[n])))
    return Response(throttle_time_ms=0, error_code=E.NONE, error_message=None, results=results)
