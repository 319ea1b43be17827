"""The gateway's routes, who a request acts as, and how answers are written.

Routes are path patterns with ``{name}`` segments (``/topics/{topic}/partitions/{partition}``)
matched in registration order; an unknown path answers 404 and a known path with another
method 405, both in Confluent's body (``{"error_code": 404, "message": "HTTP 404 Not
Found"}``). Every handler answers JSON; a :class:`~.errors.RestError` becomes its status and
body, an unexpected exception 500 (50002) and one log line — the listener and the broker
keep serving.

Who the request acts as (issue 35's security part): without an authorizer anyone may call
and acts as ``User:ANONYMOUS``; with one (``authorizer.class.name``) a request needs HTTP
Basic credentials of the cluster — a SCRAM credential or a PLAIN user of a SASL listener,
checked by the console's ``auth.check_password`` — and acts as ``User:<name>``; a missing or
wrong password answers 401 (40101) with ``WWW-Authenticate``, and what the principal's ACLs
deny answers 403 (40301) from the Kafka handler's own check.
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable
from urllib.parse import unquote

import trio

from kbroker.console import auth
from kbroker.http.router import Request, Response

from . import errors
from .errors import RestError
from .media import V2, V3

log = logging.getLogger("kbroker.rest_proxy")


@dataclass
class Call:
    """One request as a handler sees it."""

    request: Request
    params: dict[str, str]
    gateway: Any                      # kbroker.rest_proxy.Gateway

    @property
    def server(self):
        return self.request.server

    @property
    def broker(self):
        return self.request.server.broker

    @property
    def body(self) -> bytes:
        return self.request.body

    def header(self, name: str) -> str | None:
        return self.request.header(name)

    def query(self, name: str, default: str | None = None) -> str | None:
        v = self.request.query.get(name)
        return v[0] if v else default

    def query_int(self, name: str, default: int | None = None) -> int | None:
        v = self.query(name)
        if v is None or v == "":
            return default
        try:
            return int(v)
        except ValueError:
            raise RestError(400, 400, f"query parameter {name} must be an integer, got {v!r}") from None

    def base_url(self) -> str:
        """``http://host:port`` as the client addressed the gateway (its Host header)."""
        host = self.header("host") or self.gateway.listener_address()
        scheme = self.gateway.http.scheme if self.gateway.http is not None else "http"
        return f"{scheme}://{host}"


Handler = Callable[[Call], Awaitable[Response]]


@dataclass
class Route:
    """One REST endpoint: method, path pattern and handler."""
    method: str
    pattern: re.Pattern
    handler: Handler
    v3: bool
    template: str = ""

    @property
    def endpoint(self) -> str:
        """The metrics label: method and path template."""
        return f"{self.method} {self.template}"


@dataclass
class Routes:
    """The gateway's endpoints, matched in the order they were added."""
    routes: list[Route] = field(default_factory=list)

    def add(self, method: str, template: str, handler: Handler) -> None:
        regex = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"
        self.routes.append(Route(method.upper(), re.compile(regex), handler,
                                 template.startswith("/v3/"), template))

    def resolve(self, method: str, path: str) -> tuple[Route | None, dict, bool]:
        """(route, params, path known)."""
        known = False
        for r in self.routes:
            m = r.pattern.match(path)
            if m is None:
                continue
            known = True
            if r.method == method or (method == "HEAD" and r.method == "GET"):
                return r, {k: unquote(v) for k, v in m.groupdict().items()}, True
        return None, {}, known


def json_response(value, status: int = 200, *, v3: bool = False,
                  content_type: str | None = None, headers: list | None = None) -> Response:
    return Response(status, json.dumps(value).encode(), content_type or (V3 if v3 else V2),
                    headers=headers or [])


def no_content() -> Response:
    return Response(204, b"", V2)


def error_response(e: RestError, *, v3: bool = False, headers: list | None = None) -> Response:
    return json_response(e.body(), e.status, v3=v3, headers=headers)


def listener_error(status: int, message: str) -> Response:
    """Errors the listener itself answers (oversized or malformed HTTP), in Confluent's body."""
    if status == 413:
        message = f"Request entity too large: {message}"
    return json_response({"error_code": status, "message": message}, status)


def _peer(request: Request) -> str:
    return (request.client or "").rpartition(":")[0] or "127.0.0.1"


def _subject(request: Request) -> auth.Subject:
    """The principal of the request (module docstring); raises 401 when it has none."""
    host = _peer(request)
    header = request.header("authorization")
    server = request.server
    required = auth.login_required(server.broker)
    if header is None:
        if required:
            raise RestError(401, errors.UNAUTHENTICATED,
                            "Authentication required: HTTP Basic credentials of a user of this cluster")
        return auth.Subject(host=host)
    scheme, _, token = header.partition(" ")
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        sep, user, password = "", "", ""
    if scheme.lower() != "basic" or not sep or not user:
        raise RestError(401, errors.UNAUTHENTICATED, "Unsupported Authorization header: use HTTP Basic")
    if not required:
        return auth.Subject(host=host)      # no authorizer: everyone may, as ANONYMOUS does
    if not auth.check_password(server, user, password):
        log.warning("rest proxy: authentication failed for user %r from %s", user, host)
        raise RestError(401, errors.UNAUTHENTICATED, "Authentication failed: Invalid username or password")
    return auth.Subject("User:" + user, host, logged_in=True)


async def dispatch(routes: Routes, gateway, request: Request) -> Response:
    """The answer to ``request``, counted in the gateway's meter (``metrics.py``) by
    endpoint, status and time taken."""
    start = trio.current_time()
    path = request.path
    if len(path) > 1:
        path = path.rstrip("/")
    route, params, known = routes.resolve(request.method, path)
    response = await _dispatch(route, params, known, path, gateway, request)
    meter = getattr(gateway, "meter", None)
    if meter is not None:
        meter.record(route.endpoint if route is not None else "other", response.status,
                     trio.current_time() - start)
    return response


async def _dispatch(route: Route | None, params: dict, known: bool, path: str, gateway,
                    request: Request) -> Response:
    v3 = path.startswith("/v3")
    if route is None:
        return error_response(errors.method_not_allowed() if known else errors.not_found(), v3=v3)
    server = request.server
    if server is None or server.broker is None or not server.broker.started:
        return error_response(RestError(503, 50003 if not v3 else 503,
                                        "the broker is still starting"), v3=v3)
    try:
        subject = _subject(request)
    except RestError as e:
        return error_response(e, v3=v3, headers=[("www-authenticate", 'Basic realm="kbroker"')])
    reset = auth.current.set(subject)
    try:
        return await route.handler(Call(request, params, gateway))
    except RestError as e:
        return error_response(e, v3=v3)
    except trio.Cancelled:
        raise
    except Exception as e:  # noqa: BLE001 - one failing call must not stop the gateway
        log.exception("rest proxy %s %s failed", request.method, request.target)
        return error_response(RestError(500, 500 if v3 else errors.KAFKA_ERROR,
                                        f"Internal error: {type(e).__name__}: {e}"), v3=v3)
    finally:
        auth.current.reset(reset)
