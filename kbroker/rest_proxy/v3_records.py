"""API v3 produce: ``POST /v3/clusters/{id}/topics/{t}/records``.

The body is a stream of JSON objects, one per record (``{"partition_id", "headers":
[{"name", "value" (base64)}], "key": {"type", "data"}, "value": {...}, "timestamp"}``,
written back to back or one per line); the answer is one JSON object per record, in
order: ``{"error_code": 200, "cluster_id", "topic_name", "partition_id", "offset",
"timestamp", "key": {"type", "size"}, "value": {...}}`` or ``{"error_code": 4xx/5xx,
"message"}``. A record that cannot be read (malformed JSON, unknown type, a partition the
topic has not) gets its error and is not written; the others are written in one Produce
request. A body of one record is answered with that one object and its status; a stream
with 200 and one object per line. A topic that does not exist is 404 for the whole call.
Keys and values of type ``AVRO``, ``PROTOBUF`` or ``JSONSCHEMA`` (or naming a schema) go
through the schema registry (``v3_schemas.py``); their answers add ``subject``,
``schema_id`` and ``schema_version``.
"""
from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime, timezone

from kbroker.http.router import Response

from . import cluster, formats, produce, v3_schemas
from .app import Call, Routes
from .errors import RestError
from .media import iter_json_stream
from .v2_topics import MAX_RECORDS
from .v3 import cluster_id

MAX_HEADERS = 64


def _timestamp(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise RestError(400, 400, "timestamp must be an ISO 8601 date-time")
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise RestError(400, 400, f"timestamp {value!r} is not an ISO 8601 date-time") from None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return int(ts.timestamp() * 1000)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _headers(value) -> tuple:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_HEADERS:
        raise RestError(400, 400, f"headers must be a list of at most {MAX_HEADERS} {{name, value}}")
    out = []
    for h in value:
        if not isinstance(h, dict) or not isinstance(h.get("name"), str):
            raise RestError(400, 400, "each header needs a name")
        v = h.get("value")
        if v is not None:
            if not isinstance(v, str):
                raise RestError(400, 400, "a header value must be base64 text or null")
            try:
                v = base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                raise RestError(400, 400, f"header {h['name']!r}: value is not base64") from None
        out.append((h["name"], v))
    return tuple(out)


async def _side(call: Call, topic: str, side: str, obj) -> tuple[bytes | None, dict | None]:
    """(bytes, answer object) of a key or value: schema-based ones through the registry
    (``v3_schemas.py``), the others by ``formats.decode_v3``."""
    if v3_schemas.wants_schema(obj):
        return await v3_schemas.encode(call, topic, side, obj)
    data, kind = formats.decode_v3(obj, side)
    return data, None if kind is None else {"type": kind, "size": len(data or b"")}


async def _read(call: Call, topic: str, item, known: set[int]):
    """(Out, key answer, value answer) of one request object, or a RestError."""
    if isinstance(item, RestError):
        return item
    if not isinstance(item, dict):
        return RestError(400, 400, "each record must be a JSON object")
    try:
        partition = item.get("partition_id")
        if partition is not None:
            if isinstance(partition, bool) or not isinstance(partition, int):
                raise RestError(400, 400, "partition_id must be an integer")
            if partition not in known:
                raise RestError(404, 404, "This server does not host this topic-partition.")
        key, kanswer = await _side(call, topic, "key", item.get("key"))
        value, vanswer = await _side(call, topic, "value", item.get("value"))
        return (produce.Out(key, value, partition, _headers(item.get("headers")),
                            _timestamp(item.get("timestamp"))), kanswer, vanswer)
    except RestError as e:
        return e


async def produce_records(call: Call):
    cid = cluster_id(call)
    t = await cluster.topic(call.broker, call.params["topic"], v3=True)
    known = {p.partition_index for p in t.partitions}
    items = list(iter_json_stream(call.body))
    if not items:
        raise RestError(400, 400, "the request needs one JSON object per record")
    if len(items) > MAX_RECORDS:
        raise RestError(400, 400, f"at most {MAX_RECORDS} records per request")
    read = [await _read(call, t.name, i, known) for i in items]
    good = [r for r in read if not isinstance(r, RestError)]
    results = iter(await produce.write(call.broker, t.name, [g[0] for g in good], len(t.partitions),
                                       produce.led_here(call.broker, t), call.gateway.forward)
                   if good else [])
    answers = []
    for r in read:
        if isinstance(r, RestError):
            answers.append(r.body())
            continue
        out, kanswer, vanswer = r
        res = next(results)
        if res.error_code:
            e = RestError(403, 403, res.message) if res.error_code == 29 else RestError(
                500, 500, res.message or "")
            answers.append(e.body())
            continue
        answers.append({"error_code": 200, "cluster_id": cid, "topic_name": t.name,
                        "partition_id": res.partition, "offset": res.offset,
                        "timestamp": _iso(res.timestamp),
                        "key": kanswer, "value": vanswer})
    if len(answers) == 1:
        status = answers[0]["error_code"]
        return Response(status, json.dumps(answers[0]).encode(), "application/json")
    return Response(200, b"".join(json.dumps(a).encode() + b"\n" for a in answers), "application/json")


def install(routes: Routes) -> None:
    routes.add("POST", "/v3/clusters/{cluster}/topics/{topic}/records", produce_records)
