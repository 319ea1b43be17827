"""Content types of Confluent's REST Proxy and the JSON request body.

``application/vnd.kafka[.EMBEDDED].v2+json`` names the API version and, for records, the
embedded format (``binary`` base64, ``json``, ``avro``, ``protobuf``, ``jsonschema``);
``application/vnd.kafka.v2+json``, ``application/vnd.kafka+json`` and ``application/json``
are accepted too (records then default to ``binary``, as Confluent's proxy documents). A
request body of another type answers 415, an ``Accept`` header no answer can satisfy 406.
"""
from __future__ import annotations

import json
import re

from .errors import RestError, bad_json, not_acceptable, unsupported_media_type

FORMATS = ("binary", "json", "avro", "protobuf", "jsonschema")
SCHEMA_FORMATS = ("avro", "protobuf", "jsonschema")
V2 = "application/vnd.kafka.v2+json"
V3 = "application/json"

_VND = re.compile(r"^application/vnd\.kafka(?:\.([a-z]+))?(?:\.(v[0-9]+))?\+json$")
_GENERIC = {"application/json", "application/vnd.kafka+json", "application/octet-stream"}


def _types(header: str | None) -> list[str]:
    """Media types of a header, parameters (``; charset=...``, ``; q=...``) dropped."""
    return [part.split(";", 1)[0].strip().lower() for part in (header or "").split(",")
            if part.strip()]


def request_format(content_type: str | None, *, records: bool) -> str | None:
    """The embedded format a request body declares (None: no embedded records).
    Raises 415 for a type the proxy does not take."""
    types = _types(content_type)
    if not types:
        if records:
            raise unsupported_media_type("a Content-Type is required "
                                         "(application/vnd.kafka.binary.v2+json, ...)")
        return None
    t = types[0]
    if t in _GENERIC:
        return "binary" if records else None
    m = _VND.match(t)
    if not m or (m.group(2) not in (None, "v2")):
        raise unsupported_media_type(f"{t} is not a content type of this API")
    fmt, version = m.group(1), m.group(2)
    if fmt is not None and version is None and fmt.startswith("v"):
        fmt = None          # application/vnd.kafka.v2+json parsed as format "v2"
    if fmt is None:
        return "binary" if records else None
    if fmt not in FORMATS:
        raise unsupported_media_type(f"unknown embedded format {fmt!r}")
    return fmt


def accepted_format(accept: str | None) -> tuple[bool, str | None]:
    """(acceptable at all, embedded format asked for) of an ``Accept`` header for a v2
    answer. A header of only foreign types is not acceptable (406)."""
    types = _types(accept)
    if not types:
        return True, None
    wanted = None
    ok = False
    for t in types:
        if t in ("*/*", "application/*") or t in _GENERIC:
            ok = True
            continue
        m = _VND.match(t)
        if m and m.group(2) in (None, "v2"):
            fmt = m.group(1)
            if fmt is not None and fmt.startswith("v"):
                fmt = None
            if fmt is not None and fmt not in FORMATS:
                continue
            ok = True
            wanted = wanted or fmt
    return ok, wanted


def check_accept(accept: str | None) -> None:
    ok, _ = accepted_format(accept)
    if not ok:
        raise not_acceptable(f"this resource answers {V2} or application/json")


def parse_json(body: bytes, *, required: bool = True, kind=dict):
    """The body as JSON; 400 with Confluent's code for malformed JSON or the wrong shape."""
    if not body.strip():
        if required:
            raise RestError(400, 400, "the request needs a JSON body")
        return None
    try:
        value = json.loads(body)
    except UnicodeDecodeError as e:
        raise bad_json(f"not UTF-8: {e}") from None
    except ValueError as e:
        raise bad_json(str(e)) from None
    if kind is not None and not isinstance(value, kind):
        raise RestError(422, 422, f"expected a JSON {'object' if kind is dict else 'array'}")
    return value


def iter_json_stream(body: bytes):
    """The JSON values of a body made of concatenated values (v3's streaming produce:
    ``{...}{...}`` or one per line). Yields values, or a RestError for a malformed one
    (after which the rest of the stream cannot be read)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        yield bad_json(f"not UTF-8: {e}")
        return
    decoder = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError as e:
            yield bad_json(str(e))
            return
        yield value
