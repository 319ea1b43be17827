"""``/metrics``: Kafka's broker metrics in Prometheus text format (see ``kbroker.metrics``)."""
from __future__ import annotations

from kbroker.http.router import Request, Response, Router


async def metrics(request: Request) -> Response:
    from kbroker.metrics import CONTENT_TYPE, render
    if request.server is None:
        return Response(503, b"no broker\n")
    text = await render(request.server)
    return Response(200, text.encode(), CONTENT_TYPE)


def install(router: Router) -> None:
    router.add("GET", "/metrics", metrics)
