"""Placeholder until the protobuf type lands: parse() refuses, can_read() finds nothing."""

from __future__ import annotations

from .base import ParsedSchema, SchemaError


def parse(text: str, references: dict[str, str] | None = None) -> ParsedSchema:
    raise SchemaError("schema type not supported yet")


def can_read(reader, writer, reader_label: str = "reader", writer_label: str = "writer") -> list[str]:
    return []
