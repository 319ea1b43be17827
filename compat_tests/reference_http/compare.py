"""Field-by-field comparison of a recorded reference answer with kbroker's answer to the same step.

Both answers are normalised first, and only for values that cannot be equal between two
servers started at different times on different machines (each rule says why):

- ``content_type``: the media type only (a ``charset`` parameter is not part of the API).
- ``error_code``/``message`` bodies: ``message`` is the server's wording (Confluent's own
  wording changed between releases; clients read ``error_code``), so it is replaced by
  ``<text>``; the code and the status are compared exactly.
- compatibility answers' ``messages`` (``verbose=true``): each implementation words its
  reasons differently; the list is compared by being empty or not (the verdict,
  ``is_compatible``, is compared exactly).
- registry ``GET /schemas/types`` and ``GET /subjects``: sets (Confluent documents no order;
  Karapace answers in registration order, kbroker sorted); compared sorted.
- registry schema ids (``id`` of a registration, lookup, version or schema listing, the ids of
  ``/referencedby``): each side's id is named after the step that first answered it, so that
  a registration one side refuses and the other accepts does not shift every later id; a
  server that gives one schema two ids, or two schemas one id, still differs.
- ``schema`` texts that are JSON (Avro, JSON Schema): compared as JSON values, so the order of
  an object's keys and the white space do not count (Karapace prints Avro with sorted keys,
  Confluent and kbroker in Avro's own order); Protobuf texts are compared as text.
- REST ``base_uri``: the scheme, host and port are the server's own listener; the path (group
  and instance) is compared.
- REST broker ids (``/brokers``, partitions' ``leader`` and ``replicas[].broker``): a Kafka
  node's id is its configuration (1 here, kbroker's own default elsewhere), mapped one to one.
- REST schema ids handed out by the proxy (``key_schema_id``/``value_schema_id``): the reference
  registry numbers them in its own order; mapped one to one (a different id for the same
  schema, or the same id for two schemas, is still a difference).
- REST consumer records' ``timestamp``: the time of the produce; its value is replaced by
  ``<time>`` (whether the field is there at all is still compared).
- REST ``GET /topics``: only the transcript's own topics (``ref-...``); the internal topics a
  broker lists (``_schemas``, Kafka's own) are the broker's.
- REST ``GET /topics/{t}``: ``configs`` values are the broker's defaults (Kafka's and
  kbroker's differ in paths and internal keys); the names of the configs the transcript sets
  are not compared either: only that ``configs`` is an object.

Everything else is compared exactly. A difference that stays is listed in
``known_differences.json`` (step, field, both values, the FINDINGS.md entry); `diff` answers the
remaining ones.
"""
from __future__ import annotations

import copy
import json
import re

ABSENT = "<absent>"
_BASE = re.compile(r"^https?://[^/]+")


def media_type(value):
    if not isinstance(value, str):
        return value
    return value.split(";")[0].strip().lower()


class Binder:
    """One-to-one mapping of the volatile ids seen on one side: an id is named after the step
    where that side first answered it (``<id@avro-register-v1>``), so both sides' names agree
    when they handed out their ids at the same steps, whatever the numbers."""

    def __init__(self):
        self.seen: dict[tuple, str] = {}
        self.step = "?"

    def __call__(self, kind: str, value):
        key = (kind, value)
        if key not in self.seen:
            self.seen[key] = f"<{kind}@{self.step}>"
        return self.seen[key]


def _walk_errors(body):
    if isinstance(body, dict):
        if "error_code" in body and "message" in body:
            body["message"] = "<text>"
        for v in body.values():
            _walk_errors(v)
    elif isinstance(body, list):
        for v in body:
            _walk_errors(v)


def normalize(transcript: str, step: dict, answer: dict, binder: Binder) -> dict:
    out = {"status": answer["status"], "content_type": media_type(answer["content_type"]),
           "body": copy.deepcopy(answer["body"])}
    body = out["body"]
    _walk_errors(body)
    if isinstance(body, dict) and isinstance(body.get("messages"), list) and "is_compatible" in body:
        body["messages"] = "<some>" if body["messages"] else "<none>"
    if transcript != "rest":
        _registry(step, body, binder)
        return out
    path = step["path"].split("?")[0]
    if isinstance(body, dict):
        if isinstance(body.get("base_uri"), str):
            body["base_uri"] = _BASE.sub("<listener>", body["base_uri"])
        for key in ("key_schema_id", "value_schema_id"):
            if body.get(key) is not None:
                body[key] = binder("schema", body[key])
        if path == "/brokers" and isinstance(body.get("brokers"), list):
            body["brokers"] = [binder("broker", b) for b in body["brokers"]]
        if isinstance(body.get("configs"), dict) and path.startswith("/topics/"):
            body["configs"] = "<broker defaults>"
        _bind_partitions(body, binder)
    if isinstance(body, list):
        for item in body:
            if isinstance(item, dict) and isinstance(item.get("timestamp"), int):
                item["timestamp"] = "<time>"
        if step["method"] == "GET" and path == "/topics":
            out["body"] = sorted(t for t in body if isinstance(t, str) and t.startswith("ref-"))
        for item in body:
            if isinstance(item, dict):
                _bind_partitions(item, binder)
    return out


def _schema_json(obj: dict) -> None:
    text = obj.get("schema")
    if isinstance(text, str) and text.lstrip()[:1] in ("{", "[", '"'):
        try:
            obj["schema"] = {"<json>": json.loads(text)}
        except ValueError:
            pass


def _registry(step: dict, body, binder: Binder) -> None:
    path = step["path"].split("?")[0]
    if path in ("/schemas/types", "/subjects") and isinstance(body, list):
        body.sort(key=str)
        return
    if isinstance(body, dict):
        if isinstance(body.get("id"), int):
            body["id"] = binder("id", body["id"])
        _schema_json(body)
    elif isinstance(body, list):
        for i, item in enumerate(body):
            if isinstance(item, dict):
                if isinstance(item.get("id"), int):
                    item["id"] = binder("id", item["id"])
                _schema_json(item)
            elif path.endswith("/referencedby") and isinstance(item, int):
                body[i] = binder("id", item)


def _bind_partitions(obj: dict, binder: Binder) -> None:
    parts = obj.get("partitions") if isinstance(obj.get("partitions"), list) else [obj]
    for p in parts:
        if not isinstance(p, dict):
            continue
        if isinstance(p.get("leader"), int):
            p["leader"] = binder("broker", p["leader"])
        for r in p.get("replicas") or []:
            if isinstance(r, dict) and isinstance(r.get("broker"), int):
                r["broker"] = binder("broker", r["broker"])


def diff(a, b, path: str = "") -> list[tuple[str, object, object]]:
    """Every field where ``a`` (reference) and ``b`` (kbroker) differ: (path, a, b)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{k}" if path else str(k)
            out += diff(a.get(k, ABSENT), b.get(k, ABSENT), sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}.{i}" if path else str(i))
        return out
    if a == b and type(a) is type(b):
        return []
    return [(path, a, b)]


def compare(transcript: str, step: dict, reference: dict, kbroker: dict,
            binders: tuple[Binder, Binder]) -> list[tuple[str, object, object]]:
    for b in binders:
        b.step = step["name"]
    ref = normalize(transcript, step, reference, binders[0])
    got = normalize(transcript, step, kbroker, binders[1])
    return diff(ref, got)
