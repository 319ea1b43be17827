"""API v3 (Confluent REST Proxy's cluster admin API, ``application/json``): clusters,
brokers, topics (list, create, delete, get), topic configs and partitions.

- ``GET /v3/clusters``, ``/v3/clusters/{id}`` — the one cluster this node belongs to
  (another id answers 404).
- ``GET .../brokers``, ``.../brokers/{b}`` (Metadata's brokers); broker configs, per broker
  and cluster-wide, are ``v3_configs.py``, partition reassignments ``v3_reassignments.py``.
- ``GET|POST .../topics``, ``GET|DELETE .../topics/{t}`` (Metadata, CreateTopics,
  DeleteTopics handlers; ``POST`` takes ``{"topic_name", "partitions_count",
  "replication_factor", "configs": [{"name", "value"}]}`` and answers 201).
- ``GET .../topics/{t}/configs``, ``GET|PUT|DELETE .../topics/{t}/configs/{name}``,
  ``POST .../topics/{t}/configs:alter`` (DescribeConfigs, IncrementalAlterConfigs).
- ``GET .../topics/{t}/partitions``, ``.../partitions/{p}``, ``.../partitions/{p}/replicas``.

Answers carry Confluent's ``kind``, ``metadata.self`` (the URL of the resource as the client
addressed this gateway), ``metadata.resource_name`` (``crn:///kafka=<id>/...``) and
``related`` links; lists are ``{"kind": "...List", "metadata": {"self", "next": null},
"data": [...]}``. Errors are ``{"error_code": <HTTP status>, "message"}``.
"""
from __future__ import annotations

from kbroker.wire import messages

from . import cluster
from .app import Call, Routes, json_response
from .errors import RestError, from_kafka
from .inproc import call_api
from .media import parse_json
from .v2_topics import TOPIC_RESOURCE, topic_configs

SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
           3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
           6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
OP_SET, OP_DELETE = 0, 1


def ok(value, status: int = 200):
    return json_response(value, status, v3=True)


def _empty():
    from kbroker.http.router import Response
    return Response(204, b"", "application/json")


def cluster_id(call: Call) -> str:
    cid = call.broker.metadata.cluster_id
    asked = call.params.get("cluster")
    if asked is not None and asked != cid:
        raise RestError(404, 404, f"Cluster {asked} cannot be found.")
    return cid


def url(call: Call, *parts) -> str:
    return call.base_url() + "/v3/clusters/" + "/".join(str(p) for p in parts)


def crn(cid: str, *pairs) -> str:
    return f"crn:///kafka={cid}" + "".join(f"/{k}={v}" for k, v in pairs)


def listing(call: Call, kind: str, data: list) -> dict:
    return {"kind": kind, "metadata": {"self": call.base_url() + call.request.path, "next": None},
            "data": data}


def related(href: str) -> dict:
    return {"related": href}


def cluster_json(call: Call, cid: str, controller: int) -> dict:
    return {"kind": "KafkaCluster",
            "metadata": {"self": url(call, cid), "resource_name": crn(cid)},
            "cluster_id": cid,
            "controller": related(url(call, cid, "brokers", controller)) if controller >= 0 else None,
            "acls": related(url(call, cid, "acls")),
            "brokers": related(url(call, cid, "brokers")),
            "broker_configs": related(url(call, cid, "broker-configs")),
            "consumer_groups": related(url(call, cid, "consumer-groups")),
            "topics": related(url(call, cid, "topics")),
            "partition_reassignments": related(url(call, cid, "topics", "-", "partitions", "-",
                                                   "reassignment"))}


async def list_clusters(call: Call):
    cid = cluster_id(call)
    resp = await cluster.metadata(call.broker, [])
    return ok(listing(call, "KafkaClusterList", [cluster_json(call, cid, resp.controller_id)]))


async def get_cluster(call: Call):
    cid = cluster_id(call)
    resp = await cluster.metadata(call.broker, [])
    return ok(cluster_json(call, cid, resp.controller_id))


