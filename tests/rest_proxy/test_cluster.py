"""The gateway on every node of a three-node cluster: each node answers the same metadata
and cluster id, unkeyed records sent to any node are written by that node (it picks a
partition it leads), a record for a partition led elsewhere is forwarded to its leader,
partition offsets are answered for every partition, and a consumer instance runs on the
node coordinating its group (another node names that node) and reads every partition,
those other nodes lead included; the protobuf format works through every node's gateway with
the registry every node serves (one schema, one id)."""
from __future__ import annotations

import base64

import pytest

from kbroker.testing.processes import KbrokerCluster, free_port

from .conftest import JSON, Rest, rest_address, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = KbrokerCluster(tmp_path_factory.mktemp("rest-cluster"), 3, {
        "kbroker.rest.proxy.listen": "127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"})
    for node in c.nodes.values():           # the schema registry on every node too
        node.overrides["kbroker.schema.registry.listen"] = f"127.0.0.1:{free_port()}"
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def gateways(cluster) -> dict[int, Rest]:
    return {i: Rest(rest_address(n)) for i, n in cluster.nodes.items()}


def test_every_node_serves_the_same_cluster(gateways):
    ids = {i: g.get("/v3/clusters")[2]["data"][0]["cluster_id"] for i, g in gateways.items()}
    assert len(set(ids.values())) == 1
    for g in gateways.values():
        assert g.get("/brokers")[2] == {"brokers": [1, 2, 3]}
        assert [b["broker_id"] for b in g.get(f"/v3/clusters/{ids[1]}/brokers")[2]["data"]] == [1, 2, 3]


def test_produce_through_each_node_and_leader_routing(gateways):
    cid = gateways[1].get("/v3/clusters")[2]["data"][0]["cluster_id"]
    status, _, body = gateways[1].post(f"/v3/clusters/{cid}/topics",
                                       {"topic_name": "spread", "partitions_count": 3,
                                        "replication_factor": 3})
    assert status == 201, body

    def leaders():
        parts = [g.get("/topics/spread/partitions")[2] for g in gateways.values()]
        if not all(isinstance(p, list) and len(p) == 3 and all(x["leader"] >= 0 for x in p) for p in parts):
            return None
        return {x["partition"]: x["leader"] for x in parts[0]}
    leader = wait_for(leaders, what="every node to see the topic's leaders")
    for node, g in gateways.items():
        status, _, body = g.post("/topics/spread", {"records": [{"value": {"from": node}}] * 3},
                                 content_type=JSON)
        assert status == 200
        for o in body["offsets"]:
            assert o["error_code"] is None, (node, o)
            assert leader[o["partition"]] == node         # written where it was sent
    p = next(p for p, n in leader.items() if n == 2)
    status, _, body = gateways[2].post(f"/topics/spread/partitions/{p}", {"records": [{"value": 1}]},
                                       content_type=JSON)
    assert body["offsets"][0]["error_code"] is None
    before = gateways[2].get(f"/topics/spread/partitions/{p}/offsets")[2]["end_offset"]
    status, _, body = gateways[1].post(f"/topics/spread/partitions/{p}", {"records": [{"value": 2}]},
                                       content_type=JSON)
    assert status == 200
    assert body["offsets"][0]["error_code"] is None and body["offsets"][0]["offset"] == before
    # keyed records land on their murmur2 partitions wherever they are sent
    status, _, body = gateways[3].post("/topics/spread", {"records": [
        {"key": f"k{i}", "value": i} for i in range(12)]}, content_type=JSON)
    assert status == 200 and all(o["error_code"] is None for o in body["offsets"])
    assert len({o["partition"] for o in body["offsets"]}) > 1
    # every node answers every partition's offsets (ListOffsets asked of the leader)
    ends = {n: [g.get(f"/topics/spread/partitions/{i}/offsets")[2]["end_offset"] for i in range(3)]
            for n, g in gateways.items()}
    assert ends[1] == ends[2] == ends[3]


