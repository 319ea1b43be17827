"""Topics: the list, one topic (partitions, offsets, configs), creating a topic, altering
its configs and producing a record — each change through the Kafka API handler
(CreateTopics, IncrementalAlterConfigs, Produce) called in process."""
from __future__ import annotations

import trio

from kbroker.api.describe_configs import describe_resource
from kbroker.metadata.image import INTERNAL_TOPICS
from kbroker.replica import ReplicaError
from kbroker.wire import messages
from kbroker.wire import records as rec

from kbroker.authz.acls import ALTER_CONFIGS, DESCRIBE, DESCRIBE_CONFIGS, TOPIC, WRITE

from .auth import allowed, require
from .browse import offsets_of
from .errors import ApiFailure, error_name
from .inproc import call_api

TOPIC_RESOURCE = 2
OP_SET, OP_DELETE = 0, 1
PRODUCE_TIMEOUT_MS = 10_000
MAX_HEADERS = 64


def _local(replicas, topic: str, index: int):
    part = replicas.get_replica(topic, index) if replicas is not None else None
    return part


def topics_list(broker, history) -> list[dict]:
    image = broker.metadata
    out = []
    for name in sorted(image.topics):
        if not allowed(broker, DESCRIBE, TOPIC, name):      # as Metadata hides it
            continue
        t = image.topics[name]
        size = 0
        messages_ = 0
        led = 0
        for i, p in t.partitions.items():
            part = _local(broker.replicas, name, i)
            if part is not None and part.log is not None:
                size += part.log.size
                if p.leader == broker.node_id:
                    led += 1
                    messages_ += max(0, part.high_watermark - part.log_start_offset)
        first = next(iter(t.partitions.values()), None)
        out.append({"name": name, "topic_id": str(t.topic_id), "partitions": len(t.partitions),
                    "replication_factor": len(first.replicas) if first else 0,
                    "internal": name in INTERNAL_TOPICS, "size_bytes": size,
                    "messages": messages_, "partitions_led_here": led,
                    "under_replicated": sum(1 for p in t.partitions.values()
                                            if len(p.isr) < len(p.replicas)),
                    "messages_per_sec": history.topic_rate(name)})
    return out


def topic_detail(broker, name: str) -> dict:
    require(broker, DESCRIBE, TOPIC, name)
    image = broker.metadata
    t = image.topics.get(name)
    if t is None:
        raise ApiFailure(3, f"Topic '{name}' does not exist.", status=404)
    parts = []
    for i in sorted(t.partitions):
        p = t.partitions[i]
        row = {"partition": i, "leader": p.leader, "leader_epoch": p.leader_epoch,
               "replicas": list(p.replicas), "isr": list(p.isr),
               # KIP-966, as DescribeTopicPartitions answers them from the same image
               "elr": list(p.elr), "last_known_elr": list(p.last_known_elr),
               "offline": p.leader < 0, "local": p.leader == broker.node_id}
        try:
            row.update(offsets_of(broker.replicas, name, i))
            local = _local(broker.replicas, name, i)
            row["size_bytes"] = local.log.size if local is not None else None
        except ReplicaError as e:
            row["error"] = error_name(e.error_code)
        parts.append(row)
    configs_visible = allowed(broker, DESCRIBE_CONFIGS, TOPIC, name)
    if configs_visible:
        code, message, entries = describe_resource(broker, TOPIC_RESOURCE, name)
        if code:
            raise ApiFailure(code, message)
    else:
        entries = []                    # shown as "no access" by the page
    configs = [{"name": e.name, "value": None if e.sensitive else e.value, "source": int(e.source),
                "read_only": bool(e.read_only), "sensitive": bool(e.sensitive),
                "default": int(e.source) == 5} for e in entries]
    return {"name": name, "topic_id": str(t.topic_id), "internal": name in INTERNAL_TOPICS,
            "partitions": parts, "configs": configs, "configs_authorized": configs_visible,
            "node_id": broker.node_id}


async def create_topic(broker, body: dict) -> dict:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise ApiFailure(42, "a topic needs a name")
    n = _int(body.get("partitions", -1), "partitions")
    rf = _int(body.get("replication_factor", -1), "replication_factor")
    configs = body.get("configs") or {}
    if not isinstance(configs, dict):
        raise ApiFailure(42, "configs must be an object of name: value")
    R = messages.CreateTopicsRequest
    req = R(timeout_ms=30_000, validate_only=False, topics=[R.CreatableTopic(
        name=name, num_partitions=n, replication_factor=rf, assignments=[],
        configs=[R.CreatableTopicConfig(name=str(k), value=None if v is None else str(v))
                 for k, v in configs.items()])])
    resp = await call_api(broker, 19, 7, req)
    r = resp.topics[0]
    if r.error_code:
        raise ApiFailure(r.error_code, r.error_message)
    return {"name": r.name, "topic_id": str(r.topic_id), "partitions": r.num_partitions,
            "replication_factor": r.replication_factor}


