"""The client request whose handler is running in the current task.

The connection (and the console's in-process calls) set ``CURRENT_REQUEST`` around each
handler call. The metadata layer's controller channel reads it to forward a client's admin
request inside an Envelope carrying the client's principal and host (KIP-590), so the
controller authorizes the client rather than the broker; requests a broker makes on its own
(auto-created topics, heartbeats) travel without one.

It lives here, below every layer, so that the metadata layer reads what the API layer sets
without importing the API layer. Readers use only the attributes of ``RequestScope``.
"""
from __future__ import annotations

import contextvars
from typing import Any, Protocol


class RequestScope(Protocol):
    """What a lower layer may read of the running request (``kbroker.api.RequestContext``)."""
    api_key: int
    principal: str
    client_host: str
    client_id: str | None
    extra: dict[str, Any]


CURRENT_REQUEST: contextvars.ContextVar["RequestScope | None"] = contextvars.ContextVar(
    "kbroker_current_request", default=None)
