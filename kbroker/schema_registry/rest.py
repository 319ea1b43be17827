"""Confluent's REST API v1 on the registry's own listener: a thin router over the service.

Paths, query parameters, content types and error bodies as Confluent's registry serves
them (the reference: Confluent's "Schema Registry API Reference"; Karapace answers alike):

- Request bodies must be JSON with one of Confluent's content types
  (``application/vnd.schemaregistry.v1+json``, ``application/vnd.schemaregistry+json``,
  ``application/json``, ``application/octet-stream``, or none) — 415 otherwise; malformed
  JSON answers 400, JSON of the wrong shape 422, a body over ``MAX_BODY`` 413, each with
  Confluent's ``{"error_code", "message"}`` body; an unknown path 404 and a known path with
  another method 405 the same way. Answers are ``application/vnd.schemaregistry.v1+json``.
- Path segments are percent-decoded one by one (a subject may contain ``/`` as ``%2F``).
- Nothing here decides anything: every rule is in ``service.py``; a bad request never
  reaches the store.
"""
from __future__ import annotations

import json
import logging
import re
from urllib.parse import unquote

import trio

from kbroker.http.router import Request, Response, Router

from . import errors
from .errors import RegistryError
from .service import RegistryService
from .types import SCHEMA_TYPES

log = logging.getLogger("kbroker.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_TYPES = ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                  "application/json", "application/octet-stream")
MAX_BODY = 1024 * 1024
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")


def json_response(value, status: int = 200) -> Response:
    body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return Response(status, body, CONTENT_TYPE)


def error_response(status: int, message: str) -> Response:
    """The listener's own refusals (413 for a body over the limit...) in Confluent's shape."""
    return json_response({"error_code": status, "message": message}, status)


def _flag(request: Request, name: str) -> bool:
    values = request.query.get(name)
    return bool(values) and values[-1].strip().lower() == "true"


def _param(request: Request, name: str) -> str | None:
    values = request.query.get(name)
    return values[-1] if values else None


def _body(request: Request):
    ctype = (request.header("content-type") or "").split(";", 1)[0].strip().lower()
    if ctype and ctype not in ACCEPTED_TYPES:
        raise errors.http(415, "Unsupported Media Type")
    if not request.body.strip():
        raise errors.unprocessable("Request body is empty")
    try:
        return json.loads(request.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise errors.bad_request(f"Invalid JSON in request body: {e}") from None
    except RecursionError:
        raise errors.bad_request("Invalid JSON in request body: nested too deeply") from None


def _schema_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise errors.http(404, "Not Found") from None


class Routes:
    """(method, pattern) -> handler; patterns name their segments ``{s}``, ``{v}``, ``{id}``."""

    def __init__(self, service: RegistryService, auth=None):
        self.service = service
        self.auth = auth            # auth.RegistryAuth, or None: everything allowed
        self.table: list[tuple[str, re.Pattern, object]] = []
        self.requests = 0
        self.errors = 0
        from .metrics import RequestMeter
        self.meter = RequestMeter()
        S = service
        self._add("GET", "/", self.root)
        self._add("GET", "/subjects", lambda r: S.subjects(
            deleted=_flag(r, "deleted"), prefix=_param(r, "subjectPrefix") or ""))
        self._add("GET", "/subjects/{s}/versions", lambda r, s: S.versions(s, deleted=_flag(r, "deleted")))
        self._add("POST", "/subjects/{s}/versions", lambda r, s: S.register(
            s, _body(r), normalize=_flag(r, "normalize")))
        self._add("GET", "/subjects/{s}/versions/{v}", lambda r, s, v: S.get_version(
            s, v, deleted=_flag(r, "deleted"), fmt=_param(r, "format")))
        self._add("GET", "/subjects/{s}/versions/{v}/schema", self.version_schema)
        self._add("GET", "/subjects/{s}/versions/{v}/referencedby",
                  lambda r, s, v: S.referenced_by(s, v))
        self._add("DELETE", "/subjects/{s}/versions/{v}", lambda r, s, v: S.delete_version(
            s, v, permanent=_flag(r, "permanent")))
        self._add("POST", "/subjects/{s}", lambda r, s: S.lookup(
            s, _body(r), normalize=_flag(r, "normalize"), deleted=_flag(r, "deleted")))
        self._add("DELETE", "/subjects/{s}", lambda r, s: S.delete_subject(
            s, permanent=_flag(r, "permanent")))
        self._add("GET", "/schemas", lambda r: S.list_schemas(
            prefix=_param(r, "subjectPrefix") or "", deleted=_flag(r, "deleted"),
            latest_only=_flag(r, "latestOnly")))
        self._add("GET", "/schemas/types", self.types)
        self._add("GET", "/schemas/ids/{id}", lambda r, i: S.schema_by_id(
            _schema_id(i), subject=_param(r, "subject"), fetch_max_id=_flag(r, "fetchMaxId"),
            fmt=_param(r, "format")))
        self._add("GET", "/schemas/ids/{id}/schema", self.id_schema)
        self._add("GET", "/schemas/ids/{id}/versions", lambda r, i: S.id_versions(
            _schema_id(i), deleted=_flag(r, "deleted")))
        self._add("GET", "/schemas/ids/{id}/subjects", lambda r, i: S.id_subjects(
            _schema_id(i), deleted=_flag(r, "deleted")))
        self._add("GET", "/config", lambda r: S.get_config(None))
        self._add("PUT", "/config", lambda r: S.set_config(None, _body(r)))
        self._add("DELETE", "/config", lambda r: S.delete_config(None))
        self._add("GET", "/config/{s}", lambda r, s: S.get_config(
            s, default_to_global=_flag(r, "defaultToGlobal")))
        self._add("PUT", "/config/{s}", lambda r, s: S.set_config(s, _body(r)))
        self._add("DELETE", "/config/{s}", lambda r, s: S.delete_config(s))
        self._add("GET", "/mode", lambda r: S.get_mode(None))
        self._add("PUT", "/mode", lambda r: S.set_mode(None, _body(r), force=_flag(r, "force")))
        self._add("GET", "/mode/{s}", lambda r, s: S.get_mode(
            s, default_to_global=_flag(r, "defaultToGlobal")))
        self._add("PUT", "/mode/{s}", lambda r, s: S.set_mode(s, _body(r), force=_flag(r, "force")))
        self._add("DELETE", "/mode/{s}", lambda r, s: S.delete_mode(s))
        self._add("POST", "/compatibility/subjects/{s}/versions/{v}", lambda r, s, v: S.check(
            s, v, _body(r), verbose=_flag(r, "verbose"), normalize=_flag(r, "normalize")))
        self._add("POST", "/compatibility/subjects/{s}/versions", lambda r, s: S.check(
            s, None, _body(r), verbose=_flag(r, "verbose"), normalize=_flag(r, "normalize")))

    def _add(self, method: str, pattern: str, handler) -> None:
        rx = "^" + re.sub(r"\{\w+\}", "([^/]+)", pattern.rstrip("/") or "/") + "/?$"
        self.table.append((method, re.compile(rx), handler))

    # ---------------------------------------------------------------- special answers
    async def root(self, request: Request):
        return {}

    async def types(self, request: Request):
        return list(SCHEMA_TYPES)

    async def version_schema(self, request: Request, s: str, v: str):
        text = await self.service.get_version_schema(s, v, deleted=_flag(request, "deleted"),
                                                     fmt=_param(request, "format"))
        return Response(200, text.encode("utf-8"), CONTENT_TYPE)

    async def id_schema(self, request: Request, i: str):
        got = await self.service.schema_by_id(_schema_id(i), subject=_param(request, "subject"),
                                              fmt=_param(request, "format"))
        return Response(200, got["schema"].encode("utf-8"), CONTENT_TYPE)

    # ---------------------------------------------------------------- dispatch
    def resolve(self, method: str, path: str):
        allowed = set()
        for m, rx, handler in self.table:
            got = rx.match(path)
            if got is None:
                continue
            if m == method or (method == "HEAD" and m == "GET"):
                return handler, [unquote(g) for g in got.groups()], allowed
            allowed.add(m)
        return None, [], allowed

    async def dispatch(self, request: Request) -> Response:
        start = trio.current_time()
        response = await self._dispatch(request)
        self.meter.record(request.method, response.status, trio.current_time() - start)
        return response

    async def _dispatch(self, request: Request) -> Response:
        self.requests += 1
        try:
            if self.auth is not None:
                self.auth.check(request, self.auth.principal(request))
            handler, args, allowed = self.resolve(request.method, request.path)
            if handler is None:
                if allowed:
                    raise errors.http(405, "Method Not Allowed")
                raise errors.http(404, "Not Found")
            result = await handler(request, *args)
        except Exception as exc:  # noqa: BLE001 - a bug answers 500 in Confluent's shape
            if not isinstance(exc, RegistryError):
                log.exception("schema registry %s %s failed", request.method, request.target)
                exc = errors.RegistryError(500, 50001, f"Internal server error: {type(exc).__name__}")
            e = exc
            self.errors += 1
            if e.status >= 500:
                log.warning("schema registry %s %s: %s", request.method, request.target, e.message)
            headers = [("www-authenticate", 'Basic realm="kbroker schema registry"')] if e.status == 401 else []
            answer = json_response(e.body(), e.status)
            answer.headers.extend(headers)
            return answer
        if isinstance(result, Response):
            return result
        return json_response(result)

    def router(self) -> Router:
        """A kbroker.http Router sending every path of every method here."""
        r = Router()
        for m in METHODS:
            r.add(m, "/", self.dispatch, prefix=True)
        return r