def test_consumer_instance_on_the_coordinating_node(gateways, cluster):
    for g in gateways.values():
        g.post("/consumers/spread-readers", {"name": "r", "format": "json",
                                             "auto.offset.reset": "earliest"})
    answers = {i: g.post("/consumers/spread-readers/instances/r/subscription", {"topics": ["spread"]})
               for i, g in gateways.items()}
    here = [i for i, (status, _, _) in answers.items() if status == 204]
    assert len(here) == 1, answers
    coordinator = here[0]
    for i, (status, _, body) in answers.items():
        if i != coordinator:
            assert (status, body["error_code"]) == (500, 50003)
            assert f"coordinated by node {coordinator}" in body["message"]
    g = gateways[coordinator]
    got = []

    def more():
        status, _, body = g.get("/consumers/spread-readers/instances/r/records?timeout=500", accept=JSON)
        assert status == 200, body
        got.extend(body)
        return got
    total = sum(g.get(f"/topics/spread/partitions/{i}/offsets")[2]["end_offset"] for i in range(3))

    def all_of_them():
        more()
        return len(got) >= total
    wait_for(all_of_them, what="every record of the three partitions")
    assert {r["partition"] for r in got} == {0, 1, 2}
    assert all({"from": n} in [r["value"] for r in got] for n in (1, 2, 3))
    for gw in gateways.values():
        gw.delete("/consumers/spread-readers/instances/r")


def test_another_brokers_configs_are_read_and_written_on_that_broker(gateways):
    cid = gateways[1].get("/v3/clusters")[2]["data"][0]["cluster_id"]
    three = f"/v3/clusters/{cid}/brokers/3/configs"
    status, _, body = gateways[1].put(f"{three}/log.cleaner.threads", {"value": "3"})
    assert status == 204, body
    # node 1 answers for broker 3 (forwarded), node 3 sees its own dynamic config, and
    # broker 2's is untouched
    for g in (gateways[1], gateways[3]):
        c = g.get(f"{three}/log.cleaner.threads")[2]
        assert (c["broker_id"], c["value"], c["source"]) == (3, "3", "DYNAMIC_BROKER_CONFIG"), c
    two = gateways[2].get(f"/v3/clusters/{cid}/brokers/2/configs/log.cleaner.threads")[2]
    assert two["source"] != "DYNAMIC_BROKER_CONFIG"
    assert gateways[2].delete(f"{three}/log.cleaner.threads")[0] == 204
    assert gateways[1].get(f"{three}/log.cleaner.threads")[2]["source"] != "DYNAMIC_BROKER_CONFIG"


def test_protobuf_through_every_node(gateways):
    proto = 'syntax = "proto3";\nmessage Reading { string sensor = 1; double value = 2; }\n'
    ct = "application/vnd.kafka.protobuf.v2+json"
    ids = set()
    for node, g in gateways.items():
        status, _, body = g.post("/topics/pb-spread", {
            "value_schema": proto, "records": [{"value": {"sensor": f"n{node}", "value": node}}]},
            content_type=ct)
        assert status == 200 and body["offsets"][0]["error_code"] is None, body
        ids.add(body["value_schema_id"])
    assert len(ids) == 1                       # registered once, found by the other nodes
    for g in gateways.values():
        g.post("/consumers/pb-spread-readers", {"name": "r", "format": "protobuf",
                                                "auto.offset.reset": "earliest"})
    answers = {i: g.post("/consumers/pb-spread-readers/instances/r/subscription",
                         {"topics": ["pb-spread"]})[0] for i, g in gateways.items()}
    [coordinator] = [i for i, status in answers.items() if status == 204]
    g = gateways[coordinator]
    got = []

    def three():
        status, _, body = g.get("/consumers/pb-spread-readers/instances/r/records?timeout=500",
                                accept=ct)
        assert status == 200, body
        got.extend(body)
        return len(got) >= 3
    wait_for(three, what="the three protobuf records")
    assert sorted((r["value"]["sensor"], r["value"]["value"]) for r in got) == [
        ("n1", 1.0), ("n2", 2.0), ("n3", 3.0)]
    for gw in gateways.values():
        gw.delete("/consumers/pb-spread-readers/instances/r")
