"""The console's JSON endpoints and pages over real sockets, against a real broker process
and real clients (confluent-kafka): every endpoint, including bad input."""
from __future__ import annotations

import base64
import http.client
import json
import time

import pytest
from confluent_kafka import Consumer, Producer

from kbroker.testing.processes import KbrokerProcess

from .conftest import Console


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def text(value: str | None) -> str | None:
    return None if value is None else base64.b64decode(value).decode()


def test_pages_and_assets_are_served(console):
    for path in ("/", "/topics", "/topics/some-topic", "/groups", "/groups/g", "/cluster"):
        status, body, headers = console.raw(path)
        assert status == 200, path
        assert headers["content-type"].startswith("text/html")
        assert b'<script src="/console/static/app.js">' in body
    status, body, headers = console.raw("/console/static/app.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert b"/api/console/messages" in body
    status, _, headers = console.raw("/console/static/style.css")
    assert status == 200 and headers["content-type"].startswith("text/css")
    assert console.raw("/console/static/nope.js")[0] == 404
    assert console.raw("/console/static/..%2f__init__.py")[0] == 404
    # the ops pages stay where they were
    assert console.raw("/health")[0] == 200


def test_create_topic_list_and_describe(console):
    status, r = console.post("/api/console/topics", {"name": "c-orders", "partitions": 3,
                                                     "replication_factor": 1})
    assert status == 201 and r["partitions"] == 3
    status, r = console.post("/api/console/topics", {"name": "c-orders", "partitions": 3})
    assert status == 400 and r["error"] == "TOPIC_ALREADY_EXISTS"
    status, r = console.post("/api/console/topics", {"name": "c-bad", "partitions": 0})
    assert status == 400 and r["error"] == "INVALID_PARTITIONS"
    status, r = console.post("/api/console/topics", {"name": "bad name!", "partitions": 1})
    assert status == 400 and r["error"] == "INVALID_TOPIC_EXCEPTION"
    status, r = console.post("/api/console/topics", {"partitions": "many"})
    assert status == 400 and "name" in r["message"]
    status, r = console.get("/api/console/topics")
    assert status == 200
    row = next(t for t in r["topics"] if t["name"] == "c-orders")
    assert row["partitions"] == 3 and row["replication_factor"] == 1 and row["messages"] == 0
    status, t = console.get("/api/console/topic?name=c-orders")
    assert status == 200 and [p["partition"] for p in t["partitions"]] == [0, 1, 2]
    assert all(p["leader"] == 1 and p["isr"] == [1] and p["high_watermark"] == 0 for p in t["partitions"])
    assert all(p["elr"] == [] and p["last_known_elr"] == [] for p in t["partitions"])     # KIP-966
    names = {c["name"]: c for c in t["configs"]}
    assert names["cleanup.policy"]["value"] == "delete" and names["cleanup.policy"]["default"]
    status, r = console.get("/api/console/topic?name=missing")
    assert status == 404 and r["error"] == "UNKNOWN_TOPIC_OR_PARTITION" and "missing" in r["message"]


def test_alter_configs_through_incremental_alter_configs(console):
    console.post("/api/console/topics", {"name": "c-configs", "partitions": 1})
    status, r = console.post("/api/console/topic/configs", {"topic": "c-configs",
                                                           "set": {"retention.ms": "3600000"}})
    assert status == 200 and r["changed"] == ["retention.ms"]
    _, t = console.get("/api/console/topic?name=c-configs")
    cfg = {c["name"]: c for c in t["configs"]}["retention.ms"]
    assert cfg["value"] == "3600000" and cfg["source"] == 1
    status, r = console.post("/api/console/topic/configs", {"topic": "c-configs",
                                                           "set": {"retention.ms": "soon"}})
    assert status == 400 and r["error"] == "INVALID_CONFIG"
    status, r = console.post("/api/console/topic/configs", {"topic": "c-configs",
                                                           "set": {"no.such.config": "1"}})
    assert status == 400 and r["error"] == "INVALID_CONFIG"
    status, r = console.post("/api/console/topic/configs", {"topic": "c-configs", "delete": ["retention.ms"]})
    assert status == 200
    _, t = console.get("/api/console/topic?name=c-configs")
    assert {c["name"]: c for c in t["configs"]}["retention.ms"]["default"]
    status, r = console.post("/api/console/topic/configs", {"topic": "nope", "set": {"retention.ms": "1"}})
    assert status == 404


def test_produce_and_browse(console):
    console.post("/api/console/topics", {"name": "c-browse", "partitions": 2})
    first = []
    for i in range(4):
        status, r = console.post("/api/console/produce", {
            "topic": "c-browse", "partition": 0, "key": f"k{i}", "value": json.dumps({"n": i}),
            "headers": [{"key": "source", "value": "console"}]})
        assert status == 200 and r["partition"] == 0 and r["offset"] == i
        first.append(r)
    time.sleep(0.01)
    middle = int(time.time() * 1000)
    time.sleep(0.01)
    status, r = console.post("/api/console/produce", {"topic": "c-browse", "partition": 1,
                                                      "key": None, "value": None})
    assert status == 200 and r["partition"] == 1 and r["offset"] == 0
    # keyed without a partition: Kafka's murmur2 partitioner, as a Java producer would
    status, r = console.post("/api/console/produce", {"topic": "c-browse", "key": "k1", "value": "x"})
    assert status == 200 and r["partition"] in (0, 1)

    status, page = console.get("/api/console/messages?topic=c-browse&mode=offset&offset=0&partition=0")
    assert status == 200 and not page["errors"]
    recs = [r for r in page["records"] if r["partition"] == 0][:4]
    assert [r["offset"] for r in recs] == [0, 1, 2, 3]
    assert [text(r["key"]) for r in recs] == ["k0", "k1", "k2", "k3"]
    assert json.loads(text(recs[2]["value"])) == {"n": 2}
    assert recs[0]["headers"] == [{"key": "source", "value": b64("console")}]

    status, page = console.get("/api/console/messages?topic=c-browse&limit=2")
    assert status == 200 and page["mode"] == "newest" and len(page["records"]) == 2
    ts = [r["timestamp"] for r in page["records"]]
    assert ts == sorted(ts, reverse=True)

    status, page = console.get(f"/api/console/messages?topic=c-browse&mode=timestamp&timestamp={middle}")
    assert status == 200
    assert all(r["timestamp"] >= middle for r in page["records"])
    assert {(r["partition"], r["offset"]) for r in page["records"]} >= {(1, 0)}
    assert not any(r["partition"] == 0 and r["offset"] < 4 for r in page["records"])
    nulls = next(r for r in page["records"] if r["partition"] == 1 and r["offset"] == 0)
    assert nulls["key"] is None and nulls["value"] is None

    # newest first, then paging back to older records
    status, page = console.get("/api/console/messages?topic=c-browse&partition=0&limit=3")
    assert [r["offset"] for r in page["records"]] == [3, 2, 1] and page["older"] == {"0": 1}
    status, page = console.get("/api/console/messages?topic=c-browse&partition=0&limit=3&mode=before&positions=0:1")
    assert [r["offset"] for r in page["records"]] == [0] and page["older"] == {"0": 0}
    status, page = console.get("/api/console/messages?topic=c-browse&limit=2&mode=before&positions=0:3,1:0")
    assert [(r["partition"], r["offset"]) for r in page["records"]] == [(0, 2), (0, 1)]
    assert page["older"]["0"] == 1

    # the live tail: from the positions of the last page, only what came after
    status, page = console.get("/api/console/messages?topic=c-browse&mode=offset&offset=0&limit=500")
    positions = ",".join(f"{p}:{o}" for p, o in page["next"].items())
    status, tail = console.get(f"/api/console/messages?topic=c-browse&mode=tail&positions={positions}")
    assert status == 200 and tail["records"] == []
    console.post("/api/console/produce", {"topic": "c-browse", "partition": 1, "value": "later"})
    status, tail = console.get(f"/api/console/messages?topic=c-browse&mode=tail&positions={positions}")
    assert [text(r["value"]) for r in tail["records"]] == ["later"]


def test_browse_bad_input(console):
    console.post("/api/console/topics", {"name": "c-bad-browse", "partitions": 1})
    console.post("/api/console/produce", {"topic": "c-bad-browse", "value": "v"})
    cases = [
        ("topic=nope", 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ("topic=c-bad-browse&partition=7", 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ("topic=c-bad-browse&partition=0&mode=offset&offset=999", 400, "OFFSET_OUT_OF_RANGE"),
        ("topic=c-bad-browse&mode=offset&offset=-5", 400, "OFFSET_OUT_OF_RANGE"),
        ("topic=c-bad-browse&mode=offset&offset=abc", 400, "INVALID_REQUEST"),
        ("topic=c-bad-browse&mode=timestamp", 400, "INVALID_REQUEST"),
        ("topic=c-bad-browse&mode=sideways", 400, "INVALID_REQUEST"),
        ("topic=c-bad-browse&limit=100000", 400, "INVALID_REQUEST"),
        ("topic=c-bad-browse&mode=tail&positions=zz", 400, "INVALID_REQUEST"),
        ("", 400, "INVALID_REQUEST"),
    ]
    for query, status, error in cases:
        got, r = console.get("/api/console/messages?" + query)
        assert (got, r["error"]) == (status, error), query
        assert r["message"]
    status, r = console.get("/api/console/messages?topic=c-bad-browse&partition=0&mode=offset&offset=999")
    assert "out of range" in r["message"]


def test_produce_bad_input(console):
    console.post("/api/console/topics", {"name": "c-small", "partitions": 1,
                                         "configs": {"max.message.bytes": "1000"}})
    cases = [
        ({"topic": "nope", "value": "x"}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ({"topic": "c-small", "value": "x", "partition": 3}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ({"topic": "c-small", "value": "x", "partition": "first"}, 400, "INVALID_REQUEST"),
        ({"topic": "c-small", "value": 12}, 400, "INVALID_REQUEST"),
        ({"topic": "c-small", "value": "x", "headers": [{"value": "no key"}]}, 400, "INVALID_REQUEST"),
        ({"topic": "c-small", "value": "x", "headers": "h=v"}, 400, "INVALID_REQUEST"),
        # refused by the Produce path itself: bigger than the topic's max.message.bytes
        ({"topic": "c-small", "value": "x" * 5000}, 400, "MESSAGE_TOO_LARGE"),
    ]
    for body, status, error in cases:
        got, r = console.post("/api/console/produce", body)
        assert (got, r["error"]) == (status, error), body
    assert "larger than the topic's max.message.bytes (1000)" in r["message"]
    # malformed JSON, not an object, an empty body
    for data in (b"{bad", b"[1, 2]", b""):
        status, body, _ = console.raw("/api/console/produce", data, method="POST")
        r = json.loads(body)
        assert status == 400 and r["error"] == "INVALID_REQUEST", data
    assert "malformed JSON" in json.loads(console.raw("/api/console/produce", b"{bad", method="POST")[1])["message"]
    # over the HTTP listener's body limit: 413, the broker goes on
    host, _, port = console.broker.http_address.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("POST", "/api/console/produce")
    conn.putheader("content-length", str(2 * 1024 * 1024))
    conn.endheaders()
    assert conn.getresponse().status == 413
    conn.close()
    assert console.get("/api/console/topics")[0] == 200
    # the produced record went through Produce: the broker's meters count it
    console.post("/api/console/produce", {"topic": "c-small", "value": "counted"})
    status, metrics, _ = console.raw("/metrics")
    assert any('topic="c-small"' in line and "messagesin" in line.lower() and not line.endswith(" 0")
               and not line.endswith(" 0.0") for line in metrics.decode().splitlines())


def test_unknown_methods_and_paths(console):
    assert console.raw("/api/console/topics", method="DELETE")[0] == 405
    assert console.raw("/api/console/nothing")[0] == 404
    status, r = console.get("/api/console/topic")
    assert status == 400 and "name" in r["message"]
    status, r = console.get("/api/console/group")
    assert status == 400


def _wait(predicate, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_groups_lag_reset_and_delete(console, console_broker):
    console.post("/api/console/topics", {"name": "c-group", "partitions": 2})
    producer = Producer({"bootstrap.servers": console_broker.bootstrap_servers})
    for i in range(10):
        producer.produce("c-group", value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": console_broker.bootstrap_servers,
                         "group.id": "c-readers", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe(["c-group"])
        def consume(n):
            got = 0
            deadline = time.monotonic() + 30
            while got < n and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is not None and not m.error():
                    got += 1
            assert got == n
            consumer.commit(asynchronous=False)

        def lag_is(n):
            def check():
                status, g = console.get("/api/console/group?id=c-readers")
                return g if status == 200 and g["state"] == "Stable" and g["total_lag"] == n \
                    and len(g["offsets"]) == 2 else None
            return _wait(check, what=f"lag {n}")

        consume(10)
        g = lag_is(0)
        assert g["member_count"] == 1 and g["members"][0]["assignment"] == [
            {"topic": "c-group", "partitions": [0, 1]}]
        assert all(o["log_end_offset"] == 5 and o["committed_offset"] == 5 and o["lag"] == 0
                   and o["member_id"] == g["members"][0]["member_id"] for o in g["offsets"])
        for i in range(6):                      # the lag rises...
            producer.produce("c-group", value=b"more", partition=i % 2)
        assert producer.flush(30) == 0
        g = lag_is(6)
        assert [o["lag"] for o in g["offsets"]] == [3, 3]
        consume(6)                              # ...and falls as the consumer reads
        g = lag_is(0)
        status, listed = console.get("/api/console/groups")
        row = next(x for x in listed["groups"] if x["group_id"] == "c-readers")
        assert row["state"] == "Stable" and row["members"] == 1 and row["lag"] == g["total_lag"]
        # a group with members cannot be reset or deleted: the coordinator's rule
        status, r = console.post("/api/console/group/reset", {"group": "c-readers", "topic": "c-group",
                                                              "to": "earliest"})
        assert status == 409, r
        status, r = console.post("/api/console/group/delete", {"group": "c-readers"})
        assert status == 409 and r["error"] == "NON_EMPTY_GROUP"
    finally:
        consumer.close()
    _wait(lambda: console.get("/api/console/group?id=c-readers")[1].get("state") == "Empty",
          what="the group to be empty")
    status, r = console.post("/api/console/group/reset", {"group": "c-readers", "topic": "c-group",
                                                          "to": "earliest"})
    assert status == 200 and r["offsets"] == [{"partition": 0, "offset": 0}, {"partition": 1, "offset": 0}]
    assert console.get("/api/console/group?id=c-readers")[1]["total_lag"] == 16
    status, r = console.post("/api/console/group/reset", {"group": "c-readers", "topic": "c-group",
                                                          "to": "offset", "offset": 3})
    assert status == 200 and console.get("/api/console/group?id=c-readers")[1]["total_lag"] == 10
    status, r = console.post("/api/console/group/reset", {"group": "c-readers", "topic": "c-group",
                                                          "to": "latest"})
    assert status == 200 and console.get("/api/console/group?id=c-readers")[1]["total_lag"] == 0
    for body, error in [({"group": "c-readers", "topic": "nope", "to": "earliest"}, "UNKNOWN_TOPIC_OR_PARTITION"),
                        ({"group": "c-readers", "topic": "c-group", "to": "yesterday"}, "INVALID_REQUEST"),
                        ({"group": "c-readers", "topic": "c-group", "to": "offset", "offset": -1}, "OFFSET_OUT_OF_RANGE"),
                        ({"topic": "c-group", "to": "earliest"}, "INVALID_GROUP_ID")]:
        status, r = console.post("/api/console/group/reset", body)
        assert status >= 400 and r["error"] == error, body
    status, r = console.post("/api/console/group/delete", {"group": "c-readers"})
    assert status == 200 and r["deleted"]
    status, r = console.get("/api/console/group?id=c-readers")
    assert status == 404 and r["error"] == "GROUP_ID_NOT_FOUND"
    status, r = console.post("/api/console/group/delete", {"group": "c-readers"})
    assert status == 409 and r["error"] == "GROUP_ID_NOT_FOUND"


def test_cluster_view_and_history(console):
    status, c = console.get("/api/console/cluster")
    assert status == 200 and c["node_id"] == 1 and c["controller_id"] == 1
    assert [b["node_id"] for b in c["brokers"]] == [1] and c["brokers"][0]["status"] == "online"
    q = c["quorum"]
    assert q["leader_id"] == 1 and [v["replica_id"] for v in q["voters"]] == [1]
    assert q["voters"][0]["lag"] == 0
    assert c["under_replicated"] == [] and c["offline_partitions"] == []
    # the sampler runs every few seconds from the start: two samples give a first point
    c = _wait(lambda: (lambda r: r if r["history"] else None)(console.get("/api/console/cluster")[1]),
              timeout=40, what="a metrics history point")
    point = c["history"][-1]
    assert set(point) >= {"t", "bytes_in", "bytes_out", "messages_in", "requests", "connections"}


def test_console_off_a_non_loopback_listener_unless_enabled(tmp_path):
    off = KbrokerProcess(tmp_path / "off", {"kbroker.http.listen": "0.0.0.0:0"}).start()
    try:
        c = Console(off)
        c.base = "http://127.0.0.1:" + off.http_address.rpartition(":")[2]
        status, r = c.get("/api/console/topics")
        assert status == 404 and r["error"] == "CONSOLE_DISABLED"
        assert "kbroker.console.enable=true" in r["message"]
        status, body, _ = c.raw("/")
        assert status == 404 and b"kbroker.console.enable" in body
        assert c.raw("/health")[0] == 200
    finally:
        off.stop()
    on = KbrokerProcess(tmp_path / "on", {"kbroker.http.listen": "0.0.0.0:0",
                                         "kbroker.console.enable": "true"}).start()
    try:
        c = Console(on)
        c.base = "http://127.0.0.1:" + on.http_address.rpartition(":")[2]
        assert c.get("/api/console/topics")[0] == 200
        assert c.raw("/")[0] == 200
    finally:
        on.stop()
