"""API v2 consumer instances (``/consumers/{group}/instances/{name}/...``).

- ``POST /consumers/{g}`` ``{"name", "format", "auto.offset.reset", "auto.commit.enable",
  "consumer.request.timeout.ms"}`` → ``{"instance_id", "base_uri"}``; ``DELETE`` the
  instance → 204.
- ``POST|GET|DELETE .../subscription`` (``{"topics": [...]}`` or ``{"topic_pattern"}``),
  ``POST|GET .../assignments`` (``{"partitions": [{"topic", "partition"}]}``),
  ``POST .../positions`` (``{"offsets": [{"topic", "partition", "offset"}]}``),
  ``POST .../positions/beginning|end`` (``{"partitions": [...]}``),
  ``GET .../records?timeout=&max_bytes=`` (format from ``Accept``, else the instance's;
  another format than the instance's is 406 40601),
  ``POST .../offsets`` (the given offsets are the last ones consumed, so the next one is
  committed, as Confluent's REST Proxy and Karapace do; without a body, the positions of
  everything polled so far) and ``GET
  .../offsets`` (``{"partitions": [...]}`` → the committed offsets).

The rules (membership, positions, expiry) are in ``consumers.py``.
"""
from __future__ import annotations

from kbroker.replica import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

from . import errors, formats
from .app import Call, Routes, json_response, no_content
from .consumers import DEFAULT_POLL_BYTES, MAX_POLL_BYTES
from .errors import RestError
from .media import accepted_format, check_accept, parse_json, request_format

BASE = "/consumers/{group}/instances/{instance}"


def _instance(call: Call):
    return call.gateway.consumers.get(call.params["group"], call.params["instance"])


def _partitions(value, what: str = "partitions") -> list[tuple[str, int]]:
    if not isinstance(value, list):
        raise errors.unprocessable(f"{what} must be a list of {{\"topic\", \"partition\"}}")
    out = []
    for i, p in enumerate(value):
        if (not isinstance(p, dict) or not isinstance(p.get("topic"), str)
                or isinstance(p.get("partition"), bool) or not isinstance(p.get("partition"), int)):
            raise errors.unprocessable(f"{what}[{i}] needs a topic (string) and a partition (integer)")
        out.append((p["topic"], p["partition"]))
    return out


def _offsets(value) -> dict[tuple[str, int], int]:
    if not isinstance(value, list):
        raise errors.unprocessable("offsets must be a list of {\"topic\", \"partition\", \"offset\"}")
    out = {}
    for i, p in enumerate(value):
        if (not isinstance(p, dict) or not isinstance(p.get("topic"), str)
                or not isinstance(p.get("partition"), int) or isinstance(p.get("partition"), bool)
                or not isinstance(p.get("offset"), int) or isinstance(p.get("offset"), bool)
                or p["offset"] < 0):
            raise errors.unprocessable(f"offsets[{i}] needs a topic, a partition and an offset ≥ 0")
        out[(p["topic"], p["partition"])] = p["offset"]
    return out


async def create(call: Call):
    check_accept(call.header("accept"))
    request_format(call.header("content-type"), records=False)
    body = parse_json(call.body, required=False) or {}
    inst = call.gateway.consumers.create(call.params["group"], body)
    return json_response({"instance_id": inst.name,
                          "base_uri": f"{call.base_url()}/consumers/{inst.group}/instances/{inst.name}"})


async def delete(call: Call):
    inst = _instance(call)
    await call.gateway.consumers.remove(inst)
    return no_content()


async def subscribe(call: Call):
    inst = _instance(call)
    body = parse_json(call.body)
    topics, pattern = body.get("topics"), body.get("topic_pattern")
    if (topics is None) == (pattern is None):
        raise errors.unprocessable("give either topics (a list) or topic_pattern (a regular expression)")
    if topics is not None and (not isinstance(topics, list) or not topics
                               or not all(isinstance(t, str) and t for t in topics)):
        raise errors.unprocessable("topics must be a non-empty list of topic names")
    if pattern is not None and (not isinstance(pattern, str) or not pattern):
        raise errors.unprocessable("topic_pattern must be a regular expression")
    if inst.subscribed and (inst.topics != topics or inst.pattern != pattern):
        raise RestError(409, errors.CONSUMER_ALREADY_SUBSCRIBED,
                        "Consumer cannot subscribe the the specified target because it has "
                        "already subscribed to other topics.")
    if not inst.subscribed:
        await call.gateway.consumers.subscribe(inst, topics, pattern)
    return no_content()


async def get_subscription(call: Call):
    inst = _instance(call)
    return json_response({"topics": list(inst.topics or [])} if inst.pattern is None
                         else {"topics": [], "topic_pattern": inst.pattern})


async def unsubscribe(call: Call):
    inst = _instance(call)
    await call.gateway.consumers.unsubscribe(inst)
    return no_content()


