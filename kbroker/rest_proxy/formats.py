"""Embedded formats: a record's key or value between its JSON form in a request or
answer and the bytes stored in Kafka.

- v2 (``application/vnd.kafka.<format>.v2+json``): ``binary`` is base64 text, ``json`` any
  JSON value stored as its compact UTF-8 text (null stays a null key or value).
- v3 (``/v3/.../records``): ``{"type": "BINARY"|"JSON"|"STRING", "data": ...}`` here;
  the schema-based types through the registry in ``v3_schemas.py``.
- ``avro`` goes through the broker's schema registry (``avro.py``), ``protobuf`` and
  ``jsonschema`` too (``schema_formats.py``); without a registry they answer 422 (42207)
  after Confluent's own checks of the request (42201/42202 for a key or value without a
  schema).
"""
from __future__ import annotations

import base64
import binascii
import json

from . import errors
from .errors import RestError, unprocessable


def decode_v2(fmt: str, value, what: str) -> bytes | None:
    if value is None:
        return None
    if fmt == "binary":
        if not isinstance(value, str):
            raise unprocessable(f"{what} must be a base64 string for the binary format",
                                errors.JSON_CONVERSION)
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as e:
            raise unprocessable(f"Conversion of JSON to Object failed: {what} is not base64 ({e})",
                                errors.JSON_CONVERSION) from None
    if fmt == "json":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    raise unprocessable(f"the {fmt} embedded format needs the schema registry",
                        errors.SERIALIZATION)


def encode_v2(fmt: str, data: bytes | None, what: str):
    if data is None:
        return None
    if fmt == "binary":
        return base64.b64encode(bytes(data)).decode("ascii")
    if fmt == "json":
        try:
            return json.loads(bytes(data))
        except (ValueError, UnicodeDecodeError) as e:
            raise RestError(500, errors.KAFKA_ERROR,
                            f"Kafka error: the {what} is not JSON, consume it with the binary "
                            f"format ({e})") from None
    raise RestError(500, errors.KAFKA_ERROR, f"the {fmt} format needs a schema registry")


V3_TYPES = ("BINARY", "JSON", "STRING")


def decode_v3(data, what: str) -> tuple[bytes | None, str | None]:
    """(bytes, type) of a v3 key/value object; None when absent."""
    if data is None:
        return None, None
    if not isinstance(data, dict):
        raise RestError(400, 400, f"{what} must be an object {{\"type\": ..., \"data\": ...}}")
    kind = str(data.get("type", "")).upper() or None
    if kind is None:
        kind = "JSON"       # Confluent's default when no type and no schema is named
    if kind not in V3_TYPES:    # AVRO, PROTOBUF, JSONSCHEMA: v3_schemas.py, before this
        raise RestError(400, 400, f"{what}: unknown type {kind!r} (BINARY, JSON, STRING, "
                                  "AVRO, PROTOBUF or JSONSCHEMA)")
    value = data.get("data")
    if value is None:
        return None, kind
    if kind == "BINARY":
        if not isinstance(value, str):
            raise RestError(400, 400, f"{what}: BINARY data must be a base64 string")
        try:
            return base64.b64decode(value, validate=True), kind
        except (binascii.Error, ValueError):
            raise RestError(400, 400, f"{what}: BINARY data is not base64") from None
    if kind == "STRING":
        if not isinstance(value, str):
            raise RestError(400, 400, f"{what}: STRING data must be a string")
        return value.encode("utf-8"), kind
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), kind
