"""kbroker's HTTP listener: metrics, health and readiness, and room for more pages.

Off by default; on with ``kbroker.http.listen=HOST:PORT`` (``server.properties`` or
``--override``) or ``kbroker serve --http-listen HOST:PORT``. It runs in the broker's
nursery (``kbroker.server.Server`` starts it before the broker, so probes answer during
start-up) and serves:

- ``/metrics`` — Prometheus text (``kbroker.metrics``);
- ``/health``, ``/ready`` — liveness and readiness (``routes/health.py``);
- ``/`` and ``/api/console/`` — the web console (``kbroker/console``, ``routes/console.py``).

Layout: ``server.py`` (the trio + h11 loop, bounded), ``router.py`` (``Request``,
``Response``, ``Router``: no I/O), ``routes/`` (one module per page, each with
``install(router)``; a new module there is picked up without touching anything else).
A running broker's router is ``server.http.router``.
"""
from .router import Request, Response, Router, load_routes
from .server import HttpServer, parse_listen

__all__ = ["HttpServer", "Request", "Response", "Router", "load_routes", "parse_listen"]
