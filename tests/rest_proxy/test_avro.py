"""The avro embedded format through the broker's own schema registry (issue 28): a schema
given as text is registered under ``<topic>-value``/``<topic>-key`` and its id answered, a
schema id is used as given, records are stored in Confluent's wire format (what
confluent-kafka's AvroDeserializer reads), and an avro consumer instance answers Avro's
JSON encoding; bad schemas, data that does not fit and unknown ids answer Confluent's codes
and write nothing."""
from __future__ import annotations

import json
import struct

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kbroker.testing.processes import free_port

from .conftest import Rest, rest_address, start_gateway, wait_for

AVRO = "application/vnd.kafka.avro.v2+json"
ORDER = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "int"}, {"name": "note", "type": ["null", "string"], "default": None}]})


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    port = free_port()
    broker = start_gateway(tmp_path_factory, "rest-avro",
                           {"kbroker.schema.registry.listen": f"127.0.0.1:{port}"})
    try:
        yield broker, Rest(rest_address(broker)), f"http://127.0.0.1:{port}"
    finally:
        broker.stop()


def _end(rest, topic):
    return rest.get(f"/topics/{topic}/partitions/0/offsets")[2]["end_offset"]


def test_produce_with_a_schema_then_its_id_and_read_back(both):
    broker, rest, registry_url = both
    status, _, body = rest.post("/topics/avro-orders", {
        "key_schema": '"string"', "value_schema": ORDER,
        "records": [{"key": "o1", "value": {"id": 1, "note": {"string": "first"}}},
                    {"key": "o2", "value": {"id": 2, "note": None}}]}, content_type=AVRO)
    assert status == 200, body
    key_id, value_id = body["key_schema_id"], body["value_schema_id"]
    assert isinstance(key_id, int) and isinstance(value_id, int) and key_id != value_id
    status, _, body = rest.post("/topics/avro-orders", {
        "value_schema_id": value_id, "records": [{"value": {"id": 3, "note": {"string": "by id"}}}]},
        content_type=AVRO)
    assert status == 200 and body["value_schema_id"] == value_id and body["offsets"][0]["offset"] == 2
    # the registry has the subjects of TopicNameStrategy
    client = SchemaRegistryClient({"url": registry_url})
    assert {"avro-orders-key", "avro-orders-value"} <= set(client.get_subjects())
    assert client.get_latest_version("avro-orders-value").schema_id == value_id
    # Confluent's wire format, read by confluent-kafka's deserializer
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "avro-verify"})
    c.assign([TopicPartition("avro-orders", 0, 0)])
    deserialize = AvroDeserializer(client)
    got = []
    try:
        while len(got) < 3:
            m = c.poll(10)
            assert m is not None and m.error() is None
            assert m.value()[0] == 0 and struct.unpack(">I", m.value()[1:5])[0] == value_id
            got.append(deserialize(m.value(), SerializationContext("avro-orders", MessageField.VALUE)))
    finally:
        c.close()
    assert got == [{"id": 1, "note": "first"}, {"id": 2, "note": None}, {"id": 3, "note": "by id"}]
    # an avro consumer instance answers Avro's JSON encoding
    status, _, _ = rest.post("/consumers/avro-readers", {"name": "a", "format": "avro",
                                                         "auto.offset.reset": "earliest"})
    assert status == 200
    rest.post("/consumers/avro-readers/instances/a/subscription", {"topics": ["avro-orders"]})
    records = []

    def more():
        status, _, body = rest.get("/consumers/avro-readers/instances/a/records?timeout=500",
                                   accept=AVRO)
        assert status == 200, body
        records.extend(body)
        return len(records) >= 3
    wait_for(more, what="three avro records")
    assert [(r["key"], r["value"]) for r in records] == [
        ("o1", {"id": 1, "note": {"string": "first"}}), ("o2", {"id": 2, "note": None}),
        (None, {"id": 3, "note": {"string": "by id"}})]
    rest.delete("/consumers/avro-readers/instances/a")


def test_bad_avro_requests_write_nothing(both):
    broker, rest, _ = both
    rest.post("/topics/avro-bad", {"value_schema": '"int"', "records": [{"value": 1}]},
              content_type=AVRO)
    before = _end(rest, "avro-bad")
    cases = [
        ({"value_schema": '{"type": "record", "name": "X", "fields": [{"name": "a"}]}',
          "records": [{"value": {"a": 1}}]}, 422, 42205),                   # invalid schema
        ({"value_schema": '"int"', "records": [{"value": 1}, {"value": "not an int"}]}, 422, 42203),
        ({"value_schema": '"int"', "records": [{"value": {"id": 1}}]}, 422, 42203),
        # the registry's own rule: an incompatible schema for the subject (BACKWARD)
        ({"value_schema": ORDER, "records": [{"value": {"id": 1, "note": None}}]}, 409, 409),
        ({"value_schema_id": 987654, "records": [{"value": 1}]}, 404, 40403),  # unknown id
        ({"records": [{"value": 1}]}, 422, 42202),                           # no value schema
    ]
    for body, status, code in cases:
        got, _, answer = rest.post("/topics/avro-bad", body, content_type=AVRO)
        assert (got, answer["error_code"]) == (status, code), (body, answer)
    assert _end(rest, "avro-bad") == before
    # a json instance cannot be asked for avro, an avro instance reading non-avro bytes fails
    rest.post("/topics/avro-bad", {"records": [{"value": "plain"}]},
              content_type="application/vnd.kafka.json.v2+json")
    rest.post("/consumers/avro-bad-readers", {"name": "b", "format": "avro",
                                              "auto.offset.reset": "earliest"})
    rest.post("/consumers/avro-bad-readers/instances/b/assignments",
              {"partitions": [{"topic": "avro-bad", "partition": 0}]})
    rest.post("/consumers/avro-bad-readers/instances/b/positions",
              {"offsets": [{"topic": "avro-bad", "partition": 0, "offset": before}]})
    status, _, answer = rest.get("/consumers/avro-bad-readers/instances/b/records?timeout=2000",
                                 accept=AVRO)
    assert (status, answer["error_code"]) == (500, 50002) and "wire format" in answer["message"]
    # the position did not move past the record it could not show
    status, _, answer = rest.get("/consumers/avro-bad-readers/instances/b/records?timeout=2000",
                                 accept=AVRO)
    assert (status, answer["error_code"]) == (500, 50002)
    rest.delete("/consumers/avro-bad-readers/instances/b")
