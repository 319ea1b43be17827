"""The schema types of the schema registry (AVRO, JSON Schema, PROTOBUF): parsing,
canonical forms, and Confluent's compatibility levels.

- :mod:`.base`        — ``SchemaError`` and ``ParsedSchema``, shared by the types.
- :mod:`.avro`        — Avro parsing (fastavro plus the spec's checks), canonical forms.
- :mod:`.avro_resolution` — the spec's reader/writer resolution rules, Confluent's wording.
- :mod:`.json_schema` — JSON Schema parsing (jsonschema checks the drafts, $ref resolution).
- :mod:`.json_model`  — a JSON Schema read into the kinds Confluent's diff tells apart.
- :mod:`.json_diff`   — Confluent's SchemaDiff rules for JSON Schema.
- :mod:`.protobuf`    — Protobuf parsing (proto-schema-parser; imports, well-known types).
- :mod:`.protobuf_descriptor` — a base64 ``FileDescriptorProto`` (confluent-kafka's
  ProtobufSerializer form) written back as .proto text before parsing.
- :mod:`.protobuf_serialized` — the reverse: a parsed schema as the FileDescriptorProto
  Confluent's ``format=serialized`` answers (and the REST gateway's message classes).
- :mod:`.protobuf_diff` — Confluent's SchemaDiff rules for Protobuf.
- :mod:`.levels`      — the levels (NONE, BACKWARD, FORWARD, FULL and their transitive
  forms) built once on each type's pairwise ``can_read(reader, writer)``.

``parse(schema_type, text, references)`` gives a ``ParsedSchema`` or raises
``SchemaError`` (malformed text, an invalid construct, a reference not supplied);
``references`` maps the name a schema refers to (Avro full name, JSON Schema ``$ref``
URL, .proto import path) to that schema's text. ``check_compatibility(level, new,
existing, versions=None)`` gives Confluent's messages (empty = compatible); the existing
schemas run oldest to newest, ``versions`` (same order) add the ``{oldSchemaVersion: N}``
line. ``ParsedSchema.canonical()`` is the text Confluent's registry stores, compares and
returns for the type; ``normalized()`` the text for ``normalize=true``.

Not covered: Confluent's ``validateFields``/reserved-field metadata checks and rule
sets, its LENIENT compatibility policy, and its compatibility groups (the registry owns
those if it adds them). Pure code: no broker, no I/O, no clock.
"""

from __future__ import annotations

from . import avro, json_schema, protobuf
from .base import ParsedSchema, SchemaError
from .levels import LEVELS, check_compatibility

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")

__all__ = [
    "LEVELS", "SCHEMA_TYPES", "ParsedSchema", "SchemaError", "check_compatibility", "parse",
]


def parse(
    schema_type: str, text: str, references: dict[str, str] | None = None, *,
    validate: bool = True,
) -> ParsedSchema:
    """Parse ``text`` as a schema of ``schema_type``. ``references`` maps a referenced
    name (Avro full name, JSON Schema ``$ref`` URL, .proto import path) to that schema's
    text. Raises ``SchemaError`` for an unknown type, malformed text or a missing
    reference. ``validate=False`` is for schemas already registered (read back from
    ``_schemas``): as Confluent's registry does for a schema that is not new, Avro
    defaults are then not checked against their types."""
    references = references or {}
    module = _MODULES.get(schema_type)
    if module is None:
        raise SchemaError(f"Unsupported schema type {schema_type!r}")
    if not isinstance(text, str) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in references.items()
    ):
        raise SchemaError("Invalid schema: schema and references must be strings")
    try:
        if module is avro:
            return avro.parse(text, references, validate)
        return module.parse(text, references)
    except SchemaError:
        raise
    except (RecursionError, ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        # a construct the checks above did not foresee: still the schema's fault, and
        # still a 42201 for the client rather than a 500
        raise SchemaError(f"Invalid schema: {type(e).__name__}: {e}") from None


_MODULES = {"AVRO": avro, "JSON": json_schema, "PROTOBUF": protobuf}
