"""``/health`` and ``/ready`` for orchestrators (Kubernetes probes, compose health checks).

- ``/health`` (liveness): 200 ``ok`` whenever the process answers at all — its event loop
  runs. It does not look at the broker: a broker still starting is alive.
- ``/ready`` (readiness): 200 ``ready`` once the broker serves clients — every listener
  bound, the metadata log caught up, the broker registered and unfenced (the moment the
  ``kbroker ready:`` line is logged) — and 503 before that and from the start of a shutdown,
  so traffic is sent only to a broker that answers it.
"""
from __future__ import annotations

from kbroker.http.router import Request, Response, Router


async def health(request: Request) -> Response:
    return Response.text("ok\n")


async def ready(request: Request) -> Response:
    server = request.server
    if server is not None and server.ready:
        return Response.text("ready\n")
    state = "stopping" if server is not None and server.stopping else "starting"
    return Response.text(f"not ready: {state}\n", status=503)


def install(router: Router) -> None:
    router.add("GET", "/health", health)
    router.add("GET", "/ready", ready)
