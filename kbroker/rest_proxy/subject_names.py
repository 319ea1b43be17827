"""Confluent's subject name strategies, as the REST gateway's API v3 produce names a
record's key or value subject (``subject_name_strategy`` of a v3 key/value object).

- ``TOPIC_NAME`` (Confluent's ``TopicNameStrategy``): ``<topic>-key`` / ``<topic>-value``;
  it needs no schema, so it also serves ``schema_version`` and the latest version.
- ``RECORD_NAME`` (``RecordNameStrategy``): the schema's record name.
- ``TOPIC_RECORD_NAME`` (``TopicRecordNameStrategy``): ``<topic>-<record name>``.

The record name is what Confluent's parsed schemas answer for ``name()``: an Avro
``record`` (or ``error``) schema's full name (namespace and name; a dotted name is already
full), a top-level reference to such a record included; a Protobuf file's first
top-level message, else its first enum, prefixed by the file's package; a JSON Schema's
root ``title``. Other schemas (an Avro primitive, enum, array or union; a JSON Schema
without a title) have none: the record-name strategies cannot name their subject.

The names are Kafka REST's enum constants exactly (upper case; ``record_name`` is not
one of them). Pure code: parsed schemas in (``kbroker.schema_registry.types``), names out;
``RecordNames`` is one gateway's memo of them.
"""
from __future__ import annotations

TOPIC_NAME = "TOPIC_NAME"
RECORD_NAME = "RECORD_NAME"
TOPIC_RECORD_NAME = "TOPIC_RECORD_NAME"
STRATEGIES = (TOPIC_NAME, RECORD_NAME, TOPIC_RECORD_NAME)


def uses_schema(strategy: str) -> bool:
    """Whether the strategy needs the schema to name the subject."""
    return strategy != TOPIC_NAME


def record_name(schema) -> str | None:
    """The record name of a parsed schema (``ParsedSchema`` of the registry's types), or
    None when the schema has none."""
    kind = getattr(schema, "schema_type", "")
    if kind == "AVRO":
        top = schema.parsed
        if isinstance(top, str):        # a named type given by reference
            top = schema.named.get(top)
        # fastavro's form carries full names already
        if isinstance(top, dict) and top.get("type") in ("record", "error"):
            return top.get("name")
        return None
    if kind == "PROTOBUF":
        from proto_schema_parser import ast
        elements = schema.file.tree.file_elements
        first = next((e for e in elements if isinstance(e, ast.Message)), None) or next(
            (e for e in elements if isinstance(e, ast.Enum)), None)
        if first is None:
            return None
        package = schema.file.package
        return f"{package}.{first.name}" if package else first.name
    if kind == "JSON":
        title = schema.raw.get("title") if isinstance(schema.raw, dict) else None
        return title if isinstance(title, str) else None
    return None


def subject_name(strategy: str, topic: str, side: str, name: str | None) -> str | None:
    """The subject of ``side`` ('key' or 'value') under ``strategy``; None when the
    strategy needs a record name and there is none."""
    if strategy == TOPIC_NAME:
        return f"{topic}-{side}"
    if name is None:
        return None
    return name if strategy == RECORD_NAME else f"{topic}-{name}"


class RecordNames:
    """One gateway's record names by schema id (an id never changes meaning) and by
    (schema type, text), so that a stream of records naming one schema parses it once."""

    LIMIT = 1000

    def __init__(self):
        self._by_key: dict[object, str | None] = {}

    async def name_of(self, key, parse) -> str | None:
        """The record name memoised under ``key``; else ``record_name(await parse())``
        (``parse`` may raise: nothing is kept then)."""
        if key in self._by_key:
            return self._by_key[key]
        name = record_name(await parse())
        if len(self._by_key) >= self.LIMIT:
            self._by_key.clear()
        self._by_key[key] = name
        return name
