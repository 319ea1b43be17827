"""Requests, responses and the router of kbroker's HTTP listener — no I/O here.

A route is ``(method, path) -> async handler(request) -> Response``. Exact paths are looked
up first, then the longest registered prefix (``add(..., prefix=True)``, for a subtree such
as a console's static files). ``HEAD`` is answered by the ``GET`` handler without the body.
An unknown path answers 404, a known path with another method 405 with ``Allow``.

Modules add routes in an ``install(router)`` function of a module in
``kbroker/http/routes/`` (loaded by :func:`load_routes`, like the API registry), or by
calling ``server.http.router.add(...)`` on a running broker.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

Handler = Callable[["Request"], Awaitable["Response"]]


@dataclass
class Request:
    """One parsed HTTP request. ``server`` is the broker's ``kbroker.server.Server`` (its
    ``broker``, ``request_stats``, ``ready``...); ``body`` is bounded by the listener."""

    method: str
    target: str
    headers: list[tuple[str, str]]        # names lower-cased, in arrival order
    body: bytes = b""
    client: str = ""
    server: Any = None

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> dict[str, list[str]]:
        _, _, q = self.target.partition("?")
        return parse_qs(q, keep_blank_values=True)

    def header(self, name: str, default: str | None = None) -> str | None:
        name = name.lower()
        for k, v in self.headers:
            if k == name:
                return v
        return default


@dataclass
class Response:
    """An HTTP answer: status, body, content type and extra headers."""
    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def text(cls, text: str, status: int = 200) -> "Response":
        return cls(status, text.encode())

    @classmethod
    def json(cls, value: Any, status: int = 200, headers: list | None = None) -> "Response":
        return cls(status, json.dumps(value, indent=1).encode() + b"\n", "application/json",
                   headers=headers or [])


class Router:
    def __init__(self) -> None:
        self._exact: dict[str, dict[str, Handler]] = {}
        self._prefix: dict[str, dict[str, Handler]] = {}
        self.tasks: list = []     # async fn(context): run in the listener's nursery

    def add_task(self, fn) -> None:
        """Run ``await fn(context)`` for as long as the listener runs (a page's sampler)."""
        self.tasks.append(fn)

    def add(self, method: str, path: str, handler: Handler, *, prefix: bool = False) -> None:
        """Register ``handler`` for ``method`` on ``path`` (or every path under it). A second
        registration of the same method and path is a programming error."""
        if not path.startswith("/"):
            raise ValueError(f"route path must start with '/': {path!r}")
        table = (self._prefix if prefix else self._exact).setdefault(path, {})
        method = method.upper()
        if method in table:
            raise ValueError(f"route {method} {path} registered twice")
        table[method] = handler

    def get(self, path: str, *, prefix: bool = False):
        """Decorator form of ``add("GET", path, ...)``."""
        def register(fn: Handler) -> Handler:
            self.add("GET", path, fn, prefix=prefix)
            return fn
        return register

    def paths(self) -> list[str]:
        return sorted(self._exact) + sorted(p + "*" for p in self._prefix)

    def resolve(self, method: str, path: str) -> tuple[Handler | None, int, list[str]]:
        """(handler, status, allowed methods): status 200 with a handler, else 404/405."""
        methods = self._exact.get(path)
        if methods is None:
            best = max((p for p in self._prefix if path.startswith(p)), key=len, default=None)
            methods = self._prefix.get(best) if best is not None else None
        if methods is None:
            return None, 404, []
        handler = methods.get(method) or (methods.get("GET") if method == "HEAD" else None)
        if handler is None:
            allowed = sorted(set(methods) | ({"HEAD"} if "GET" in methods else set()))
            return None, 405, allowed
        return handler, 200, []

    async def dispatch(self, request: Request) -> Response:
        handler, status, allowed = self.resolve(request.method, request.path)
        if handler is None:
            if status == 405:
                return Response(405, b"method not allowed\n", headers=[("allow", ", ".join(allowed))])
            return Response(404, b"not found\n")
        return await handler(request)


def load_routes(router: Router) -> Router:
    """Import every module of ``kbroker.http.routes`` and call its ``install(router)``."""
    import importlib
    import pkgutil

    from kbroker.http import routes
    for info in sorted(pkgutil.iter_modules(routes.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"{routes.__name__}.{info.name}")
            install = getattr(module, "install", None)
            if install is not None:
                install(router)
    return router
