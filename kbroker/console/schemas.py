"""The Schemas page: the schema registry's subjects, a subject's versions, a diff of two versions
and the compatibility levels (issue 28).

Rules kept:

- **In process, through the registry's own service.** The page reads the node's registry service
  object (``server.schema_registry.service``: the ``RegistryService`` behind the REST API) with
  the same calls the REST handlers make, so it shows exactly what ``GET /subjects/...`` answers
  — read-your-writes across nodes included — and never talks HTTP to itself. The console does
  not import ``kbroker.schema_registry`` (a module of the same layer): it only calls the object
  the server holds.
- **Who may see it**: with an authorizer, READ on the TOPIC ``_schemas``, the ACL the registry
  itself asks of a reader (``kbroker/schema_registry/auth.py``).
- **Off is not an error**: a node without ``kbroker.schema.registry.listen`` answers
  ``{"enabled": false}`` and the page says how to turn the registry on.
- The diff is of the registry's texts, pretty-printed when they are JSON (Avro, JSON Schema),
  as a unified diff (``difflib``), bounded by ``MAX_DIFF_LINES``.
"""
from __future__ import annotations

import difflib
import json

from kbroker.authz.acls import READ, TOPIC

from . import auth
from .errors import ApiFailure

SCHEMAS_TOPIC = "_schemas"
MAX_DIFF_LINES = 2000
# kbroker.wire.error_codes: INVALID_REQUEST (42) for bad parameters, as the other pages answer;
# the registry's own "not found" becomes a 404 with its Confluent code in the message.
INVALID_REQUEST = 42


def _service(server):
    registry = getattr(server, "schema_registry", None)
    service = getattr(registry, "service", None) if registry is not None else None
    return registry, service


def _guard(server) -> None:
    auth.require(server.broker, READ, TOPIC, SCHEMAS_TOPIC)


async def _call(coro):
    """A registry error (``RegistryError``: status, Confluent code, message) as a console error."""
    try:
        return await coro
    except Exception as e:
        status = getattr(e, "status", None)
        if isinstance(status, int) and hasattr(e, "code") and hasattr(e, "message"):
            failure = ApiFailure(INVALID_REQUEST, f"{e.message} (error {e.code})",
                                 status=status if 400 <= status < 500 else 400)
            failure.name = "SCHEMA_REGISTRY_ERROR"
            raise failure from None
        raise


async def overview(server) -> dict:
    """Every live subject with its versions, latest id and type and its own level, and the
    global level."""
    registry, service = _service(server)
    if service is None:
        return {"enabled": False, "message": (
            "the schema registry is off on this node: start it with "
            "kbroker.schema.registry.listen=HOST:PORT (kbroker serve --schema-registry HOST:PORT)")}
    _guard(server)
    global_level = (await _call(service.get_config(None)))["compatibilityLevel"]
    subjects = []
    for name in await _call(service.subjects()):
        versions = await _call(service.versions(name))
        latest = await _call(service.get_version(name, "latest"))
        own = service.state.level(name)
        subjects.append({"subject": name, "versions": versions, "latest_version": latest["version"],
                         "latest_id": latest["id"], "type": latest.get("schemaType", "AVRO"),
                         "level": own})
    return {"enabled": True, "address": registry.address, "global_level": global_level,
            "subjects": subjects}


async def subject_detail(server, subject: str) -> dict:
    """A subject's versions (id, type, references, text), its level and where it comes from."""
    _, service = _service(server)
    if service is None:
        raise ApiFailure(INVALID_REQUEST, "the schema registry is off on this node", status=404)
    _guard(server)
    versions = []
    for n in await _call(service.versions(subject)):
        v = await _call(service.get_version(subject, str(n)))
        versions.append({"version": v["version"], "id": v["id"], "type": v.get("schemaType", "AVRO"),
                         "references": v.get("references", []), "schema": v["schema"],
                         "pretty": pretty(v["schema"])})
    own = service.state.level(subject) is not None
    level = (await _call(service.get_config(subject, default_to_global=True)))["compatibilityLevel"]
    return {"subject": subject, "versions": versions, "level": level,
            "level_source": "subject" if own else "global"}


async def diff(server, subject: str, old: str, new: str) -> dict:
    """A unified diff of two versions' pretty-printed texts."""
    _, service = _service(server)
    if service is None:
        raise ApiFailure(INVALID_REQUEST, "the schema registry is off on this node", status=404)
    _guard(server)
    a = await _call(service.get_version(subject, old))
    b = await _call(service.get_version(subject, new))
    lines = list(difflib.unified_diff(pretty(a["schema"]).splitlines(), pretty(b["schema"]).splitlines(),
                                      f"{subject} v{a['version']}", f"{subject} v{b['version']}",
                                      lineterm=""))
    truncated = len(lines) > MAX_DIFF_LINES
    return {"subject": subject, "from": a["version"], "to": b["version"],
            "from_id": a["id"], "to_id": b["id"], "same": a["id"] == b["id"],
            "lines": lines[:MAX_DIFF_LINES], "truncated": truncated}


def pretty(schema: str) -> str:
    try:
        return json.dumps(json.loads(schema), indent=2)
    except ValueError:
        return schema
