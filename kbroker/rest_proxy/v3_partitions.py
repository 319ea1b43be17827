"""API v3: more topic and partition resources of Confluent REST Proxy — a topic's partition
count raised, replicas by broker, one replica, and configs across every topic or broker.

- ``PATCH .../topics/{t}`` ``{"partitions_count": N}`` — the CreatePartitions handler
  (ALTER on the topic; a count that does not grow the topic is 400); answers the topic.
- ``GET .../brokers/{b}/partition-replicas`` — the replicas a broker holds (Metadata).
- ``GET .../topics/{t}/partitions/{p}/replicas/{b}`` — one replica.
- ``GET .../topics/-/configs`` and ``GET .../brokers/-/configs`` — every topic's (every
  broker's) configs in one list (DescribeConfigs per resource; a topic the principal may not
  describe is left out, as from the topic list).
"""
from __future__ import annotations

from kbroker.wire import messages

from . import cluster
from .app import Call, Routes
from .errors import RestError, from_kafka
from .inproc import call_api
from .media import parse_json
from .v2_topics import topic_configs
from .v3 import cluster_id, config_json, crn, listing, ok, related, topic_json, url
from .v3_configs import _describe, broker_config_json


async def patch_topic(call: Call):
    cid = cluster_id(call)
    name = call.params["topic"]
    body = parse_json(call.body)
    count = body.get("partitions_count")
    if isinstance(count, bool) or not isinstance(count, int):
        raise RestError(400, 400, "partitions_count must be an integer")
    await cluster.topic(call.broker, name, v3=True)
    R = messages.CreatePartitionsRequest
    resp = await call_api(call.broker, 37, 3, R(timeout_ms=30_000, validate_only=False, topics=[
        R.CreatePartitionsTopic(name=name, count=count, assignments=None)]))
    r = resp.results[0]
    if r.error_code:
        raise from_kafka(r.error_code, r.error_message, v3=True)
    t = await cluster.topic(call.broker, name, v3=True)
    return ok(topic_json(call, cid, t))


def replica_json(call: Call, cid: str, topic: str, p, b: int) -> dict:
    base = ("topics", topic, "partitions", p.partition_index, "replicas")
    return {"kind": "KafkaReplica",
            "metadata": {"self": url(call, cid, *base, b),
                         "resource_name": crn(cid, ("topic", topic), ("partition", p.partition_index),
                                              ("replica", b))},
            "cluster_id": cid, "topic_name": topic, "partition_id": p.partition_index,
            "broker_id": b, "is_leader": b == p.leader_id, "is_in_sync": b in set(p.isr_nodes),
            "broker": related(url(call, cid, "brokers", b))}


async def get_replica(call: Call):
    cid = cluster_id(call)
    t = await cluster.topic(call.broker, call.params["topic"], v3=True)
    p = cluster.partition_of(t, cluster.parse_partition(call.params["partition"], v3=True), v3=True)
    for b in p.replica_nodes:
        if str(b) == call.params["broker"]:
            return ok(replica_json(call, cid, t.name, p, b))
    raise RestError(404, 404, f"Replica {call.params['broker']} of partition {p.partition_index} "
                              f"of topic {t.name} cannot be found.")


async def broker_replicas(call: Call):
    cid = cluster_id(call)
    resp = await cluster.metadata(call.broker, None)
    broker_id = call.params["broker"]
    if not any(str(b.node_id) == broker_id for b in resp.brokers):
        raise RestError(404, 404, f"Broker {broker_id} cannot be found.")
    data = [replica_json(call, cid, t.name, p, int(broker_id))
            for t in sorted(resp.topics, key=lambda t: t.name) if not t.error_code
            for p in sorted(t.partitions, key=lambda p: p.partition_index)
            if int(broker_id) in p.replica_nodes]
    return ok(listing(call, "KafkaReplicaList", data))


async def all_topic_configs(call: Call):
    cid = cluster_id(call)
    resp = await cluster.metadata(call.broker, None)
    data = []
    for t in sorted(resp.topics, key=lambda t: t.name):
        if t.error_code:
            continue
        try:
            configs = await topic_configs(call.broker, t.name, v3=True)
        except RestError:
            continue                # deleted since, or not to be described by this principal
        data.extend(config_json(call, cid, t.name, c) for c in sorted(configs, key=lambda c: c.name))
    return ok(listing(call, "KafkaTopicConfigList", data))


async def all_broker_configs(call: Call):
    cid = cluster_id(call)
    resp = await cluster.metadata(call.broker, [])
    data = []
    for b in sorted(resp.brokers, key=lambda b: b.node_id):
        data.extend(broker_config_json(call, cid, str(b.node_id), c)
                    for c in await _describe(call, str(b.node_id)))
    return ok(listing(call, "KafkaBrokerConfigList", data))


def install(routes: Routes) -> None:
    C = "/v3/clusters/{cluster}"
    routes.add("GET", C + "/topics/-/configs", all_topic_configs)
    routes.add("GET", C + "/brokers/-/configs", all_broker_configs)
    routes.add("PATCH", C + "/topics/{topic}", patch_topic)
    routes.add("GET", C + "/brokers/{broker}/partition-replicas", broker_replicas)
    routes.add("GET", C + "/topics/{topic}/partitions/{partition}/replicas/{broker}", get_replica)
