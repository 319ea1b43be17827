"""Calling a registered Kafka API handler in process, through the console's one path for it
(``kbroker/console/inproc.py``): the same handler object a connection calls, so the same
checks, authorization and error codes apply. The request acts as the principal and peer
address in ``kbroker.console.auth.current`` (set per HTTP request by ``app.py``) and names
the gateway as client (``client_id`` ``kbroker-rest-proxy``)."""
from __future__ import annotations

from kbroker.console import inproc as console_inproc

CLIENT_ID = "kbroker-rest-proxy"


async def call_api(broker, api_key: int, version: int, request):
    return await console_inproc.call_api(broker, api_key, version, request, client_id=CLIENT_ID)
