"""The gateway on every node of a three-node cluster: each node answers the same metadata
and cluster id, unkeyed records sent to any node are written by that node (it picks a
partition it leads), a record for a partition led elsewhere gets the per-record retriable
error naming NOT_LEADER_OR_FOLLOWER, and a consumer instance runs on the node coordinating
its group (another node names that node). What the gateway of a node cannot do — write to
or read from partitions another node leads — is this test's documented limit."""
from __future__ import annotations

import base64

import pytest

from kbroker.testing.processes import KbrokerCluster

from .conftest import JSON, Rest, rest_address, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = KbrokerCluster(tmp_path_factory.mktemp("rest-cluster"), 3, {
        "kbroker.rest.proxy.listen": "127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"}).start()
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
    status, _, body = gateways[1].post(f"/topics/spread/partitions/{p}", {"records": [{"value": 1}]},
                                       content_type=JSON)
    assert status == 200
    assert body["offsets"][0]["error_code"] == 2 and "NOT_LEADER" in body["offsets"][0]["error"]


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
    wait_for(more, what="records of the partitions the coordinator leads")
    leaders = {x["partition"]: x["leader"] for x in g.get("/topics/spread/partitions")[2]}
    assert {r["partition"] for r in got} <= {p for p, n in leaders.items() if n == coordinator}
    assert {"from": coordinator} in [r["value"] for r in got]
    for gw in gateways.values():
        gw.delete("/consumers/spread-readers/instances/r")