def broker_json(call: Call, cid: str, b) -> dict:
    return {"kind": "KafkaBroker",
            "metadata": {"self": url(call, cid, "brokers", b.node_id),
                         "resource_name": crn(cid, ("broker", b.node_id))},
            "cluster_id": cid, "broker_id": b.node_id, "host": b.host, "port": b.port,
            "rack": b.rack,
            "configs": related(url(call, cid, "brokers", b.node_id, "configs")),
            "partition_replicas": related(url(call, cid, "brokers", b.node_id,
                                              "partition-replicas"))}


async def list_brokers(call: Call):
    cid = cluster_id(call)
    resp = await cluster.metadata(call.broker, [])
    return ok(listing(call, "KafkaBrokerList", [broker_json(call, cid, b) for b in
                                               sorted(resp.brokers, key=lambda b: b.node_id)]))


async def get_broker(call: Call):
    cid = cluster_id(call)
    resp = await cluster.metadata(call.broker, [])
    for b in resp.brokers:
        if str(b.node_id) == call.params["broker"]:
            return ok(broker_json(call, cid, b))
    raise RestError(404, 404, f"Broker {call.params['broker']} cannot be found.")


def topic_json(call: Call, cid: str, t) -> dict:
    name = t.name
    rf = max((len(p.replica_nodes) for p in t.partitions), default=0)
    return {"kind": "KafkaTopic",
            "metadata": {"self": url(call, cid, "topics", name),
                         "resource_name": crn(cid, ("topic", name))},
            "cluster_id": cid, "topic_name": name, "is_internal": bool(t.is_internal),
            "replication_factor": rf, "partitions_count": len(t.partitions),
            "partitions": related(url(call, cid, "topics", name, "partitions")),
            "configs": related(url(call, cid, "topics", name, "configs")),
            "partition_reassignments": related(url(call, cid, "topics", name, "partitions", "-",
                                                   "reassignment")),
            "authorized_operations": []}


async def list_topics(call: Call):
    cid = cluster_id(call)
    resp = await cluster.metadata(call.broker, None)
    return ok(listing(call, "KafkaTopicList", [topic_json(call, cid, t) for t in
                                              sorted(resp.topics, key=lambda t: t.name)
                                              if not t.error_code]))


async def get_topic(call: Call):
    cid = cluster_id(call)
    t = await cluster.topic(call.broker, call.params["topic"], v3=True)
    return ok(topic_json(call, cid, t))


def _int_field(body: dict, name: str, default: int) -> int:
    v = body.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise RestError(400, 400, f"{name} must be an integer")
    return v


async def create_topic(call: Call):
    cid = cluster_id(call)
    body = parse_json(call.body)
    name = body.get("topic_name")
    if not isinstance(name, str) or not name:
        raise RestError(400, 400, "topic_name is required")
    configs = body.get("configs") or []
    if not isinstance(configs, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                                for c in configs):
        raise RestError(400, 400, "configs must be a list of {\"name\", \"value\"}")
    R = messages.CreateTopicsRequest
    req = R(timeout_ms=30_000, validate_only=bool(body.get("validate_only", False)), topics=[
        R.CreatableTopic(name=name, num_partitions=_int_field(body, "partitions_count", -1),
                         replication_factor=_int_field(body, "replication_factor", -1),
                         assignments=[], configs=[
                             R.CreatableTopicConfig(name=c["name"], value=None if c.get("value") is None
                                                    else str(c["value"])) for c in configs])])
    resp = await call_api(call.broker, 19, 7, req)
    r = resp.topics[0]
    if r.error_code:
        if r.error_code == 36:
            raise RestError(400, 400, f"Topic '{name}' already exists.")
        raise from_kafka(r.error_code, r.error_message, v3=True)
    return ok({"kind": "KafkaTopic",
               "metadata": {"self": url(call, cid, "topics", name),
                            "resource_name": crn(cid, ("topic", name))},
               "cluster_id": cid, "topic_name": name, "is_internal": False,
               "replication_factor": r.replication_factor, "partitions_count": r.num_partitions,
               "partitions": related(url(call, cid, "topics", name, "partitions")),
               "configs": related(url(call, cid, "topics", name, "configs")),
               "partition_reassignments": related(url(call, cid, "topics", name, "partitions",
                                                      "-", "reassignment")),
               "authorized_operations": []}, 201)


