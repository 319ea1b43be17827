"""API v2: topics, partitions and brokers metadata, and producing records.

- ``GET /topics`` (names, internal topics left out as the proxy's admin client does),
  ``GET /topics/{t}`` (name, configs, partitions), ``GET /topics/{t}/partitions[/{p}]``,
  ``GET /topics/{t}/partitions/{p}/offsets`` (``beginning_offset``, ``end_offset``),
  ``GET /brokers`` — through the Metadata, DescribeConfigs and ListOffsets handlers.
- ``POST /topics/{t}`` and ``POST /topics/{t}/partitions/{p}``: ``{"records": [{"key",
  "value", "partition"}], "key_schema[_id]", "value_schema[_id]"}`` in the embedded format
  of the Content-Type (``binary``, ``json``; ``avro`` through the registry, ``avro.py``;
  ``protobuf`` and ``jsonschema`` the same way, ``schema_formats.py``); answers ``{"key_schema_id", "value_schema_id", "offsets":
  [{"partition", "offset", "error_code", "error"}]}`` with Confluent's per-record codes
  (1: a non-retriable Kafka error, 2: a retriable one). A topic missing (and not
  auto-created by the broker's rules) is 404 40401, a partition 404 40402; a bad record
  refuses the whole request before anything is written.
"""
from __future__ import annotations

from kbroker.replica import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kbroker.wire import messages

from . import cluster, errors, formats, produce
from .app import Call, Routes, json_response
from .errors import RestError, from_kafka
from .inproc import call_api
from .media import SCHEMA_FORMATS, check_accept, parse_json, request_format

TOPIC_RESOURCE = 2
MAX_RECORDS = 10_000            # records per produce request (issue 35's per-request limit)


def _partition_json(p) -> dict:
    isr = set(p.isr_nodes)
    return {"partition": p.partition_index, "leader": p.leader_id,
            "replicas": [{"broker": b, "leader": b == p.leader_id, "in_sync": b in isr}
                         for b in p.replica_nodes]}


async def topic_configs(broker, name: str, *, v3: bool = False) -> list:
    """DescribeConfigs' entries for a topic (the handler checks DESCRIBE_CONFIGS)."""
    R = messages.DescribeConfigsRequest
    resp = await call_api(broker, 32, 4, R(resources=[R.DescribeConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=name, configuration_keys=None)],
        include_synonyms=True, include_documentation=False))
    r = resp.results[0]
    if r.error_code:
        raise from_kafka(r.error_code, r.error_message, v3=v3)
    return list(r.configs)


async def list_topics(call: Call):
    check_accept(call.header("accept"))
    resp = await cluster.metadata(call.broker, None)
    return json_response(sorted(t.name for t in resp.topics
                                if not t.error_code and not cluster.is_internal(t.name)))


async def get_topic(call: Call):
    check_accept(call.header("accept"))
    t = await cluster.topic(call.broker, call.params["topic"])
    configs = await topic_configs(call.broker, t.name)
    return json_response({"name": t.name,
                          "configs": {c.name: c.value for c in configs if not c.is_sensitive},
                          "partitions": [_partition_json(p) for p in
                                         sorted(t.partitions, key=lambda p: p.partition_index)]})


async def list_partitions(call: Call):
    check_accept(call.header("accept"))
    t = await cluster.topic(call.broker, call.params["topic"])
    return json_response([_partition_json(p) for p in
                          sorted(t.partitions, key=lambda p: p.partition_index)])


async def get_partition(call: Call):
    check_accept(call.header("accept"))
    t = await cluster.topic(call.broker, call.params["topic"])
    p = cluster.partition_of(t, cluster.parse_partition(call.params["partition"]))
    return json_response(_partition_json(p))


