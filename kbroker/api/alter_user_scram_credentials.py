"""AlterUserScramCredentials (key 51), v0 (KIP-554): add, replace or delete users' SCRAM
credentials. The client sends salt and salted password (never the password); the
controller derives the stored and server keys and commits ``UserScramCredentialRecord`` /
``RemoveUserScramCredentialRecord`` (validation and errors of Kafka's
``ScramControlManager``: a user once per request, 4096–16384 iterations, known mechanism,
existing credential to delete). Forwarded to the active controller like other admin writes.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.wire import messages

Response = messages.AlterUserScramCredentialsResponse
Result = Response.AlterUserScramCredentialsResult


@api(51, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    deletions = [(d.name, d.mechanism) for d in request.deletions or ()]
    upsertions = [(u.name, u.mechanism, u.iterations, bytes(u.salt or b""), bytes(u.salted_password or b""))
                  for u in request.upsertions or ()]
    results = await ctx.broker.controller.alter_user_scram_credentials(deletions, upsertions)
    return Response(throttle_time_ms=0, results=[
        Result(user=u, error_code=code, error_message=msg) for u, code, msg in results])
