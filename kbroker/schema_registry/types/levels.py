"""Confluent's compatibility levels, built once on each type's pairwise rule.

``can_read(reader, writer)`` of a schema type answers whether data written with
``writer`` can be read with ``reader``. The levels (Confluent's "Schema Evolution and
Compatibility" page): BACKWARD — the new schema reads data of the old; FORWARD — the old
reads data of the new; FULL — both. The plain levels check the newest existing schema
only, the ``_TRANSITIVE`` forms every existing schema. As Confluent's registry does, the
existing schemas are checked newest first and the answer is the messages of the first
incompatible one, followed by ``{oldSchemaVersion: N}`` (when versions are given),
``{oldSchema: '...'}`` and ``{validateFields: 'false', compatibility: 'LEVEL'}``. In the
messages the reader and writer are called "new" and "old" by their role: a BACKWARD
failure says what the *new* schema lacks to read the *old*, a FORWARD one the reverse.
"""

from __future__ import annotations

from typing import Sequence

from .base import ParsedSchema, SchemaError

LEVELS = (
    "NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
    "FULL", "FULL_TRANSITIVE",
)


def _pairwise(schema: ParsedSchema):
    from . import avro

    modules = {"AVRO": avro}
    return modules[schema.schema_type].can_read


def check_compatibility(
    level: str,
    new: ParsedSchema,
    existing: Sequence[ParsedSchema],
    versions: Sequence[int] | None = None,
) -> list[str]:
    """Messages saying why ``new`` may not follow ``existing`` (oldest..newest) at
    ``level``; empty when it may. ``versions``, when given, are the existing schemas'
    version numbers (for the ``{oldSchemaVersion: N}`` line)."""
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
        if old.schema_type != new.schema_type:
            messages = [
                f"Incompatible because of different schema type (old: {old.schema_type}, "
                f"new: {new.schema_type})"
            ]
        else:
            messages = _check_pair(base, new, old)
        if messages:
            if versions is not None:
                messages.append(f"{{oldSchemaVersion: {versions[index]}}}")
            messages.append(f"{{oldSchema: '{old.canonical()}'}}")
            messages.append(f"{{validateFields: 'false', compatibility: '{level}'}}")
            return messages
    return []


def _check_pair(base: str, new: ParsedSchema, old: ParsedSchema) -> list[str]:
    can_read = _pairwise(new)
    messages: list[str] = []
    if base in ("BACKWARD", "FULL"):
        messages += can_read(new, old, "new", "old")
    if base in ("FORWARD", "FULL"):
        messages += can_read(old, new, "old", "new")
    return messages


__all__ = ["LEVELS", "SchemaError", "check_compatibility"]