async def assign(call: Call):
    inst = _instance(call)
    body = parse_json(call.body)
    call.gateway.consumers.assign(inst, _partitions(body.get("partitions")))
    return no_content()


async def get_assignments(call: Call):
    inst = _instance(call)
    return json_response({"partitions": [{"topic": t, "partition": p} for t, p in inst.assignment()]})


async def seek(call: Call):
    inst = _instance(call)
    body = parse_json(call.body)
    await call.gateway.consumers.seek(inst, list(_offsets(body.get("offsets"))), None,
                                      _offsets(body.get("offsets")))
    return no_content()


async def seek_beginning(call: Call):
    inst = _instance(call)
    body = parse_json(call.body)
    await call.gateway.consumers.seek(inst, _partitions(body.get("partitions")), EARLIEST_TIMESTAMP)
    return no_content()


async def seek_end(call: Call):
    inst = _instance(call)
    body = parse_json(call.body)
    await call.gateway.consumers.seek(inst, _partitions(body.get("partitions")), LATEST_TIMESTAMP)
    return no_content()


async def records(call: Call):
    inst = _instance(call)
    ok, wanted = accepted_format(call.header("accept"))
    if not ok:
        raise errors.not_acceptable("records answer application/vnd.kafka.<format>.v2+json")
    if wanted is not None and wanted != inst.fmt:
        raise RestError(406, errors.CONSUMER_FORMAT_MISMATCH,
                        "The requested embedded data format does not match the deserializer "
                        "for this consumer instance")
    timeout = call.query_int("timeout", inst.request_timeout_ms)
    max_bytes = call.query_int("max_bytes", DEFAULT_POLL_BYTES)
    if timeout < 0 or max_bytes <= 0:
        raise RestError(400, 400, "timeout must be ≥ 0 and max_bytes > 0")

    async def render(t, p, o, k, v, _headers):
        if inst.fmt == "avro":
            from .avro import decode
            schemas = call.gateway.schemas
            return {"topic": t, "key": await decode(call.server, schemas, k, f"key at {t}-{p}@{o}"),
                    "value": await decode(call.server, schemas, v, f"value at {t}-{p}@{o}"),
                    "partition": p, "offset": o}
        if inst.fmt in ("protobuf", "jsonschema"):
            typed = call.gateway.typed
            return {"topic": t,
                    "key": await typed.decode(call.server, inst.fmt, k, f"key at {t}-{p}@{o}"),
                    "value": await typed.decode(call.server, inst.fmt, v, f"value at {t}-{p}@{o}"),
                    "partition": p, "offset": o}
        return {"topic": t, "key": formats.encode_v2(inst.fmt, k, f"key at {t}-{p}@{o}"),
                "value": formats.encode_v2(inst.fmt, v, f"value at {t}-{p}@{o}"),
                "partition": p, "offset": o}
    out = await call.gateway.consumers.poll(inst, min(timeout, 30_000),
                                            min(max_bytes, MAX_POLL_BYTES), render)
    return json_response(out, content_type=f"application/vnd.kafka.{inst.fmt}.v2+json")


async def commit(call: Call):
    inst = _instance(call)
    body = parse_json(call.body, required=False)
    if body and body.get("offsets") is not None:
        # the last offsets consumed: the next one is committed (kafka-rest's KafkaConsumerState)
        offsets = {tp: o + 1 for tp, o in _offsets(body["offsets"]).items()}
    else:
        offsets = {tp: o for tp, o in inst.positions.items() if tp in set(inst.assignment())}
    await call.gateway.consumers.commit(inst, offsets)
    return no_content()


async def committed(call: Call):
    inst = _instance(call)
    body = parse_json(call.body, required=False) or {}
    parts = _partitions(body.get("partitions", []))
    got = await call.gateway.consumers.committed(inst, parts)
    return json_response({"offsets": [{"topic": t, "partition": p, "offset": got[(t, p)][0],
                                       "metadata": got[(t, p)][1]}
                                      for t, p in parts if (t, p) in got]})


def install(routes: Routes) -> None:
    routes.add("POST", "/consumers/{group}", create)
    routes.add("DELETE", BASE, delete)
    routes.add("POST", BASE + "/subscription", subscribe)
    routes.add("GET", BASE + "/subscription", get_subscription)
    routes.add("DELETE", BASE + "/subscription", unsubscribe)
    routes.add("POST", BASE + "/assignments", assign)
    routes.add("GET", BASE + "/assignments", get_assignments)
    routes.add("POST", BASE + "/positions", seek)
    routes.add("POST", BASE + "/positions/beginning", seek_beginning)
    routes.add("POST", BASE + "/positions/end", seek_end)
    routes.add("GET", BASE + "/records", records)
    routes.add("POST", BASE + "/offsets", commit)
    routes.add("GET", BASE + "/offsets", committed)
