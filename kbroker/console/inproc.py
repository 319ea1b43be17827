"""Calling a registered Kafka API handler in process, with a typed request object.

The console changes state only this way, so it meets exactly the checks, error codes and
meters a client meets (the handler is the same object the connection calls). The context
names the console as client (``client_id`` ``kbroker-console``, the HTTP peer's host).
"""
from __future__ import annotations

from kbroker.api import REGISTRY, RequestContext, load_all
from kbroker.wire.error_codes import ErrorCode

CLIENT_ID = "kbroker-console"


class ApiFailure(Exception):
    """A Kafka error answered to the console's request: ``code`` and a readable message."""

    def __init__(self, code: int, message: str | None = None, status: int = 400):
        self.code = int(code)
        self.name = error_name(code)
        super().__init__(message or self.name)
        self.status = status


def error_name(code: int) -> str:
    try:
        return ErrorCode(int(code)).name
    except ValueError:
        return f"ERROR_{code}"


async def call_api(broker, api_key: int, version: int, request, client_host: str = "127.0.0.1"):
    if not REGISTRY:
        load_all()
    spec = REGISTRY[api_key]
    ctx = RequestContext(broker, api_key, version, 0, CLIENT_ID, client_host=client_host)
    return await spec.handler(ctx, request)
