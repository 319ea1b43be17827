"""The records of the ``_schemas`` topic, in Confluent Schema Registry's own format.

Keys and values are compact JSON (no spaces), fields in the order Confluent's registry
(Jackson) writes them, so a key written here is byte-for-byte the key Confluent or Karapace
writes for the same thing and log compaction treats them as one key. A ``_schemas`` topic
copied from either of them replays here, and the other way round.

Keys (``keytype`` decides the rest; ``magic`` is 1 for SCHEMA, 0 for the others)::

    {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
    {"keytype":"CONFIG","subject":null,"magic":0}          (null subject: the global config)
    {"keytype":"MODE","subject":"s","magic":0}
    {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
    {"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}
    {"keytype":"NOOP","magic":0}

Values: SCHEMA ``{"subject","version","id","schemaType" (absent for AVRO),"references"
(absent when empty),"schema","deleted"}``; CONFIG ``{"compatibilityLevel": "BACKWARD"}``;
MODE ``{"mode": "READONLY"}``; DELETE_SUBJECT ``{"subject","version"}`` (every version up
to it is soft-deleted); CLEAR_SUBJECT ``{"subject"}``. A null value (tombstone) on a SCHEMA
key deletes that version permanently, on CONFIG/MODE it removes the setting.

Decoding is tolerant as the other registries are: unknown fields are ignored, an unknown
``keytype`` or an unreadable record is reported as ``None`` for the caller to skip (one log
line), never an exception that stops a replay.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT, NOOP = (
    "SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "CLEAR_SUBJECT", "NOOP")
KEY_TYPES = (SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT, NOOP)


def _dump(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class Key:
    """The key of a ``_schemas`` record: its type, and subject and version where they apply."""
    keytype: str
    subject: str | None = None
    version: int | None = None       # SCHEMA keys only

    def encode(self) -> bytes:
        if self.keytype == SCHEMA:
            return _dump({"keytype": SCHEMA, "subject": self.subject, "version": self.version,
                          "magic": 1})
        if self.keytype == NOOP:
            return _dump({"keytype": NOOP, "magic": 0})
        return _dump({"keytype": self.keytype, "subject": self.subject, "magic": 0})


@dataclass(frozen=True)
class Reference:
    """A schema reference: the name it is imported by, and the subject version it names."""
    name: str
    subject: str
    version: int

    def to_json(self) -> dict:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class SchemaValue:
    """The value of a SCHEMA record in ``_schemas``: one registered schema version."""
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = field(default_factory=tuple)
    deleted: bool = False

    def encode(self) -> bytes:
        out: dict = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = [r.to_json() for r in self.references]
        out["schema"] = self.schema
        out["deleted"] = self.deleted
        return _dump(out)


class BadRecord(ValueError):
    """A ``_schemas`` record this registry cannot read (the replay skips it)."""


def _json(data: bytes | None):
    if data is None:
        return None
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise BadRecord(f"not JSON: {e}") from None


def decode_key(data: bytes | None) -> Key:
    obj = _json(data)
    if not isinstance(obj, dict) or obj.get("keytype") not in KEY_TYPES:
        raise BadRecord(f"unknown key {data!r:.200}")
    kt = obj["keytype"]
    subject = obj.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise BadRecord(f"subject is not a string in key {data!r:.200}")
    if kt == SCHEMA:
        version = obj.get("version")
        if not isinstance(subject, str) or not isinstance(version, int):
            raise BadRecord(f"SCHEMA key without subject and version: {data!r:.200}")
        return Key(SCHEMA, subject, version)
    if kt in (DELETE_SUBJECT, CLEAR_SUBJECT) and subject is None:
        raise BadRecord(f"{kt} key without subject")
    return Key(kt, subject)


def decode_schema_value(data: bytes) -> SchemaValue:
    obj = _json(data)
    try:
        refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                     for r in obj.get("references") or ())
        value = SchemaValue(subject=str(obj["subject"]), version=int(obj["version"]),
                            id=int(obj["id"]), schema=str(obj["schema"]),
                            schema_type=str(obj.get("schemaType") or "AVRO"),
                            references=refs, deleted=bool(obj.get("deleted", False)))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise BadRecord(f"SCHEMA value: {e!r}") from None
    return value


def decode_value(key: Key, data: bytes | None):
    """The value object for ``key``'s type (None for a tombstone): SchemaValue for SCHEMA,
    the level/mode string for CONFIG/MODE, the version for DELETE_SUBJECT, True for
    CLEAR_SUBJECT."""
    if data is None:
        return None
    if key.keytype == SCHEMA:
        return decode_schema_value(data)
    obj = _json(data)
    if key.keytype == NOOP:
        return None
    if not isinstance(obj, dict):
        raise BadRecord(f"{key.keytype} value is not an object")
    if key.keytype == CONFIG:
        level = obj.get("compatibilityLevel") or obj.get("compatibility")
        return str(level).upper() if level else None
    if key.keytype == MODE:
        mode = obj.get("mode")
        return str(mode).upper() if mode else None
    if key.keytype == DELETE_SUBJECT:
        try:
            return int(obj["version"])
        except (KeyError, TypeError, ValueError):
            raise BadRecord("DELETE_SUBJECT value without version") from None
    return True


def encode_config(level: str) -> bytes:
    return _dump({"compatibilityLevel": level})


def encode_mode(mode: str) -> bytes:
    return _dump({"mode": mode})


def encode_delete_subject(subject: str, version: int) -> bytes:
    return _dump({"subject": subject, "version": version})


def encode_clear_subject(subject: str) -> bytes:
    return _dump({"subject": subject})
