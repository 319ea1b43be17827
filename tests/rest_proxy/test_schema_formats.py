"""The protobuf and jsonschema embedded formats through the broker's own schema registry
(issue 35 with issue 28): a schema given as text is registered under ``<topic>-value`` /
``<topic>-key`` (schemaType PROTOBUF or JSON) and its id answered, an id is used as given,
records are written in Confluent's wire format (magic byte, id, and for Protobuf the
message-index list) that confluent-kafka's ProtobufDeserializer / JSONDeserializer read
with a registry client, records confluent-kafka's serializers wrote are answered as JSON by
consumer instances of those formats, and bad input answers Confluent's codes with nothing
written. One broker (registry and gateway on) for the module."""
from __future__ import annotations

import json
import struct

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kbroker.testing.processes import free_port

from ..schema_registry.protobuf_fixtures import ORDERS_TEXT, order_class
from .conftest import Rest, rest_address, start_gateway, wait_for

PROTOBUF = "application/vnd.kafka.protobuf.v2+json"
JSONSCHEMA = "application/vnd.kafka.jsonschema.v2+json"
KEY_PROTO = 'syntax = "proto3";\npackage keys;\nmessage OrderKey { string id = 1; }\n'
PERSON = json.dumps({"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"]})


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    port = free_port()
    broker = start_gateway(tmp_path_factory, "rest-typed",
                           {"kbroker.schema.registry.listen": f"127.0.0.1:{port}"})
    try:
        yield broker, Rest(rest_address(broker)), f"http://127.0.0.1:{port}"
    finally:
        broker.stop()


def _raw(broker, topic: str, count: int) -> list:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"verify-{topic}"})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    try:
        while len(got) < count:
            m = c.poll(10)
            assert m is not None and m.error() is None
            got.append(m)
    finally:
        c.close()
    return got


def _read_instance(rest, group: str, fmt: str, topic: str, count: int) -> list:
    status, _, body = rest.post(f"/consumers/{group}", {"name": "i", "format": fmt,
                                                        "auto.offset.reset": "earliest"})
    assert status == 200, body
    rest.post(f"/consumers/{group}/instances/i/subscription", {"topics": [topic]})
    records = []

    def more():
        status, headers, body = rest.get(f"/consumers/{group}/instances/i/records?timeout=500",
                                         accept=f"application/vnd.kafka.{fmt}.v2+json")
        assert status == 200, body
        assert headers["content-type"] == f"application/vnd.kafka.{fmt}.v2+json"
        records.extend(body)
        return len(records) >= count
    wait_for(more, what=f"{count} {fmt} records")
    rest.delete(f"/consumers/{group}/instances/i")
    return records


def _end(rest, topic):
    return rest.get(f"/topics/{topic}/partitions/0/offsets")[2]["end_offset"]