async def list_offsets(broker, topic: str, partitions: list[int], timestamp: int,
                       *, v3: bool = False, forward=None) -> dict[int, int]:
    """ListOffsets through its handler: partition -> offset (earliest / latest / by time);
    with ``forward``, partitions another node leads are asked of that leader."""
    R = messages.ListOffsetsRequest

    def request(parts):
        return R(replica_id=-1, isolation_level=0, topics=[
            R.ListOffsetsTopic(name=topic, partitions=[R.ListOffsetsPartition(
                partition_index=p, current_leader_epoch=-1, timestamp=timestamp) for p in parts])])
    resp = await call_api(broker, 2, 7, request(partitions))
    answers = {p.partition_index: p for t in resp.topics for p in t.partitions}
    if forward is not None:
        from .forward import NOT_LEADER
        by_leader: dict[int, list[int]] = {}
        for i, p in answers.items():
            if p.error_code == NOT_LEADER:
                by_leader.setdefault(forward.leader(topic, i), []).append(i)
        for leader, parts in by_leader.items():
            got = await forward.call(leader, 2, 7, request(parts)) if leader >= 0 else None
            for t in (got.topics if got is not None else []):
                for p in t.partitions:
                    answers[p.partition_index] = p
    out = {}
    for i, p in answers.items():
        if p.error_code:
            raise from_kafka(p.error_code, v3=v3)
        out[i] = p.offset
    return out


async def partition_offsets(call: Call):
    check_accept(call.header("accept"))
    t = await cluster.topic(call.broker, call.params["topic"])
    p = cluster.partition_of(t, cluster.parse_partition(call.params["partition"])).partition_index
    begin = await list_offsets(call.broker, t.name, [p], EARLIEST_TIMESTAMP, forward=call.gateway.forward)
    end = await list_offsets(call.broker, t.name, [p], LATEST_TIMESTAMP, forward=call.gateway.forward)
    return json_response({"beginning_offset": begin[p], "end_offset": end[p]})


async def list_brokers(call: Call):
    check_accept(call.header("accept"))
    resp = await cluster.metadata(call.broker, [])
    return json_response({"brokers": sorted(b.node_id for b in resp.brokers)})


def _raw_records(fmt: str, body: dict) -> list:
    raw = body.get("records")
    if not isinstance(raw, list) or not raw:
        raise errors.unprocessable("records may not be empty: expected {\"records\": [...]}")
    if len(raw) > MAX_RECORDS:
        raise errors.unprocessable(f"at most {MAX_RECORDS} records per request")
    if fmt in SCHEMA_FORMATS:
        has_key = any(isinstance(r, dict) and r.get("key") is not None for r in raw)
        has_value = any(isinstance(r, dict) and r.get("value") is not None for r in raw)
        if has_key and body.get("key_schema") is None and body.get("key_schema_id") is None:
            raise errors.unprocessable("Request includes keys but does not include key schema",
                                       errors.KEY_SCHEMA_MISSING)
        if has_value and body.get("value_schema") is None and body.get("value_schema_id") is None:
            raise errors.unprocessable("Request includes values but does not include value schema",
                                       errors.VALUE_SCHEMA_MISSING)
    return raw


