"""URLs of the console and the loopback rule.

Pages (``/``, ``/topics``, ``/topics/<name>``, ``/groups``, ``/groups/<id>``, ``/cluster``,
``/schemas``, ``/schemas/<subject>``)
all answer the one ``index.html``; its script shows the page the path names. Assets are
under ``/console/static/``. The JSON API is under ``/api/console/`` (``GET`` reads,
``POST`` with a JSON body changes). Errors answer ``{"error": NAME, "message": ...}`` with a
4xx status, so the page can show them; a handler that fails unexpectedly answers 500 the
same way (and logs it) — the listener keeps serving.
"""
from __future__ import annotations

import ipaddress
import json
import logging

import trio

from kbroker.http.router import Request, Response, Router

from . import auth
from .history import History
from .errors import ApiFailure


class _OnFirstUse:
    """A console module imported when a request first reads from it: every node with an HTTP
    listener installs the console (the pytest plugin's brokers, the container image), few of
    them ever serve a console page (issue 32, start-up)."""

    def __init__(self, name: str):
        self._name = f"{__package__}.{name}"

    def __getattr__(self, attr: str):
        import importlib
        return getattr(importlib.import_module(self._name), attr)


browse, cluster, groups, schemas, views = (
    _OnFirstUse(name) for name in ("browse", "cluster", "groups", "schemas", "views"))

log = logging.getLogger("kbroker.console")

STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml",
                ".png": "image/png", ".ico": "image/x-icon"}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def enabled(server) -> bool:
    """On a loopback listener always; elsewhere only with ``kbroker.console.enable=true``."""
    if server is None:
        return False
    http = getattr(server, "http", None)
    if http is not None and is_loopback(http.host):
        return True
    try:
        return bool(server.config.get("kbroker.console.enable"))
    except KeyError:
        return False


def _static(name: str) -> bytes | None:
    if "/" in name or name.startswith("."):
        return None
    from importlib import resources
    f = resources.files("kbroker.console").joinpath("static", name)
    return f.read_bytes() if f.is_file() else None


def _error(status: int, name: str, message: str) -> Response:
    return Response.json({"error": name, "message": message}, status)


def _body(request: Request) -> dict:
    if not request.body:
        raise ApiFailure(42, "expected a JSON object in the request body")
    try:
        value = json.loads(request.body)
    except (ValueError, UnicodeDecodeError) as e:
        raise ApiFailure(42, f"malformed JSON: {e}") from None
    if not isinstance(value, dict):
        raise ApiFailure(42, "expected a JSON object in the request body")
    return value


def _q(request: Request, name: str, default=None) -> str | None:
    v = request.query.get(name)
    return v[0] if v else default


def _qint(request: Request, name: str, default=None) -> int | None:
    v = _q(request, name)
    if v is None or v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise ApiFailure(42, f"{name} must be an integer, got {v!r}") from None


def _peer(request: Request) -> str:
    """The HTTP peer's address (``request.client`` is ``host:port``)."""
    return (request.client or "").rpartition(":")[0] or "127.0.0.1"