def test_protobuf_produce_read_by_confluent_deserializer_and_by_an_instance(both):
    broker, rest, registry_url = both
    topic = "pb-orders"
    status, _, body = rest.post(f"/topics/{topic}", {
        "key_schema": KEY_PROTO, "value_schema": ORDERS_TEXT,
        "records": [{"key": {"id": "k1"}, "value": {
            "orderId": "o1", "quantity": 2, "lines": [{"sku": "s", "price": 1.5}],
            "tags": {"a": "b"}, "status": "STATUS_PAID", "voucher": "77",
            "placedAt": "2024-01-01T00:00:00Z", "note": "first"}}]}, content_type=PROTOBUF)
    assert status == 200, body
    key_id, value_id = body["key_schema_id"], body["value_schema_id"]
    assert body["offsets"][0]["offset"] == 0 and key_id != value_id
    status, _, body = rest.post(f"/topics/{topic}", {
        "value_schema_id": value_id, "records": [{"value": {"order_id": "o2"}}]},
        content_type=PROTOBUF)
    assert status == 200 and body["value_schema_id"] == value_id, body
    client = SchemaRegistryClient({"url": registry_url})
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema_id == value_id and latest.schema.schema_type == "PROTOBUF"
    assert client.get_latest_version(f"{topic}-key").schema_id == key_id

    # Confluent's wire format: magic byte, id, message indexes [0] as one zero byte
    Order = order_class()
    deserialize = ProtobufDeserializer(Order, {"use.deprecated.format": False}, client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    got = []
    for m in _raw(broker, topic, 2):
        assert m.value()[:6] == b"\x00" + struct.pack(">I", value_id) + b"\x00"
        got.append(deserialize(m.value(), ctx))
    first = got[0]
    assert (first.order_id, first.quantity, first.lines[0].price, dict(first.tags), first.status,
            first.voucher, first.placed_at.seconds, first.note) == (
        "o1", 2, 1.5, {"a": "b"}, 1, 77, 1704067200, "first")
    assert got[1].order_id == "o2" and not got[1].HasField("note")

    records = _read_instance(rest, "pb-readers", "protobuf", topic, 2)
    assert records[0]["key"] == {"id": "k1"} and records[1]["key"] is None
    value = records[0]["value"]
    assert (value["orderId"], value["quantity"], value["tags"], value["status"],
            value["voucher"], value["placedAt"], value["note"]) == (
        "o1", 2, {"a": "b"}, "STATUS_PAID", "77", "2024-01-01T00:00:00Z", "first")
    # fields without presence are printed at their defaults
    assert records[1]["value"]["quantity"] == 0 and records[1]["value"]["lines"] == []


def test_records_written_by_confluent_serializers_read_through_the_gateway(both):
    broker, rest, registry_url = both
    client = SchemaRegistryClient({"url": registry_url})
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    Order = order_class()
    pb_topic, js_topic = "pb-from-client", "js-from-client"
    to_proto = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    o = Order(order_id="c1", quantity=5, card="visa")
    producer.produce(pb_topic, value=to_proto(o, SerializationContext(pb_topic, MessageField.VALUE)))
    to_json = JSONSerializer(PERSON, client)
    for person in ({"name": "ann", "age": 31}, {"name": "bob"}):
        producer.produce(js_topic, value=to_json(person, SerializationContext(js_topic, MessageField.VALUE)))
    assert producer.flush(30) == 0

    [pb] = _read_instance(rest, "pb-client-readers", "protobuf", pb_topic, 1)
    assert pb["value"]["orderId"] == "c1" and pb["value"]["quantity"] == 5
    assert pb["value"]["card"] == "visa" and pb["key"] is None
    js = _read_instance(rest, "js-client-readers", "jsonschema", js_topic, 2)
    assert [r["value"] for r in js] == [{"name": "ann", "age": 31}, {"name": "bob"}]


def test_jsonschema_produce_read_by_confluent_deserializer_and_by_an_instance(both):
    broker, rest, registry_url = both
    topic = "js-people"
    status, _, body = rest.post(f"/topics/{topic}", {
        "key_schema": '{"type": "string"}', "value_schema": PERSON,
        "records": [{"key": "p1", "value": {"name": "ann", "age": 3}},
                    {"value": {"name": "bob"}}]}, content_type=JSONSCHEMA)
    assert status == 200, body
    value_id = body["value_schema_id"]
    status, _, body = rest.post(f"/topics/{topic}", {
        "value_schema_id": value_id, "records": [{"value": {"name": "cy", "age": 9}}]},
        content_type=JSONSCHEMA)
    assert status == 200 and body["offsets"][0]["offset"] == 2, body
    client = SchemaRegistryClient({"url": registry_url})
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema_id == value_id and latest.schema.schema_type == "JSON"
    deserialize = JSONDeserializer(None, schema_registry_client=client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    raw = _raw(broker, topic, 3)
    assert all(m.value()[:5] == b"\x00" + struct.pack(">I", value_id) for m in raw)
    assert [deserialize(m.value(), ctx) for m in raw] == [
        {"name": "ann", "age": 3}, {"name": "bob"}, {"name": "cy", "age": 9}]
    records = _read_instance(rest, "js-readers", "jsonschema", topic, 3)
    assert [(r["key"], r["value"]) for r in records] == [
        ("p1", {"name": "ann", "age": 3}), (None, {"name": "bob"}), (None, {"name": "cy", "age": 9})]


def test_bad_protobuf_and_jsonschema_requests_write_nothing(both):
    broker, rest, _ = both
    rest.post("/topics/typed-bad", {"value_schema": KEY_PROTO, "records": [{"value": {"id": "x"}}]},
              content_type=PROTOBUF)
    status, _, js = rest.post("/topics/typed-bad-js", {"value_schema": PERSON,
                                                       "records": [{"value": {"name": "a"}}]},
                              content_type=JSONSCHEMA)
    assert status == 200, js
    before = (_end(rest, "typed-bad"), _end(rest, "typed-bad-js"))
    avro_id = rest.post("/topics/typed-bad-avro", {"value_schema": '"int"', "records": [{"value": 1}]},
                        content_type="application/vnd.kafka.avro.v2+json")[2]["value_schema_id"]
    cases = [
        ("typed-bad", PROTOBUF, {"value_schema": "message {", "records": [{"value": {}}]}, 422, 42205),
        ("typed-bad", PROTOBUF, {"value_schema": KEY_PROTO,
                                 "records": [{"value": {"id": "a"}}, {"value": {"nope": 1}}]}, 422, 42203),
        ("typed-bad", PROTOBUF, {"value_schema": KEY_PROTO, "records": [{"value": "text"}]}, 422, 42203),
        ("typed-bad", PROTOBUF, {"value_schema_id": avro_id, "records": [{"value": {}}]}, 422, 42205),
        ("typed-bad", PROTOBUF, {"value_schema_id": 987654, "records": [{"value": {}}]}, 404, 40403),
        ("typed-bad", PROTOBUF, {"records": [{"value": {}}]}, 422, 42202),
        ("typed-bad", PROTOBUF, {"value_schema": KEY_PROTO, "records": [{"key": {"id": "k"},
                                                                         "value": {}}]}, 422, 42201),
        ("typed-bad-js", JSONSCHEMA, {"value_schema": '{"type": 12}', "records": [{"value": 1}]}, 422, 42205),
        ("typed-bad-js", JSONSCHEMA, {"value_schema": PERSON,
                                      "records": [{"value": {"name": "a"}}, {"value": {"age": -1}}]},
         422, 42203),
        ("typed-bad-js", JSONSCHEMA, {"value_schema_id": js["value_schema_id"] + 1000,
                                      "records": [{"value": 1}]}, 404, 40403),
    ]
    for topic, ct, body, status, code in cases:
        got, _, answer = rest.post(f"/topics/{topic}", body, content_type=ct)
        assert (got, answer["error_code"]) == (status, code), (body, answer)
    assert (_end(rest, "typed-bad"), _end(rest, "typed-bad-js")) == before
    # a protobuf instance reading bytes that are not in the wire format: the poll fails,
    # the broker goes on serving
    rest.post("/topics/typed-bad", {"records": [{"value": "plain"}]},
              content_type="application/vnd.kafka.json.v2+json")
    rest.post("/consumers/typed-bad-readers", {"name": "b", "format": "protobuf"})
    rest.post("/consumers/typed-bad-readers/instances/b/assignments",
              {"partitions": [{"topic": "typed-bad", "partition": 0}]})
    rest.post("/consumers/typed-bad-readers/instances/b/positions",
              {"offsets": [{"topic": "typed-bad", "partition": 0, "offset": before[0]}]})
    status, _, body = rest.get("/consumers/typed-bad-readers/instances/b/records?timeout=2000",
                               accept=PROTOBUF)
    assert (status, body["error_code"]) == (500, 50002), body
    assert rest.get("/topics/typed-bad")[0] == 200


def test_readme_blocks_run_as_written(both):
    """README's REST gateway blocks for these formats and for v3's broker configs, with
    this module's gateway address (the README test's broker has no registry of its own
    port)."""
    import subprocess

    from tests.broker.test_readme import README, blocks
    broker, rest, _ = both
    start = README.read_text().index("## REST gateway")
    text = README.read_text()[start:README.read_text().index("\n## ", start + 1)]
    mine = [code for _, code, _ in blocks(text)
            if "vnd.kafka.protobuf" in code or "broker-configs" in code]
    assert len(mine) == 2
    out = []
    for code in mine:
        r = subprocess.run(["bash", "-c", "set -euo pipefail\n" +
                            code.replace("127.0.0.1:8082", rest.base.split("//")[1])],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{code}\n{r.stdout}\n{r.stderr}"
        out.append(r.stdout)
    assert '"value_schema_id"' in out[0] and '{"id": "o-1", "qty": 2}' in out[0].replace('"qty":2', '"qty": 2')
    assert '"value": "86400000"' in out[1] or '"value":"86400000"' in out[1]
    assert '"KafkaReassignmentList"' in out[1]


def test_v3_records_with_schemas(both):
    """v3's streaming produce with AVRO, PROTOBUF and JSONSCHEMA keys and values: by schema
    text (registered), by id, by subject version, by type alone (the subject's latest)."""
    broker, rest, registry_url = both
    cid = rest.get("/v3/clusters")[2]["data"][0]["cluster_id"]
    topic = "v3-typed"
    assert rest.post(f"/v3/clusters/{cid}/topics", {"topic_name": topic, "partitions_count": 1})[0] == 201
    path = f"/v3/clusters/{cid}/topics/{topic}/records"
    status, _, first = rest.post(path, {
        "key": {"type": "STRING", "data": "k"},
        "value": {"type": "JSONSCHEMA", "schema": PERSON, "data": {"name": "ann", "age": 1}}})
    assert status == 200, first
    v = first["value"]
    assert (v["type"], v["subject"], v["schema_version"]) == ("JSONSCHEMA", f"{topic}-value", 1)
    assert first["key"] == {"type": "STRING", "size": 1}
    sid = v["schema_id"]
    raw = b"".join(json.dumps(o).encode() + b"\n" for o in (
        {"value": {"type": "JSONSCHEMA", "data": {"name": "bob"}}},                 # latest
        {"value": {"schema_id": sid, "data": {"name": "cy", "age": 3}}},            # by id
        {"value": {"schema_version": 1, "data": {"name": "di"}}},                   # by version
        {"value": {"schema_id": sid, "data": {"age": -1}}},                         # does not fit
        {"value": {"schema_id": 987654, "data": {"name": "x"}}},                    # unknown id
        {"value": {"type": "AVRO", "schema_id": sid, "data": {"name": "x"}}},       # wrong type
        {"value": {"type": "AVRO", "subject_name_strategy": "RECORD_NAME", "schema": '"int"',
                   "data": 1}},
        {"key": {"type": "PROTOBUF", "schema": KEY_PROTO, "data": {"id": "k9"}},
         "value": {"type": "AVRO", "subject": "v3-typed-avro", "schema": '"string"', "data": "av"}}))
    status, _, answers = rest.post(path, raw=raw, content_type="application/json")
    assert status == 200
    # the record-name strategy cannot name an Avro "int": Kafka REST's serialization error
    assert [a["error_code"] for a in answers] == [200, 200, 200, 400, 404, 400, 422, 200], answers
    assert [a["offset"] for a in answers if a["error_code"] == 200] == [1, 2, 3, 4]
    last = answers[-1]
    assert (last["key"]["type"], last["key"]["subject"]) == ("PROTOBUF", f"{topic}-key")
    assert (last["value"]["type"], last["value"]["subject"]) == ("AVRO", "v3-typed-avro")
    client = SchemaRegistryClient({"url": registry_url})
    js = JSONDeserializer(None, schema_registry_client=client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    msgs = _raw(broker, topic, 5)
    assert [js(m.value(), ctx) for m in msgs[:4]] == [
        {"name": "ann", "age": 1}, {"name": "bob"}, {"name": "cy", "age": 3}, {"name": "di"}]
    assert msgs[4].key()[:6] == b"\x00" + struct.pack(">I", last["key"]["schema_id"]) + b"\x00"
    assert msgs[4].value()[:5] == b"\x00" + struct.pack(">I", last["value"]["schema_id"])


ORDER_AVRO = json.dumps({"type": "record", "name": "Order", "namespace": "shop.avro", "fields": [
    {"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]})
REFUND_AVRO = json.dumps({"type": "record", "name": "shop.v1.Refund",
                          "fields": [{"name": "order", "type": "string"}]})
TITLED = json.dumps({"title": "NamedPerson", "type": "object",
                     "properties": {"name": {"type": "string"}}, "required": ["name"]})


def test_v3_records_with_record_name_strategies(both):
    """``subject_name_strategy`` RECORD_NAME and TOPIC_RECORD_NAME as Kafka REST: the
    subject is the schema's record name (Avro full name, Protobuf package and first
    message, JSON Schema title), or ``<topic>-<name>``; named from the ``schema`` text
    or the registered ``schema_id``. confluent-kafka's serializers, configured with the
    same strategies and no auto-registration, find the very schemas the gateway
    registered and write the same bytes; its deserializers read the records back. The
    cases Kafka REST refuses are refused with its codes and write nothing."""
    from confluent_kafka.schema_registry import (Schema, record_subject_name_strategy,
                                                 topic_record_subject_name_strategy)
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    broker, rest, registry_url = both
    client = SchemaRegistryClient({"url": registry_url})
    cid = rest.get("/v3/clusters")[2]["data"][0]["cluster_id"]
    topic = "v3-named"
    assert rest.post(f"/v3/clusters/{cid}/topics", {"topic_name": topic, "partitions_count": 1})[0] == 201
    path = f"/v3/clusters/{cid}/topics/{topic}/records"
    refund_id = client.register_schema("shop.v1.Refund", Schema(REFUND_AVRO, "AVRO"))

    def send(*objs):
        raw = b"".join(json.dumps(o).encode() + b"\n" for o in objs)
        status, _, answers = rest.post(path, raw=raw, content_type="application/json")
        assert status == 200 and len(answers) == len(objs), answers
        return answers

    first = send(
        {"key": {"type": "PROTOBUF", "subject_name_strategy": "TOPIC_RECORD_NAME",
                 "schema": ORDERS_TEXT, "data": {"orderId": "o1", "quantity": 2}},
         "value": {"type": "AVRO", "subject_name_strategy": "RECORD_NAME", "schema": ORDER_AVRO,
                   "data": {"id": "o1", "qty": 2}}},
        {"value": {"type": "JSONSCHEMA", "subject_name_strategy": "RECORD_NAME", "schema": TITLED,
                   "data": {"name": "ann"}}},
        {"value": {"subject_name_strategy": "RECORD_NAME", "schema_id": refund_id,
                   "data": {"order": "o1"}}})
    assert [a["error_code"] for a in first] == [200, 200, 200], first
    assert [(a.get("key") or {}).get("subject") for a in first] == ["v3-named-shop.v1.Order", None, None]
    assert [(a["value"]["type"], a["value"]["subject"], a["value"]["schema_version"]) for a in first] == [
        ("AVRO", "shop.avro.Order", 1), ("JSONSCHEMA", "NamedPerson", 1), ("AVRO", "shop.v1.Refund", 1)]
    assert first[2]["value"]["schema_id"] == refund_id
    order_id = first[0]["value"]["schema_id"]

    second = send(
        # the id is a version of shop.avro.Order, not (yet) of v3-named-shop.avro.Order
        {"value": {"subject_name_strategy": "TOPIC_RECORD_NAME", "schema_id": order_id,
                   "data": {"id": "x", "qty": 0}}},
        {"value": {"type": "AVRO", "subject_name_strategy": "TOPIC_RECORD_NAME", "schema": ORDER_AVRO,
                   "data": {"id": "o2", "qty": 3}}},
        {"value": {"subject_name_strategy": "TOPIC_RECORD_NAME", "schema_id": order_id,
                   "data": {"id": "o3", "qty": 4}}},
        # no schema to name the subject with
        {"value": {"subject_name_strategy": "RECORD_NAME", "schema_version": 1, "data": {"order": "x"}}},
        {"value": {"type": "AVRO", "subject_name_strategy": "TOPIC_RECORD_NAME", "data": {"order": "x"}}},
        # Kafka REST's enum names only, and not with a subject
        {"value": {"subject_name_strategy": "record_name", "schema_id": refund_id, "data": {"order": "x"}}},
        {"value": {"subject_name_strategy": "TOPIC", "schema_id": refund_id, "data": {"order": "x"}}},
        {"value": {"subject_name_strategy": "RECORD_NAME", "subject": "shop.v1.Refund",
                   "schema_id": refund_id, "data": {"order": "x"}}},
        # schemas without a record name
        {"value": {"type": "JSONSCHEMA", "subject_name_strategy": "RECORD_NAME", "schema": PERSON,
                   "data": {"name": "x"}}},
        {"value": {"type": "AVRO", "subject_name_strategy": "TOPIC_RECORD_NAME",
                   "schema": '{"type": "enum", "name": "Color", "symbols": ["RED"]}', "data": "RED"}},
        # a schema that does not parse
        {"value": {"type": "PROTOBUF", "subject_name_strategy": "RECORD_NAME", "schema": "message {",
                   "data": {}}})
    assert [a["error_code"] for a in second] == [422, 200, 200, 400, 400, 400, 400, 400, 422, 422, 400], second
    assert "v3-named-shop.avro.Order" in second[0]["message"]
    assert [a["offset"] for a in second if a["error_code"] == 200] == [3, 4]
    assert [(a["value"]["subject"], a["value"]["schema_id"], a["value"]["schema_version"])
            for a in second if a["error_code"] == 200] == [("v3-named-shop.avro.Order", order_id, 1)] * 2
    # as for any strategy, an id that is not a version of the subject (here the default
    # v3-named-value) is Kafka REST's serialization error, 422
    status, _, alone = rest.post(path, {"value": {"schema_id": refund_id, "data": {"order": "x"}}})
    assert (status, alone["error_code"]) == (422, 422), alone
    subjects = set(client.get_subjects())
    assert {"shop.avro.Order", "v3-named-shop.avro.Order", "v3-named-shop.v1.Order", "NamedPerson",
            "shop.v1.Refund"} <= subjects
    assert not subjects & {f"{topic}-key", f"{topic}-value", "Color", f"{topic}-Color"}

    # the bytes: confluent-kafka's serializers with the same strategies (looking the schema
    # up, registering nothing) write what the gateway wrote; its deserializers read it
    value_ctx = SerializationContext(topic, MessageField.VALUE)
    key_ctx = SerializationContext(topic, MessageField.KEY)
    Order = order_class()
    assert topic_record_subject_name_strategy(key_ctx, Order.DESCRIPTOR.full_name) == first[0]["key"]["subject"]
    msgs = _raw(broker, topic, 5)
    key = ProtobufDeserializer(Order, {"use.deprecated.format": False}, client)(msgs[0].key(), key_ctx)
    assert (key.order_id, key.quantity) == ("o1", 2)
    assert msgs[0].key()[1:5] == struct.pack(">I", first[0]["key"]["schema_id"])
    lookup = {"auto.register.schemas": False}
    by_record = AvroSerializer(client, ORDER_AVRO,
                               conf={**lookup, "subject.name.strategy": record_subject_name_strategy})
    by_topic_record = AvroSerializer(client, ORDER_AVRO, conf={
        **lookup, "subject.name.strategy": topic_record_subject_name_strategy})
    assert msgs[0].value() == by_record({"id": "o1", "qty": 2}, value_ctx)
    assert msgs[3].value() == by_topic_record({"id": "o2", "qty": 3}, value_ctx)
    assert msgs[4].value() == by_topic_record({"id": "o3", "qty": 4}, value_ctx)
    as_json = JSONSerializer(TITLED, client,
                             conf={**lookup, "subject.name.strategy": record_subject_name_strategy})
    assert msgs[1].value()[:5] == as_json({"name": "ann"}, value_ctx)[:5]
    assert JSONDeserializer(None, schema_registry_client=client)(msgs[1].value(), value_ctx) == {"name": "ann"}
    avro_reader = AvroDeserializer(client)
    assert [avro_reader(m.value(), value_ctx) for m in (msgs[0], msgs[2], msgs[4])] == [
        {"id": "o1", "qty": 2}, {"order": "o1"}, {"id": "o3", "qty": 4}]