async def delete_topic(call: Call):
    cluster_id(call)
    name = call.params["topic"]
    R = messages.DeleteTopicsRequest
    resp = await call_api(call.broker, 20, 6, R(topics=[R.DeleteTopicState(name=name)],
                                                timeout_ms=30_000))
    r = resp.responses[0]
    if r.error_code:
        raise from_kafka(r.error_code, r.error_message, v3=True)
    return _empty()


def config_json(call: Call, cid: str, topic: str, c) -> dict:
    return {"kind": "KafkaTopicConfig",
            "metadata": {"self": url(call, cid, "topics", topic, "configs", c.name),
                         "resource_name": crn(cid, ("topic", topic), ("config", c.name))},
            "cluster_id": cid, "topic_name": topic, "name": c.name,
            "value": None if c.is_sensitive else c.value,
            "is_default": c.config_source == 5, "is_read_only": bool(c.read_only),
            "is_sensitive": bool(c.is_sensitive), "source": SOURCES.get(c.config_source, "UNKNOWN"),
            "synonyms": [{"name": s.name, "value": s.value, "source": SOURCES.get(s.source, "UNKNOWN")}
                         for s in (c.synonyms or [])]}


async def list_topic_configs(call: Call):
    cid = cluster_id(call)
    name = call.params["topic"]
    await cluster.topic(call.broker, name, v3=True)
    configs = await topic_configs(call.broker, name, v3=True)
    return ok(listing(call, "KafkaTopicConfigList",
                      [config_json(call, cid, name, c) for c in sorted(configs, key=lambda c: c.name)]))


async def get_topic_config(call: Call):
    cid = cluster_id(call)
    name = call.params["topic"]
    await cluster.topic(call.broker, name, v3=True)
    for c in await topic_configs(call.broker, name, v3=True):
        if c.name == call.params["config"]:
            return ok(config_json(call, cid, name, c))
    raise RestError(404, 404, f"Config {call.params['config']} cannot be found for topic {name}.")


async def _alter(call: Call, topic: str, ops: list[tuple[str, int, str | None]]):
    await cluster.topic(call.broker, topic, v3=True)
    R = messages.IncrementalAlterConfigsRequest
    resp = await call_api(call.broker, 44, 1, R(validate_only=False, resources=[
        R.AlterConfigsResource(resource_type=TOPIC_RESOURCE, resource_name=topic, configs=[
            R.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])]))
    r = resp.responses[0]
    if r.error_code:
        raise from_kafka(r.error_code, r.error_message, v3=True)
    return _empty()


async def put_topic_config(call: Call):
    cluster_id(call)
    body = parse_json(call.body)
    value = body.get("value")
    return await _alter(call, call.params["topic"],
                        [(call.params["config"], OP_SET, None if value is None else str(value))])


async def delete_topic_config(call: Call):
    cluster_id(call)
    return await _alter(call, call.params["topic"], [(call.params["config"], OP_DELETE, None)])


async def alter_topic_configs(call: Call):
    cluster_id(call)
    return await _alter(call, call.params["topic"], config_ops(parse_json(call.body)))


def config_ops(body: dict) -> list[tuple[str, int, str | None]]:
    """The (name, operation, value) list of a ``:alter`` body (``{"data": [{"name", "value",
    "operation"}]}``, operation SET or DELETE), for topic and broker configs alike."""
    data = body.get("data")
    if not isinstance(data, list) or not data:
        raise RestError(400, 400, "expected {\"data\": [{\"name\", \"value\", \"operation\"}]}")
    ops = []
    for d in data:
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise RestError(400, 400, "each entry of data needs a name")
        op = str(d.get("operation", "SET")).upper()
        if op not in ("SET", "DELETE"):
            raise RestError(400, 400, f"operation must be SET or DELETE, got {op!r}")
        ops.append((d["name"], OP_SET if op == "SET" else OP_DELETE,
                    None if d.get("value") is None or op == "DELETE" else str(d["value"])))
    return ops


