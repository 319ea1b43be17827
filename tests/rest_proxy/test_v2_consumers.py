"""API v2 consumer instances over plain HTTP: create, subscribe (the instance is a KIP-848
member of the broker's own coordinator), poll in the binary and json formats, commit and
read committed offsets, seek to the beginning, the end and an offset, manual assignment,
two instances sharing a group, format negotiation (406 40601), delete, and an instance
expiring after ``kbroker.rest.proxy.consumer.instance.timeout.ms`` (404 40403)."""
from __future__ import annotations

import base64

from confluent_kafka.admin import AdminClient, NewTopic

from .conftest import BINARY, JSON, V2, b64, wait_for


def _create(broker, name, partitions):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def _instance(rest, group, **config):
    status, _, body = rest.post(f"/consumers/{group}", config)
    assert status == 200, body
    assert body["base_uri"].endswith(f"/consumers/{group}/instances/{body['instance_id']}")
    return f"/consumers/{group}/instances/{body['instance_id']}"


def _poll_until(rest, base, count, accept):
    got = []

    def more():
        status, headers, body = rest.get(base + "/records?timeout=500", accept=accept)
        assert status == 200, body
        assert headers["content-type"] == accept
        got.extend(body)
        return len(got) >= count
    wait_for(more, what=f"{count} records")
    return got


