"""The registry on a 3-node kbroker cluster: every node serves it, a schema registered on
one node is read on the others at once, concurrent registrations on different nodes never
share an id, and killing a node loses no schema and reuses no id."""
from __future__ import annotations

import threading
import time

import pytest

from kbroker.testing.processes import KbrokerCluster, free_port

from .conftest import Registry, avro_record

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = KbrokerCluster(tmp_path_factory.mktemp("sr-cluster"), nodes=3)
    regs = {}
    for i, node in c.nodes.items():
        port = free_port()
        node.overrides["kbroker.schema.registry.listen"] = f"127.0.0.1:{port}"
        regs[i] = Registry(node, port)
    c.start()
    try:
        yield c, regs
    finally:
        c.stop()


def schemas_leader(node) -> int:
    return node.admin.metadata(["_schemas"]).topics[0].partitions[0].leader_id


def register(reg, subject, schema):
    return reg.call("POST", f"/subjects/{subject}/versions", {"schema": schema})


def test_registered_on_one_node_read_on_the_others(cluster):
    c, regs = cluster
    status, body = register(regs[1], "c-one", avro_record("One", ("a", "int")))
    assert status == 200, body
    for i in (2, 3):
        assert regs[i].call("GET", f"/schemas/ids/{body['id']}")[0] == 200
        status, latest = regs[i].call("GET", "/subjects/c-one/versions/latest")
        assert status == 200 and latest["id"] == body["id"]
    # a write on another node sees the first one's: same schema, same id
    assert register(regs[3], "c-one-copy", avro_record("One", ("a", "int"))) == (200, body)
    # _schemas: one partition, replicated to min(3, brokers) = 3 nodes
    [topic] = c.nodes[1].admin.metadata(["_schemas"]).topics
    assert len(topic.partitions) == 1 and len(topic.partitions[0].replica_nodes) == 3


def test_concurrent_registrations_on_three_nodes_never_share_an_id(cluster):
    c, regs = cluster
    got: dict[tuple[int, int], int] = {}
    failures = []

    def work(node: int):
        for k in range(6):
            status, body = register(regs[node], f"c-race-{node}-{k}",
                                    avro_record(f"Race{node}x{k}", ("f", "string")))
            if status != 200:
                failures.append((node, k, status, body))
            else:
                got[(node, k)] = body["id"]

    threads = [threading.Thread(target=work, args=(n,)) for n in regs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert len(set(got.values())) == len(got) == 18
    # every node answers every id with the schema registered under it
    for (node, k), schema_id in got.items():
        for reg in regs.values():
            status, body = reg.call("GET", f"/schemas/ids/{schema_id}")
            assert status == 200 and f"Race{node}x{k}" in body["schema"]


def test_a_killed_node_loses_nothing_and_no_id_is_reused(cluster):
    c, regs = cluster
    before = {}
    for k in range(3):
        status, body = register(regs[2], f"c-kill-{k}", avro_record(f"Kill{k}", ("x", "long")))
        assert status == 200
        before[k] = body["id"]
    # kill the node leading _schemas (the one that appended everything), without a shutdown
    leader = schemas_leader(c.nodes[1])
    c.nodes[leader].kill()
    alive = [i for i in regs if i != leader]
    reg = regs[alive[0]]
    # reads go on from the surviving replicas at once
    assert reg.call("GET", f"/schemas/ids/{before[0]}")[0] == 200
    # a write needs the partition's new leader: wait until the controller has elected one
    deadline = time.monotonic() + 60
    while schemas_leader(c.nodes[alive[0]]) in (leader, -1):
        assert time.monotonic() < deadline, "no new leader of _schemas"
        time.sleep(0.2)
    for k, schema_id in before.items():
        status, body = reg.call("GET", f"/subjects/c-kill-{k}/versions/1")
        assert status == 200 and body["id"] == schema_id
    _, listed = reg.call("GET", "/schemas")
    used = {s["id"] for s in listed}
    status, body = register(reg, "c-after-kill", avro_record("AfterKill", ("y", "int")))
    assert status == 200, body
    assert body["id"] not in used and body["id"] > max(used)
    # the killed node comes back and agrees
    c.nodes[leader].start()
    status, again = regs[leader].call("GET", "/subjects/c-after-kill/versions/1")
    assert status == 200 and again["id"] == body["id"]
