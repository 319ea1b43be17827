"""Calling a registered Kafka API handler in process, as the console does
(``kbroker/console/inproc.py``): the same handler object a connection calls, so the same
checks, authorization and error codes apply. The request acts as the principal and peer
address in ``kbroker.console.auth.current`` (set per HTTP request by ``app.py``) and names
the gateway as client (``client_id`` ``kbroker-rest-proxy``)."""
from __future__ import annotations

from kbroker.api import REGISTRY, RequestContext, load_all
from kbroker.common.request_scope import CURRENT_REQUEST
from kbroker.console import auth

CLIENT_ID = "kbroker-rest-proxy"


async def call_api(broker, api_key: int, version: int, request):
    if not REGISTRY:
        load_all()
    spec = REGISTRY[api_key]
    who = auth.current.get()
    ctx = RequestContext(broker, api_key, version, 0, CLIENT_ID, client_host=who.host,
                         principal=who.principal)
    current = CURRENT_REQUEST.set(ctx)
    try:
        return await spec.handler(ctx, request)
    finally:
        CURRENT_REQUEST.reset(current)