def test_subscribe_poll_commit_and_offsets(rest, gateway_broker):
    _create(gateway_broker, "c-orders", 2)
    status, _, body = rest.post("/topics/c-orders", {"records": [
        {"value": b64(f"v{i}".encode()), "partition": i % 2} for i in range(6)]},
        content_type=BINARY)
    assert status == 200, body
    base = _instance(rest, "g-sub", name="c1", format="binary", **{"auto.offset.reset": "earliest",
                                                                    "auto.commit.enable": "false"})
    status, _, body = rest.post(base + "/subscription", {"topics": ["c-orders"]})
    assert status == 204, body
    assert rest.get(base + "/subscription")[2] == {"topics": ["c-orders"]}
    records = _poll_until(rest, base, 6, BINARY)
    assert sorted((r["partition"], r["offset"], base64.b64decode(r["value"])) for r in records) == \
        sorted((i % 2, i // 2, f"v{i}".encode()) for i in range(6))
    assert all(r["topic"] == "c-orders" and r["key"] is None for r in records)
    status, _, assigned = rest.get(base + "/assignments")
    assert sorted((p["topic"], p["partition"]) for p in assigned["partitions"]) == \
        [("c-orders", 0), ("c-orders", 1)]
    # nothing committed yet (auto commit off); then commit what was polled
    parts = {"partitions": [{"topic": "c-orders", "partition": 0}, {"topic": "c-orders", "partition": 1}]}
    status, _, committed = rest.call("GET", base + "/offsets", parts)
    assert status == 200 and all(o["offset"] == -1 for o in committed["offsets"])
    status, _, _ = rest.post(base + "/offsets")
    assert status == 204
    status, _, committed = rest.call("GET", base + "/offsets", parts)
    assert sorted((o["partition"], o["offset"]) for o in committed["offsets"]) == [(0, 3), (1, 3)]
    # explicit offsets are the last ones consumed: the next one is committed (Confluent's rule)
    status, _, _ = rest.post(base + "/offsets", {"offsets": [
        {"topic": "c-orders", "partition": 0, "offset": 1}]})
    assert status == 204
    status, _, committed = rest.call("GET", base + "/offsets", parts)
    assert sorted((o["partition"], o["offset"]) for o in committed["offsets"]) == [(0, 2), (1, 3)]
    # the group is a real consumer group of the broker (what kafka-consumer-groups sees)
    status, _, group = rest.get(f"/v3/clusters/{_cid(rest)}/consumer-groups/g-sub")
    assert status == 200 and group["type"] == "CONSUMER" and group["state"] == "STABLE"
    status, _, _ = rest.delete(base)
    assert status == 204
    status, _, body = rest.get(base + "/assignments")
    assert (status, body["error_code"]) == (404, 40403)


def _cid(rest):
    return rest.get("/v3/clusters")[2]["data"][0]["cluster_id"]


def test_json_format_seek_and_positions(rest, gateway_broker):
    _create(gateway_broker, "c-json", 1)
    rest.post("/topics/c-json", {"records": [{"key": i, "value": {"n": i}} for i in range(5)]},
              content_type=JSON)
    base = _instance(rest, "g-json", format="json", **{"auto.offset.reset": "earliest"})
    rest.post(base + "/subscription", {"topics": ["c-json"]})
    records = _poll_until(rest, base, 5, JSON)
    assert [(r["key"], r["value"], r["offset"]) for r in records] == [(i, {"n": i}, i) for i in range(5)]
    # format negotiation: binary asked of a json instance
    status, _, body = rest.get(base + "/records", accept=BINARY)
    assert (status, body["error_code"]) == (406, 40601)
    tp = [{"topic": "c-json", "partition": 0}]
    assert rest.post(base + "/positions/beginning", {"partitions": tp})[0] == 204
    again = _poll_until(rest, base, 5, JSON)
    assert [r["offset"] for r in again] == [0, 1, 2, 3, 4]
    assert rest.post(base + "/positions", {"offsets": [{**tp[0], "offset": 3}]})[0] == 204
    assert [r["offset"] for r in _poll_until(rest, base, 2, JSON)] == [3, 4]
    assert rest.post(base + "/positions/end", {"partitions": tp})[0] == 204
    rest.post("/topics/c-json", {"records": [{"value": "after end"}]}, content_type=JSON)
    assert [r["value"] for r in _poll_until(rest, base, 1, JSON)] == ["after end"]
    # a partition not assigned cannot be sought (the Java consumer's IllegalStateException)
    status, _, body = rest.post(base + "/positions", {"offsets": [
        {"topic": "c-json", "partition": 5, "offset": 0}]})
    assert (status, body["error_code"]) == (409, 40903)
    rest.delete(base)


def test_auto_commit_and_a_new_instance_resumes(rest, gateway_broker):
    _create(gateway_broker, "c-resume", 1)
    rest.post("/topics/c-resume", {"records": [{"value": i} for i in range(4)]}, content_type=JSON)
    base = _instance(rest, "g-resume", format="json", **{"auto.offset.reset": "earliest"})
    rest.post(base + "/subscription", {"topics": ["c-resume"]})
    assert len(_poll_until(rest, base, 4, JSON)) == 4
    assert rest.delete(base)[0] == 204
    rest.post("/topics/c-resume", {"records": [{"value": 4}]}, content_type=JSON)
    base = _instance(rest, "g-resume", format="json", **{"auto.offset.reset": "earliest"})
    rest.post(base + "/subscription", {"topics": ["c-resume"]})
    assert [r["value"] for r in _poll_until(rest, base, 1, JSON)] == [4]
    rest.delete(base)


def test_manual_assignment_and_subscription_are_exclusive(rest, gateway_broker):
    _create(gateway_broker, "c-assign", 3)
    rest.post("/topics/c-assign/partitions/2", {"records": [{"value": b64(b"p2")}]}, content_type=BINARY)
    rest.post("/topics/c-assign/partitions/0", {"records": [{"value": b64(b"p0")}]}, content_type=BINARY)
    base = _instance(rest, "g-assign", **{"auto.offset.reset": "earliest"})
    assert rest.post(base + "/assignments", {"partitions": [{"topic": "c-assign", "partition": 2}]})[0] == 204
    assert rest.get(base + "/assignments")[2] == {"partitions": [{"topic": "c-assign", "partition": 2}]}
    records = _poll_until(rest, base, 1, BINARY)
    assert [(r["partition"], base64.b64decode(r["value"])) for r in records] == [(2, b"p2")]
    status, _, body = rest.post(base + "/subscription", {"topics": ["c-assign"]})
    assert (status, body["error_code"]) == (409, 40903)
    rest.delete(base)


def test_two_instances_share_the_group_partitions(rest, gateway_broker):
    _create(gateway_broker, "c-shared", 4)
    a = _instance(rest, "g-shared", name="a")
    b = _instance(rest, "g-shared", name="b")
    for base in (a, b):
        assert rest.post(base + "/subscription", {"topics": ["c-shared"]})[0] == 204

    def split():
        for base in (a, b):
            rest.get(base + "/records?timeout=100")        # polls keep the members busy
        pa = {p["partition"] for p in rest.get(a + "/assignments")[2]["partitions"]}
        pb = {p["partition"] for p in rest.get(b + "/assignments")[2]["partitions"]}
        return pa and pb and not (pa & pb) and pa | pb == {0, 1, 2, 3}
    wait_for(split, what="the four partitions split between the two instances")
    status, _, consumers = rest.get(f"/v3/clusters/{_cid(rest)}/consumer-groups/g-shared/consumers")
    assert status == 200 and len(consumers["data"]) == 2
    for base in (a, b):
        rest.delete(base)


def test_duplicate_name_and_bad_config(rest):
    _instance(rest, "g-dup", name="same")
    status, _, body = rest.post("/consumers/g-dup", {"name": "same"})
    assert (status, body["error_code"]) == (409, 40902)
    status, _, body = rest.post("/consumers/g-dup", {"name": "x", "format": "xml"})
    assert (status, body["error_code"]) == (422, 42204)
    status, _, body = rest.post("/consumers/g-dup", {"name": "y", "auto.offset.reset": "sometimes"})
    assert (status, body["error_code"]) == (422, 42204)
    rest.delete("/consumers/g-dup/instances/same")


def test_an_idle_instance_expires(rest, gateway_broker):
    # the fixture's kbroker.rest.proxy.consumer.instance.timeout.ms is 4000; every call to
    # the instance would keep it alive, so the wait watches the broker's log line instead
    base = _instance(rest, "g-expire", name="idle")
    assert rest.post(base + "/subscription", {"topics": ["c-expire"]})[0] == 204
    wait_for(lambda: "consumer instance idle of group g-expire expired" in gateway_broker.log_text(),
             what="the instance to expire")
    status, _, body = rest.get(base + "/records", accept=V2)
    assert (status, body["error_code"]) == (404, 40403)
