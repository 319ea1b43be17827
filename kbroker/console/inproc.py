"""Calling a registered Kafka API handler in process, with a typed request object.

The console changes state only this way, so it meets exactly the checks, error codes and
meters a client meets (the handler is the same object the connection calls). The context
names the console as client (``client_id`` ``kbroker-console``) and carries the logged-in
principal and the HTTP peer's address (``auth.current``), so ACLs apply as to any client.
"""
from __future__ import annotations

from kbroker.api import REGISTRY, RequestContext, load_all
from kbroker.common.request_scope import CURRENT_REQUEST
from . import auth
from .errors import ApiFailure, error_name  # noqa: F401  (callers of call_api catch these)

CLIENT_ID = "kbroker-console"


async def call_api(broker, api_key: int, version: int, request, *, client_id: str = CLIENT_ID):
    """Run the handler of ``api_key`` on ``request`` as the current principal (``auth.current``)
    with ``client_id`` naming the caller (the REST gateway passes its own)."""
    spec = REGISTRY.get(api_key) or load_all()[api_key]
    who = auth.current.get()
    ctx = RequestContext(broker, api_key, version, 0, client_id, client_host=who.host,
                         principal=who.principal)
    # as a connection does: a request forwarded to a remote controller travels in an
    # Envelope with this principal, so the controller authorizes the console's user
    current = CURRENT_REQUEST.set(ctx)
    try:
        return await spec.handler(ctx, request)
    finally:
        CURRENT_REQUEST.reset(current)
