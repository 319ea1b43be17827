"""API v2 produce and metadata over plain HTTP: the binary and json embedded formats, to a
topic and to a partition, Confluent's per-record answers, the key partitioner, and the
records read back by a stock Kafka client (confluent-kafka) exactly as written."""
from __future__ import annotations

import json

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.console.views import murmur2

from .conftest import BINARY, JSON, V2, b64


def _create(broker, name, partitions):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def _read_all(broker, topic, partitions):
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "verify",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    try:
        expected_end = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                        for p in range(partitions)}
        want = sum(expected_end.values())
        while len(out) < want:
            m = c.poll(10)
            assert m is not None, f"only {len(out)} of {want} records"
            assert m.error() is None, m.error()
            out.append((m.partition(), m.offset(), m.key(), m.value()))
    finally:
        c.close()
    return sorted(out)


def test_produce_binary_to_topic_and_read_back(rest, gateway_broker):
    _create(gateway_broker, "bin-topic", 3)
    status, headers, body = rest.post("/topics/bin-topic", {"records": [
        {"key": b64(b"alpha"), "value": b64(b"\x00\x01binary")},
        {"value": b64(b"no key")},
        {"key": None, "value": None},
        {"value": b64(b"to p2"), "partition": 2}]}, content_type=BINARY)
    assert status == 200, body
    assert headers["content-type"] == V2
    assert body["key_schema_id"] is None and body["value_schema_id"] is None
    offsets = body["offsets"]
    assert len(offsets) == 4
    assert all(o["error_code"] is None and o["error"] is None and o["offset"] >= 0 for o in offsets)
    # a keyed record lands where Kafka's default partitioner (murmur2) puts it
    assert offsets[0]["partition"] == (murmur2(b"alpha") & 0x7FFFFFFF) % 3
    assert offsets[3]["partition"] == 2
    stored = _read_all(gateway_broker, "bin-topic", 3)
    assert (offsets[0]["partition"], offsets[0]["offset"], b"alpha", b"\x00\x01binary") in stored
    assert (offsets[1]["partition"], offsets[1]["offset"], None, b"no key") in stored
    assert (offsets[2]["partition"], offsets[2]["offset"], None, None) in stored
    assert (2, offsets[3]["offset"], None, b"to p2") in stored


def test_produce_json_to_partition(rest, gateway_broker):
    _create(gateway_broker, "json-topic", 2)
    status, _, body = rest.post("/topics/json-topic/partitions/1", {"records": [
        {"key": "k1", "value": {"order": 1, "items": ["a", "b"]}},
        {"value": [1, 2, 3]}, {"value": "text"}, {"value": None}]}, content_type=JSON)
    assert status == 200, body
    assert [o["partition"] for o in body["offsets"]] == [1, 1, 1, 1]
    assert [o["offset"] for o in body["offsets"]] == [0, 1, 2, 3]
    stored = _read_all(gateway_broker, "json-topic", 2)
    assert [(k, json.loads(v) if v is not None else None) for _, _, k, v in stored] == [
        (b'"k1"', {"order": 1, "items": ["a", "b"]}), (None, [1, 2, 3]), (None, "text"),
        (None, None)]


def test_generic_content_types_mean_binary(rest, gateway_broker):
    _create(gateway_broker, "generic-ct", 1)
    for ct in (V2, "application/json", "application/vnd.kafka+json"):
        status, _, body = rest.post("/topics/generic-ct", {"records": [{"value": b64(b"x")}]},
                                    content_type=ct)
        assert status == 200, (ct, body)
    assert [v for *_, v in _read_all(gateway_broker, "generic-ct", 1)] == [b"x", b"x", b"x"]


def test_produce_auto_creates_a_topic_as_a_client_would(rest, gateway_broker):
    # auto.create.topics.enable is Kafka's default: the Metadata handler creates it
    status, _, body = rest.post("/topics/auto-made", {"records": [{"value": {"a": 1}}]},
                                content_type=JSON)
    assert status == 200, body
    assert body["offsets"][0]["offset"] == 0
    status, _, body = rest.get("/topics/auto-made")
    assert status == 200 and len(body["partitions"]) == 1


def test_metadata_topics_partitions_brokers(rest, gateway_broker):
    _create(gateway_broker, "meta-topic", 2)
    rest.post("/topics/meta-topic/partitions/0", {"records": [{"value": b64(b"1")},
                                                              {"value": b64(b"2")}]},
              content_type=BINARY)
    status, headers, topics = rest.get("/topics", accept=V2)
    assert status == 200 and headers["content-type"] == V2
    assert "meta-topic" in topics and not any(t.startswith("__") for t in topics)
    status, _, t = rest.get("/topics/meta-topic")
    assert status == 200 and t["name"] == "meta-topic"
    assert t["configs"]["cleanup.policy"] == "delete"
    assert t["partitions"] == [
        {"partition": 0, "leader": 1, "replicas": [{"broker": 1, "leader": True, "in_sync": True}]},
        {"partition": 1, "leader": 1, "replicas": [{"broker": 1, "leader": True, "in_sync": True}]}]
    status, _, parts = rest.get("/topics/meta-topic/partitions")
    assert status == 200 and [p["partition"] for p in parts] == [0, 1]
    status, _, p = rest.get("/topics/meta-topic/partitions/1")
    assert status == 200 and p["leader"] == 1
    status, _, offsets = rest.get("/topics/meta-topic/partitions/0/offsets")
    assert status == 200 and offsets == {"beginning_offset": 0, "end_offset": 2}
    status, _, brokers = rest.get("/brokers")
    assert status == 200 and brokers == {"brokers": [1]}


def test_missing_topic_and_partition_answer_confluents_codes(rest, gateway_broker):
    status, _, body = rest.get("/topics/no-such-topic")
    assert (status, body["error_code"]) == (404, 40401)
    status, _, body = rest.get("/topics/no-such-topic/partitions")
    assert (status, body["error_code"]) == (404, 40401)
    _create(gateway_broker, "one-part", 1)
    status, _, body = rest.get("/topics/one-part/partitions/7")
    assert (status, body["error_code"]) == (404, 40402)
