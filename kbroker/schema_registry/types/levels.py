"""Confluent's compatibility levels, built once on each type's pairwise rule.

``can_read(reader, writer, reader_label, writer_label)`` of a schema type answers whether
data written with ``writer`` can be read with ``reader`` (an empty list) or why not.
The levels, as Confluent's "Schema Evolution and Compatibility" page defines them:
BACKWARD — the new schema reads data written with the old; FORWARD — the old reads data
written with the new; FULL — both. The plain levels check the newest existing schema
only, the ``_TRANSITIVE`` forms every existing schema, newest first, stopping at the
first that fails.

The messages follow Confluent's registry (``SchemaValidatorBuilder`` and the registry's
check): in each reason the reader and writer are called "new" and "old" by role; the
reasons of the new schema reading the old are followed by ``{oldSchemaVersion: N}``
(when the caller gives versions) and ``{oldSchema: '...'}``; FULL lists the old-reads-new
reasons first; a non-empty answer ends with ``{validateFields: 'false', compatibility:
'LEVEL'}``. A different schema type is one reason of its own.
"""

from __future__ import annotations

from typing import Sequence

from .base import ParsedSchema

LEVELS = (
    "NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
    "FULL", "FULL_TRANSITIVE",
)
DIFFERENT_TYPE = "Incompatible because of different schema type"


def _pairwise(schema: ParsedSchema):
    from . import avro_resolution, json_diff, protobuf_diff

    modules = {"AVRO": avro_resolution, "JSON": json_diff, "PROTOBUF": protobuf_diff}
    return modules[schema.schema_type].can_read


def check_compatibility(
    level: str,
    new: ParsedSchema,
    existing: Sequence[ParsedSchema],
    versions: Sequence[int] | None = None,
) -> list[str]:
    """Messages saying why ``new`` may not follow ``existing`` (oldest..newest) at
    ``level``; empty when it may. ``versions``, when given, are the existing schemas'
    version numbers, in the same order (for the ``{oldSchemaVersion: N}`` line)."""
    level = level.upper()
    if level not in LEVELS:
        raise ValueError(f"unknown compatibility level {level!r}")
    if level == "NONE" or not existing:
        return []
    targets = list(enumerate(existing))
    if not level.endswith("_TRANSITIVE"):
        targets = targets[-1:]
    base = level.removesuffix("_TRANSITIVE")
    for index, old in reversed(targets):
        version = versions[index] if versions is not None else None
        messages = _check_pair(base, new, old, version)
        if messages:
            messages.append(f"{{validateFields: 'false', compatibility: '{level}'}}")
            return messages
    return []


def _check_pair(base: str, new: ParsedSchema, old: ParsedSchema, version: int | None) -> list[str]:
    if old.schema_type != new.schema_type:
        return [DIFFERENT_TYPE]
    pairwise = _pairwise(new)

    def can_read(reader: ParsedSchema, writer: ParsedSchema, rl: str, wl: str) -> list[str]:
        try:
            return pairwise(reader, writer, rl, wl)
        except (RecursionError, ValueError, TypeError, KeyError, AttributeError) as e:
            # as Confluent's registry answers a checker failure: incompatible, with a reason
            return [f"Unexpected exception during compatibility check: {type(e).__name__}: {e}"]

    messages: list[str] = []
    if base in ("FORWARD", "FULL"):
        messages += can_read(old, new, "old", "new")
        if base == "FORWARD":
            messages += _about(old, version) if messages else []
    if base in ("BACKWARD", "FULL"):
        backward = can_read(new, old, "new", "old")
        messages += backward + (_about(old, version) if backward else [])
    return messages


def _about(old: ParsedSchema, version: int | None) -> list[str]:
    lines = [] if version is None else [f"{{oldSchemaVersion: {version}}}"]
    return lines + [f"{{oldSchema: '{old.canonical()}'}}"]


__all__ = ["DIFFERENT_TYPE", "LEVELS", "check_compatibility"]
