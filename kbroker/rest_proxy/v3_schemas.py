"""API v3 produce with schemas: a record's key or value of type ``AVRO``, ``PROTOBUF`` or
``JSONSCHEMA``, or naming a schema, written through the broker's schema registry in
Confluent's wire format (the same encoders as v2: ``avro.py``, ``schema_formats.py``).

Confluent's v3 key/value object: ``{"type", "subject", "subject_name_strategy",
"schema_id", "schema_version", "schema", "data"}``. The schema is, in this order:

- ``schema_id``: that registered schema (its type is the registry's; a ``type`` that says
  otherwise is refused);
- ``schema_version``: that version of the subject;
- ``schema`` (the text, with ``type`` naming its kind, AVRO when absent): registered under
  the subject, or found there when it already is;
- only a schema-based ``type``: the subject's latest version.

The subject is ``subject``, else ``<topic>-key`` / ``<topic>-value`` (Confluent's
TopicNameStrategy, ``subject_name_strategy`` TOPIC_NAME; the record-name strategies are
refused with 400). The answer's key/value object carries ``type``, ``size``, ``subject``,
``schema_id`` and ``schema_version``. Errors are v3's: a ``data`` that does not fit its
schema 400, an unknown id or version the registry's 404, no registry 400.
"""
from __future__ import annotations

from . import avro
from .avro import registry_call, service_of
from .errors import RestError

KINDS = {"AVRO": "avro", "PROTOBUF": "protobuf", "JSONSCHEMA": "jsonschema"}
REGISTRY_TYPES = {"AVRO": "AVRO", "PROTOBUF": "PROTOBUF", "JSONSCHEMA": "JSON"}
FROM_REGISTRY = {"AVRO": "AVRO", "PROTOBUF": "PROTOBUF", "JSON": "JSONSCHEMA"}
HINTS = ("schema_id", "schema_version", "schema", "subject", "subject_name_strategy")


def wants_schema(obj) -> bool:
    """Whether a key/value object is for the registry (a schema type or a schema named)."""
    if not isinstance(obj, dict):
        return False
    return str(obj.get("type", "")).upper() in KINDS or any(obj.get(h) is not None for h in HINTS)


def _v3(e: RestError) -> RestError:
    """A v2-shaped error (422 42203...) as v3 answers it (the HTTP status as the code)."""
    status = 400 if e.status == 422 else e.status
    return RestError(status, status, e.message)


def _int(obj: dict, name: str, what: str) -> int:
    v = obj.get(name)
    if isinstance(v, bool) or not isinstance(v, int):
        raise RestError(400, 400, f"{what}: {name} must be an integer")
    return v


async def _version_of(service, subject: str, schema_id: int) -> int | None:
    try:
        users = await registry_call(service.id_versions, schema_id)
    except RestError:
        return None
    for u in users:
        if u["subject"] == subject:
            return u["version"]
    return None


async def encode(call, topic: str, side: str, obj: dict) -> tuple[bytes | None, dict]:
    """(bytes, answer object) of one schema-based key or value."""
    try:
        return await _encode(call, topic, side, obj)
    except RestError as e:
        raise _v3(e) from None


async def _encode(call, topic: str, side: str, obj: dict) -> tuple[bytes | None, dict]:
    what = side
    kind = str(obj.get("type", "")).upper() or None
    if kind is not None and kind not in KINDS:
        raise RestError(400, 400, f"{what}: type {kind} does not take a schema "
                                  "(AVRO, PROTOBUF or JSONSCHEMA do)")
    strategy = str(obj.get("subject_name_strategy") or "TOPIC_NAME").upper()
    if strategy != "TOPIC_NAME" and obj.get("subject") is None:
        raise RestError(400, 400, f"{what}: subject_name_strategy {strategy} is not supported "
                                  "(TOPIC_NAME is, or name the subject)")
    subject = obj.get("subject") or f"{topic}-{side}"
    if not isinstance(subject, str):
        raise RestError(400, 400, f"{what}: subject must be a string")
    try:
        service = service_of(call.server)
    except RestError:
        raise RestError(400, 400, f"{what}: schema-based formats need the schema registry: set "
                                  "kbroker.schema.registry.listen") from None
    version = None
    if obj.get("schema_id") is not None:
        sid = _int(obj, "schema_id", what)
        got = await registry_call(service.schema_by_id, sid)
        version = await _version_of(service, subject, sid)
    elif obj.get("schema_version") is not None:
        got = await registry_call(service.get_version, subject, _int(obj, "schema_version", what))
        sid, version = got["id"], got["version"]
    elif obj.get("schema") is not None:
        text = obj["schema"]
        if not isinstance(text, str):
            raise RestError(400, 400, f"{what}: schema must be the schema's text")
        body = {"schema": text, "schemaType": REGISTRY_TYPES[kind or "AVRO"]}
        await registry_call(service.register, subject, body)
        got = await registry_call(service.lookup, subject, body)
        sid, version = got["id"], got["version"]
    else:
        got = await registry_call(service.get_version, subject, "latest")
        sid, version = got["id"], got["version"]
    actual = FROM_REGISTRY.get(got.get("schemaType", "AVRO"), "AVRO")
    if kind is not None and kind != actual:
        raise RestError(400, 400, f"{what}: schema {sid} is a {actual} schema, not {kind}")
    data = obj.get("data")
    if actual == "AVRO":
        parsed = await call.gateway.schemas.by_id(call.server, sid)
        raw = avro.encode(sid, parsed, data, what)
    else:
        codec = await call.gateway.typed.codec(call.server, KINDS[actual], sid)
        raw = codec.encode(data, what)
    return raw, {"type": actual, "size": len(raw or b""), "subject": subject,
                 "schema_id": sid, "schema_version": version}
