"""API v3: ongoing partition reassignments (Confluent REST Proxy's ``.../reassignment``
resources, read-only there too; a reassignment is started with Kafka's tools or
``Admin.alterPartitionReassignments``).

- ``GET /v3/clusters/{c}/topics/-/partitions/-/reassignment`` — every ongoing one;
- ``GET .../topics/{t}/partitions/-/reassignment`` — those of a topic;
- ``GET .../topics/{t}/partitions/{p}/reassignment`` — one partition's (404 when none is
  ongoing, as Confluent's proxy answers).

Each is kind ``KafkaReassignment`` with ``adding_replicas`` and ``removing_replicas``, read
through the ListPartitionReassignments handler (DESCRIBE on the cluster; a denied principal
answers 403).
"""
from __future__ import annotations

from kbroker.wire import messages

from . import cluster
from .app import Call, Routes
from .errors import RestError, from_kafka
from .inproc import call_api
from .v3 import cluster_id, crn, listing, ok, related, url


async def _ongoing(call: Call, topics: list[tuple[str, list[int]]] | None) -> list:
    R = messages.ListPartitionReassignmentsRequest
    req = R(timeout_ms=30_000, topics=None if topics is None else [
        R.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps) for t, ps in topics])
    resp = await call_api(call.broker, 46, 0, req)
    if resp.error_code:
        raise from_kafka(resp.error_code, resp.error_message, v3=True)
    return [(t.name, p) for t in resp.topics for p in t.partitions]


def reassignment_json(call: Call, cid: str, topic: str, p) -> dict:
    base = ("topics", topic, "partitions", p.partition_index)
    return {"kind": "KafkaReassignment",
            "metadata": {"self": url(call, cid, *base, "reassignment"),
                         "resource_name": crn(cid, ("topic", topic), ("partition", p.partition_index))},
            "cluster_id": cid, "topic_name": topic, "partition_id": p.partition_index,
            "adding_replicas": list(p.adding_replicas),
            "removing_replicas": list(p.removing_replicas),
            "replicas": related(url(call, cid, *base, "replicas"))}


def _sorted(found: list) -> list:
    return sorted(found, key=lambda tp: (tp[0], tp[1].partition_index))


async def list_all(call: Call):
    cid = cluster_id(call)
    return ok(listing(call, "KafkaReassignmentList",
                      [reassignment_json(call, cid, t, p) for t, p in _sorted(await _ongoing(call, None))]))


async def list_topic(call: Call):
    cid = cluster_id(call)
    t = await cluster.topic(call.broker, call.params["topic"], v3=True)
    parts = [p.partition_index for p in t.partitions]
    found = await _ongoing(call, [(t.name, parts)])
    return ok(listing(call, "KafkaReassignmentList",
                      [reassignment_json(call, cid, name, p) for name, p in _sorted(found)]))


async def get_partition(call: Call):
    cid = cluster_id(call)
    t = await cluster.topic(call.broker, call.params["topic"], v3=True)
    index = cluster.partition_of(t, cluster.parse_partition(call.params["partition"], v3=True),
                                 v3=True).partition_index
    for name, p in await _ongoing(call, [(t.name, [index])]):
        if p.partition_index == index:
            return ok(reassignment_json(call, cid, name, p))
    raise RestError(404, 404, f"Reassignment for topic {t.name} partition {index} cannot be found.")


def install(routes: Routes) -> None:
    T = "/v3/clusters/{cluster}/topics"
    routes.add("GET", T + "/-/partitions/-/reassignment", list_all)
    routes.add("GET", T + "/{topic}/partitions/-/reassignment", list_topic)
    routes.add("GET", T + "/{topic}/partitions/{partition}/reassignment", get_partition)
