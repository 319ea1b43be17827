"""API v3 produce with schemas: a record's key or value of type ``AVRO``, ``PROTOBUF`` or
``JSONSCHEMA``, or naming a schema, written through the broker's schema registry in
Confluent's wire format (the same encoders as v2: ``avro.py``, ``schema_formats.py``).

Confluent's v3 key/value object: ``{"type", "subject", "subject_name_strategy",
"schema_id", "schema_version", "schema", "data"}``. The schema is, in this order:

- ``schema_id``: that registered schema (its type is the registry's; a ``type`` that says
  otherwise is refused), which must be a version of the subject (422 otherwise);
- ``schema_version``: that version of the subject;
- ``schema`` (the text, with ``type`` naming its kind, AVRO when absent): registered under
  the subject, or found there when it already is;
- only a schema-based ``type``: the subject's latest version.

The subject is ``subject``, else the one ``subject_name_strategy`` gives
(``subject_names.py``, as Kafka REST's ``SchemaManagerImpl``): TOPIC_NAME (the default)
``<topic>-key`` / ``<topic>-value``; RECORD_NAME the schema's record name and
TOPIC_RECORD_NAME ``<topic>-<record name>``, named from the registered schema of
``schema_id`` or from the parsed ``schema`` text. Those two cannot serve
``schema_version`` or the latest version (there is no schema to name: 400, as Kafka REST),
and a schema without a record name (an Avro primitive, a JSON Schema without ``title``)
answers Kafka REST's serialization error, 422. A strategy other than Kafka REST's three
enum names (they are upper case) is 400, and so is a strategy given with a ``subject``.

The answer's key/value object carries ``type``, ``size``, ``subject``, ``schema_id`` and
``schema_version``. Errors are v3's (the status as the code): a ``data`` that does not fit
its schema 400, an unknown id or version the registry's 404, no registry 400.
"""
from __future__ import annotations

import json

from . import avro, subject_names
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
    """A v2-shaped error (422 42203...) as v3 answers it (the HTTP status as the code); an
    error already in v3's shape (code and status the same) is kept."""
    if e.code == e.status:
        return e
    status = 400 if e.status == 422 else e.status
    return RestError(status, status, e.message)


def _int(obj: dict, name: str, what: str) -> int:
    v = obj.get(name)
    if isinstance(v, bool) or not isinstance(v, int):
        raise RestError(400, 400, f"{what}: {name} must be an integer")
    return v


def _strategy(obj: dict, what: str) -> str | None:
    """The object's ``subject_name_strategy``, one of Kafka REST's enum names exactly."""
    strategy = obj.get("subject_name_strategy")
    if strategy is None:
        return None
    if strategy not in subject_names.STRATEGIES:
        raise RestError(400, 400, f"{what}: subject_name_strategy {json.dumps(strategy)} is not "
                                  f"one of {', '.join(subject_names.STRATEGIES)}")
    if obj.get("subject") is not None:
        raise RestError(400, 400, f"{what}: only one of subject_name_strategy or subject can "
                                  "be used")
    return strategy


def _serialization(message: str) -> RestError:
    """Kafka REST's "Error serializing message" (42207), which its v3 answers with 422."""
    return RestError(422, 422, f"Error serializing message (42207): {message}")


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


async def _named_subject(call, strategy: str, topic: str, side: str, key, parse) -> str:
    """The subject a record-name strategy gives the schema ``parse`` reads."""
    name = await call.gateway.record_names.name_of(key, parse)
    subject = subject_names.subject_name(strategy, topic, side, name)
    if subject is None:
        raise _serialization(
            f"subject_name_strategy {strategy} names the {side}'s subject after its schema's "
            "record name, and this schema has none (an Avro record, a Protobuf message or "
            "enum, a JSON Schema with a title have one)")
    return subject


async def _encode(call, topic: str, side: str, obj: dict) -> tuple[bytes | None, dict]:
    what = side
    kind = str(obj.get("type", "")).upper() or None
    if kind is not None and kind not in KINDS:
        raise RestError(400, 400, f"{what}: type {kind} does not take a schema "
                                  "(AVRO, PROTOBUF or JSONSCHEMA do)")
    strategy = _strategy(obj, what) or subject_names.TOPIC_NAME
    named = subject_names.uses_schema(strategy)
    subject = obj.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise RestError(400, 400, f"{what}: subject must be a string")
    if subject is None and not named:
        subject = subject_names.subject_name(strategy, topic, side, None)
    if named and obj.get("schema_id") is None and obj.get("schema") is None:
        # schema_version or the latest version: the subject is needed to find the schema,
        # and the strategy needs the schema to name the subject (Kafka REST: 400)
        raise RestError(400, 400, f"{what}: subject_name_strategy {strategy} needs schema_id "
                                  "or schema (it names the subject after the schema)")
    try:
        service = service_of(call.server)
    except RestError:
        raise RestError(400, 400, f"{what}: schema-based formats need the schema registry: set "
                                  "kbroker.schema.registry.listen") from None
    if obj.get("schema_id") is not None:
        sid = _int(obj, "schema_id", what)
        got = await registry_call(service.schema_by_id, sid)
        _check_kind(kind, got, sid, what)
        if subject is None:
            async def parse():
                return (await registry_call(service.parsed_by_id, sid))[1]
            subject = await _named_subject(call, strategy, topic, side, ("id", sid), parse)
        version = await _version_of(service, subject, sid)
        if version is None:
            raise _serialization(f"schema {sid} is not registered under subject {subject}")
    elif obj.get("schema_version") is not None:
        got = await registry_call(service.get_version, subject, _int(obj, "schema_version", what))
        sid, version = got["id"], got["version"]
    elif obj.get("schema") is not None:
        text = obj["schema"]
        if not isinstance(text, str):
            raise RestError(400, 400, f"{what}: schema must be the schema's text")
        body = {"schema": text, "schemaType": REGISTRY_TYPES[kind or "AVRO"]}
        if subject is None:
            async def parse():
                from kbroker.schema_registry import types
                try:
                    return types.parse(body["schemaType"], text)
                except types.SchemaError as e:
                    raise RestError(400, 400, f"{what}: {e}") from None
            subject = await _named_subject(call, strategy, topic, side,
                                           ("text", body["schemaType"], text), parse)
        await registry_call(service.register, subject, body)
        got = await registry_call(service.lookup, subject, body)
        sid, version = got["id"], got["version"]
    else:
        got = await registry_call(service.get_version, subject, "latest")
        sid, version = got["id"], got["version"]
    actual = _check_kind(kind, got, sid, what)
    data = obj.get("data")
    if actual == "AVRO":
        parsed = await call.gateway.schemas.by_id(call.server, sid)
        raw = avro.encode(sid, parsed, data, what)
    else:
        codec = await call.gateway.typed.codec(call.server, KINDS[actual], sid)
        raw = codec.encode(data, what)
    return raw, {"type": actual, "size": len(raw or b""), "subject": subject,
                 "schema_id": sid, "schema_version": version}


def _check_kind(kind: str | None, got: dict, sid: int, what: str) -> str:
    """The schema's type as v3 names it; a ``type`` that says otherwise is refused."""
    actual = FROM_REGISTRY.get(got.get("schemaType", "AVRO"), "AVRO")
    if kind is not None and kind != actual:
        raise RestError(400, 400, f"{what}: schema {sid} is a {actual} schema, not {kind}")
    return actual