def partition_json(call: Call, cid: str, topic: str, p) -> dict:
    base = ("topics", topic, "partitions", p.partition_index)
    return {"kind": "KafkaPartition",
            "metadata": {"self": url(call, cid, *base),
                         "resource_name": crn(cid, ("topic", topic), ("partition", p.partition_index))},
            "cluster_id": cid, "topic_name": topic, "partition_id": p.partition_index,
            "leader": related(url(call, cid, *base, "replicas", p.leader_id)) if p.leader_id >= 0 else None,
            "replicas": related(url(call, cid, *base, "replicas")),
            "reassignment": related(url(call, cid, *base, "reassignment"))}


async def list_partitions(call: Call):
    cid = cluster_id(call)
    t = await cluster.topic(call.broker, call.params["topic"], v3=True)
    return ok(listing(call, "KafkaPartitionList",
                      [partition_json(call, cid, t.name, p)
                       for p in sorted(t.partitions, key=lambda p: p.partition_index)]))


async def get_partition(call: Call):
    cid = cluster_id(call)
    t = await cluster.topic(call.broker, call.params["topic"], v3=True)
    p = cluster.partition_of(t, cluster.parse_partition(call.params["partition"], v3=True), v3=True)
    return ok(partition_json(call, cid, t.name, p))


async def list_replicas(call: Call):
    cid = cluster_id(call)
    t = await cluster.topic(call.broker, call.params["topic"], v3=True)
    p = cluster.partition_of(t, cluster.parse_partition(call.params["partition"], v3=True), v3=True)
    isr = set(p.isr_nodes)
    base = ("topics", t.name, "partitions", p.partition_index, "replicas")
    return ok(listing(call, "KafkaReplicaList", [
        {"kind": "KafkaReplica",
         "metadata": {"self": url(call, cid, *base, b),
                      "resource_name": crn(cid, ("topic", t.name), ("partition", p.partition_index),
                                           ("replica", b))},
         "cluster_id": cid, "topic_name": t.name, "partition_id": p.partition_index,
         "broker_id": b, "is_leader": b == p.leader_id, "is_in_sync": b in isr,
         "broker": related(url(call, cid, "brokers", b))} for b in p.replica_nodes]))


def install(routes: Routes) -> None:
    C = "/v3/clusters/{cluster}"
    routes.add("GET", "/v3/clusters", list_clusters)
    routes.add("GET", C, get_cluster)
    routes.add("GET", C + "/brokers", list_brokers)
    routes.add("GET", C + "/brokers/{broker}", get_broker)
    routes.add("GET", C + "/topics", list_topics)
    routes.add("POST", C + "/topics", create_topic)
    routes.add("GET", C + "/topics/{topic}", get_topic)
    routes.add("DELETE", C + "/topics/{topic}", delete_topic)
    routes.add("GET", C + "/topics/{topic}/configs", list_topic_configs)
    routes.add("POST", C + "/topics/{topic}/configs:alter", alter_topic_configs)
    routes.add("GET", C + "/topics/{topic}/configs/{config}", get_topic_config)
    routes.add("PUT", C + "/topics/{topic}/configs/{config}", put_topic_config)
    routes.add("DELETE", C + "/topics/{topic}/configs/{config}", delete_topic_config)
    routes.add("GET", C + "/topics/{topic}/partitions", list_partitions)
    routes.add("GET", C + "/topics/{topic}/partitions/{partition}", get_partition)
    routes.add("GET", C + "/topics/{topic}/partitions/{partition}/replicas", list_replicas)