def install(router: Router) -> None:
    history = History()
    sessions = auth.Sessions()
    router.add_task(history.run)

    def guarded(fn, *, page: bool = False, public: bool = False):
        """``page``: the HTML/asset answers (no broker needed); ``public``: no login needed
        (login, logout, whoami)."""
        async def handler(request: Request) -> Response:
            server = request.server
            if not enabled(server):
                msg = ("the console is off on a non-loopback HTTP listener; "
                       "set kbroker.console.enable=true to serve it here")
                return (Response(404, msg.encode() + b"\n") if page
                        else _error(404, "CONSOLE_DISABLED", msg))
            if not page and (server.broker is None or not server.broker.started):
                return _error(503, "NOT_READY", "the broker is still starting")
            subject = auth.Subject(host=_peer(request))
            if not page and auth.login_required(server.broker):
                token = auth.cookie_token(request.header("cookie"))
                principal = sessions.principal(token, auth.session_timeout_ms(server))
                if principal is not None:
                    subject = auth.Subject(principal, subject.host, logged_in=True)
                elif not public:
                    return _error(401, "LOGIN_REQUIRED",
                                  "log in with a user of this cluster (SCRAM or PLAIN)")
            reset = auth.current.set(subject)
            try:
                return await fn(request)
            except ApiFailure as e:
                return _error(e.status, e.name, str(e))
            except trio.Cancelled:
                raise
            except Exception as e:  # noqa: BLE001 - the page shows it; the listener goes on
                log.exception("console %s %s failed", request.method, request.target)
                return _error(500, "INTERNAL_ERROR", f"{type(e).__name__}: {e}")
            finally:
                auth.current.reset(reset)
        return handler

    async def api_whoami(request):
        broker = broker_of(request)
        required = auth.login_required(broker)
        who = auth.current.get()
        logged_in = who.logged_in or not required
        return Response.json({"login_required": required, "logged_in": logged_in,
                              "principal": who.principal if logged_in else None})

    async def api_login(request):
        body = _body(request)
        user, password = body.get("username"), body.get("password")
        if not isinstance(user, str) or not isinstance(password, str) or not user:
            raise ApiFailure(42, "username and password are required")
        if not auth.login_required(broker_of(request)):
            return Response.json({"principal": auth.current.get().principal, "login_required": False})
        if not auth.check_password(request.server, user, password):
            log.warning("console login failed for user %r from %s", user, auth.current.get().host)
            return _error(401, "SASL_AUTHENTICATION_FAILED",
                          "Authentication failed: Invalid username or password")
        principal = "User:" + user
        token = sessions.create(principal)
        timeout_s = auth.session_timeout_ms(request.server) // 1000
        log.info("console login of %s from %s", principal, auth.current.get().host)
        return Response.json({"principal": principal, "login_required": True},
                             headers=[auth.set_cookie(token, timeout_s)])

    async def api_logout(request):
        sessions.drop(auth.cookie_token(request.header("cookie")))
        return Response.json({"logged_in": False}, headers=[auth.clear_cookie()])

    async def index(request: Request) -> Response:
        return Response(200, _static("index.html"), STATIC_TYPES[".html"],
                        headers=[("cache-control", "no-cache")])

    async def static(request: Request) -> Response:
        name = request.path.removeprefix("/console/static/")
        data = _static(name)
        if data is None:
            return Response(404, b"not found\n")
        ext = "." + name.rpartition(".")[2]
        return Response(200, data, STATIC_TYPES.get(ext, "application/octet-stream"),
                        headers=[("cache-control", "no-cache")])

    for path in ("/", "/cluster", "/topics", "/groups", "/schemas"):
        router.add("GET", path, guarded(index, page=True))
    router.add("GET", "/schemas/", guarded(index, page=True), prefix=True)
    router.add("GET", "/topics/", guarded(index, page=True), prefix=True)
    router.add("GET", "/groups/", guarded(index, page=True), prefix=True)
    router.add("GET", "/console/static/", guarded(static, page=True), prefix=True)

    def broker_of(request):
        return request.server.broker

    async def api_topics(request):
        return Response.json({"topics": views.topics_list(broker_of(request), history)})

    async def api_create_topic(request):
        return Response.json(await views.create_topic(broker_of(request), _body(request)), 201)

    async def api_topic(request):
        name = _q(request, "name")
        if not name:
            raise ApiFailure(42, "name is required")
        return Response.json(views.topic_detail(broker_of(request), name))

    async def api_configs(request):
        return Response.json(await views.alter_configs(broker_of(request), _body(request)))

    async def api_messages(request):
        topic = _q(request, "topic")
        if not topic:
            raise ApiFailure(42, "topic is required")
        positions = None
        raw = _q(request, "positions")
        if raw:
            try:
                positions = {int(a): int(b) for a, b in (kv.split(":", 1) for kv in raw.split(","))}
            except ValueError:
                raise ApiFailure(42, "positions must be partition:offset,...") from None
        page = await browse.browse(
            broker_of(request), topic, mode=_q(request, "mode", "newest"),
            partition=_qint(request, "partition"), offset=_qint(request, "offset"),
            timestamp=_qint(request, "timestamp"), positions=positions,
            limit=_qint(request, "limit", browse.DEFAULT_LIMIT))
        return Response.json(page)

    async def api_produce(request):
        return Response.json(await views.produce(broker_of(request), _body(request)))

    async def api_groups(request):
        return Response.json({"groups": await groups.list_groups(broker_of(request))})

    async def api_group(request):
        gid = _q(request, "id")
        if not gid:
            raise ApiFailure(42, "id is required")
        return Response.json(await groups.group_detail(broker_of(request), gid))

    async def api_reset(request):
        return Response.json(await groups.reset_offsets(broker_of(request), _body(request)))

    async def api_delete_group(request):
        return Response.json(await groups.delete_group(broker_of(request), _body(request)))

    async def api_cluster(request):
        return Response.json(await cluster.cluster_view(request.server, history))

    async def api_schemas(request):
        return Response.json(await schemas.overview(request.server))

    async def api_schema(request):
        subject = _q(request, "subject")
        if not subject:
            raise ApiFailure(42, "subject is required")
        return Response.json(await schemas.subject_detail(request.server, subject))

    async def api_schema_diff(request):
        subject, old, new = _q(request, "subject"), _q(request, "from"), _q(request, "to")
        if not subject or not old or not new:
            raise ApiFailure(42, "subject, from and to are required")
        return Response.json(await schemas.diff(request.server, subject, old, new))

    router.add("GET", "/api/console/whoami", guarded(api_whoami, public=True))
    router.add("POST", "/api/console/login", guarded(api_login, public=True))
    router.add("POST", "/api/console/logout", guarded(api_logout, public=True))
    for method, path, fn in [
        ("GET", "/api/console/topics", api_topics),
        ("POST", "/api/console/topics", api_create_topic),
        ("GET", "/api/console/topic", api_topic),
        ("POST", "/api/console/topic/configs", api_configs),
        ("GET", "/api/console/messages", api_messages),
        ("POST", "/api/console/produce", api_produce),
        ("GET", "/api/console/groups", api_groups),
        ("GET", "/api/console/group", api_group),
        ("POST", "/api/console/group/reset", api_reset),
        ("POST", "/api/console/group/delete", api_delete_group),
        ("GET", "/api/console/cluster", api_cluster),
        ("GET", "/api/console/schemas", api_schemas),
        ("GET", "/api/console/schema", api_schema),
        ("GET", "/api/console/schema/diff", api_schema_diff),
    ]:
        router.add(method, path, guarded(fn))