async def _encoders(call: Call, fmt: str, body: dict, raw: list) -> tuple[dict, object, object]:
    """(schema ids for the answer, key encoder, value encoder) of the request's format."""
    ids = {"key_schema_id": body.get("key_schema_id"), "value_schema_id": body.get("value_schema_id")}
    if fmt not in SCHEMA_FORMATS:
        return ids, (lambda v, what: formats.decode_v2(fmt, v, what)), \
            (lambda v, what: formats.decode_v2(fmt, v, what))
    from . import avro
    encoders = []
    if fmt != "avro":           # protobuf, jsonschema: schema_formats.py
        for side in ("key", "value"):
            used = any(isinstance(r, dict) and r.get(side) is not None for r in raw)
            named = body.get(f"{side}_schema") is not None or body.get(f"{side}_schema_id") is not None
            if not (used or named):
                encoders.append(lambda v, what: None)
                continue
            sid, codec = await call.gateway.typed.for_request(call.server, fmt, call.params["topic"],
                                                              side, body)
            ids[f"{side}_schema_id"] = sid
            encoders.append(codec.encode)
        return ids, encoders[0], encoders[1]
    for side in ("key", "value"):
        used = any(isinstance(r, dict) and r.get(side) is not None for r in raw)
        named = body.get(f"{side}_schema") is not None or body.get(f"{side}_schema_id") is not None
        if not (used or named):
            encoders.append(lambda v, what: None)
            continue
        sid, parsed = await call.gateway.schemas.for_request(call.server, call.params["topic"],
                                                             side, body)
        ids[f"{side}_schema_id"] = sid
        encoders.append(lambda v, what, sid=sid, parsed=parsed: avro.encode(sid, parsed, v, what))
    return ids, encoders[0], encoders[1]


def _records_of(raw: list, fixed_partition: int | None, encode_key, encode_value) -> list[produce.Out]:
    outs = []
    for i, r in enumerate(raw):
        if not isinstance(r, dict):
            raise errors.unprocessable(f"records[{i}] must be an object", errors.INVALID_PAYLOAD)
        partition = fixed_partition
        if fixed_partition is None and r.get("partition") is not None:
            partition = r["partition"]
            if isinstance(partition, bool) or not isinstance(partition, int):
                raise errors.unprocessable(f"records[{i}].partition must be an integer",
                                           errors.INVALID_PAYLOAD)
        outs.append(produce.Out(encode_key(r.get("key"), f"records[{i}].key"),
                                encode_value(r.get("value"), f"records[{i}].value"),
                                partition))
    return outs


def _per_record(results: list[produce.Result]) -> list[dict]:
    out = []
    for r in results:
        if r.error_code:
            out.append({"partition": r.partition, "offset": None,
                        "error_code": 2 if r.retriable else 1, "error": r.message})
        else:
            out.append({"partition": r.partition, "offset": r.offset,
                        "error_code": None, "error": None})
    return out


async def _produce(call: Call, fixed_partition: int | None):
    check_accept(call.header("accept"))
    fmt = request_format(call.header("content-type"), records=True)
    body = parse_json(call.body)
    raw = _raw_records(fmt, body)
    ids, encode_key, encode_value = await _encoders(call, fmt, body, raw)
    outs = _records_of(raw, fixed_partition, encode_key, encode_value)
    t = await cluster.topic(call.broker, call.params["topic"], auto_create=True)
    count = len(t.partitions)
    known = {p.partition_index for p in t.partitions}
    for o in outs:
        if o.partition is not None and o.partition not in known:
            raise RestError(404, errors.PARTITION_NOT_FOUND, "Partition not found.")
    results = await produce.write(call.broker, t.name, outs, count, produce.led_here(call.broker, t),
                                  call.gateway.forward)
    if all(r.error_code in (29,) for r in results):
        raise from_kafka(29, f"Not authorized to access topics: [{t.name}]")
    return json_response({**ids, "offsets": _per_record(results)})


async def produce_topic(call: Call):
    return await _produce(call, None)


async def produce_partition(call: Call):
    return await _produce(call, cluster.parse_partition(call.params["partition"]))


def install(routes: Routes) -> None:
    routes.add("GET", "/topics", list_topics)
    routes.add("GET", "/topics/{topic}", get_topic)
    routes.add("POST", "/topics/{topic}", produce_topic)
    routes.add("GET", "/topics/{topic}/partitions", list_partitions)
    routes.add("GET", "/topics/{topic}/partitions/{partition}", get_partition)
    routes.add("POST", "/topics/{topic}/partitions/{partition}", produce_partition)
    routes.add("GET", "/topics/{topic}/partitions/{partition}/offsets", partition_offsets)
    routes.add("GET", "/brokers", list_brokers)