async def alter_configs(broker, body: dict) -> dict:
    name = body.get("topic")
    if isinstance(name, str):
        require(broker, ALTER_CONFIGS, TOPIC, name)
    if not isinstance(name, str) or name not in broker.metadata.topics:
        raise ApiFailure(3, f"Topic '{name}' does not exist.", status=404)
    sets = body.get("set") or {}
    deletes = body.get("delete") or []
    if not isinstance(sets, dict) or not isinstance(deletes, list):
        raise ApiFailure(42, "expected {\"set\": {name: value}, \"delete\": [name]}")
    R = messages.IncrementalAlterConfigsRequest
    ops = [R.AlterableConfig(name=str(k), config_operation=OP_SET, value=str(v)) for k, v in sets.items()]
    ops += [R.AlterableConfig(name=str(k), config_operation=OP_DELETE, value=None) for k in deletes]
    if not ops:
        raise ApiFailure(42, "nothing to change")
    req = R(validate_only=False, resources=[R.AlterConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=name, configs=ops)])
    resp = await call_api(broker, 44, 1, req)
    r = resp.responses[0]
    if r.error_code:
        raise ApiFailure(r.error_code, r.error_message)
    return {"topic": name, "changed": sorted(sets) + sorted(deletes)}


def _int(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise ApiFailure(42, f"{what} must be an integer")
    try:
        return int(v)
    except ValueError:
        raise ApiFailure(42, f"{what} must be an integer, got {v!r}") from None


def _bytes(v, what: str) -> bytes | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ApiFailure(42, f"{what} must be a string or null")
    return v.encode("utf-8")


def murmur2(data: bytes) -> int:
    """Kafka's default partitioner hash (``Utils.murmur2``), so a keyed record produced
    here lands where a Java or librdkafka (``murmur2_random``) producer would put it."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    i = 0
    while length - i >= 4:
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
        i += 4
    rest = length - i
    if rest == 3:
        h ^= data[i + 2] << 16
    if rest >= 2:
        h ^= data[i + 1] << 8
    if rest >= 1:
        h ^= data[i]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


async def produce(broker, body: dict) -> dict:
    """One record, appended by the Produce handler (acks=all) as a client's would be."""
    name = body.get("topic")
    if isinstance(name, str):
        require(broker, WRITE, TOPIC, name)
    t = broker.metadata.topics.get(name) if isinstance(name, str) else None
    if t is None:
        raise ApiFailure(3, f"Topic '{name}' does not exist.", status=404)
    key = _bytes(body.get("key"), "key")
    value = _bytes(body.get("value"), "value")
    raw_headers = body.get("headers") or []
    if not isinstance(raw_headers, list) or len(raw_headers) > MAX_HEADERS:
        raise ApiFailure(42, f"headers must be a list of at most {MAX_HEADERS} {{key, value}}")
    headers = []
    for h in raw_headers:
        if not isinstance(h, dict) or not isinstance(h.get("key"), str) or not h["key"]:
            raise ApiFailure(42, "each header needs a non-empty string key")
        headers.append((h["key"], _bytes(h.get("value"), "header value")))
    n = len(t.partitions)
    partition = body.get("partition")
    if partition is None or partition == "" or partition == -1:
        partition = ((murmur2(key) & 0x7FFFFFFF) % n if key is not None
                     else broker.now_ms() % n)
    else:
        partition = _int(partition, "partition")
        if partition not in t.partitions:
            raise ApiFailure(3, f"Topic '{name}' has no partition {partition} "
                                f"(partitions 0..{n - 1}).", status=404)
    batch = rec.build_batch([(key, value, headers, broker.now_ms())])
    R = messages.ProduceRequest
    req = R(transactional_id=None, acks=-1, timeout_ms=PRODUCE_TIMEOUT_MS, topic_data=[
        R.TopicProduceData(name=name, partition_data=[R.PartitionProduceData(
            index=partition, records=batch)])])
    resp = await call_api(broker, 0, 9, req)
    pr = resp.responses[0].partition_responses[0]
    if pr.error_code:
        msg = pr.error_message or error_name(pr.error_code)
        if pr.error_code == 6:
            leader = t.partitions[partition].leader
            msg = f"partition {partition} is led by node {leader}: produce through its console"
        elif pr.error_code == 10 and not pr.error_message:
            limit = next((e.value for e in describe_resource(broker, TOPIC_RESOURCE, name)[2]
                          if e.name == "max.message.bytes"), "?")
            msg = (f"the record ({len(batch)} bytes as a batch) is larger than the topic's "
                   f"max.message.bytes ({limit})")
        raise ApiFailure(pr.error_code, msg)
    await trio.lowlevel.checkpoint()
    return {"topic": name, "partition": partition, "offset": pr.base_offset,
            "size": len(batch)}
