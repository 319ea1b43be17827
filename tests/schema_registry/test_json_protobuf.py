"""JSON Schema through confluent-kafka's serializers and the REST API (registration,
compatibility answers, a round trip through the broker), and Protobuf's .proto text over
the REST API (confluent-kafka's ProtobufSerializer registers a base64 FileDescriptorProto,
which the types do not parse yet: not tested here)."""
from __future__ import annotations

import json
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

ORDER = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
    "required": ["id"], "additionalProperties": False})


def test_json_schema_round_trip_through_the_broker(registry):
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": registry.url})
    serializer = JSONSerializer(ORDER, client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": registry.broker.bootstrap_servers})
    sent = [{"id": i, "item": f"thing-{i}"} for i in range(3)]
    for v in sent:
        producer.produce(topic, value=serializer(v, ctx))
    assert producer.flush(30) == 0
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "JSON"
    status, body = registry.call("GET", f"/subjects/{topic}-value/versions/1")
    assert status == 200 and body["schemaType"] == "JSON"
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    consumer = Consumer({"bootstrap.servers": registry.broker.bootstrap_servers,
                         "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < len(sent):
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                got.append(deserializer(msg.value(), ctx))
    finally:
        consumer.close()
    assert got == sent


def test_json_schema_compatibility_over_rest(registry, subject):
    status, first = registry.call("POST", f"/subjects/{subject}/versions",
                                  {"schema": ORDER, "schemaType": "JSON"})
    assert status == 200
    # a closed content model: a new required property breaks BACKWARD
    stricter = json.loads(ORDER)
    stricter["properties"]["qty"] = {"type": "integer"}
    stricter["required"] = ["id", "qty"]
    status, body = registry.call("POST", f"/subjects/{subject}/versions",
                                 {"schema": json.dumps(stricter), "schemaType": "JSON"})
    assert (status, body["error_code"]) == (409, 409)
    status, body = registry.call("POST", f"/compatibility/subjects/{subject}/versions/latest?verbose=true",
                                 {"schema": json.dumps(stricter), "schemaType": "JSON"})
    assert status == 200 and body["is_compatible"] is False and body["messages"]
    # the same schema typed as AVRO is another (invalid) schema, not the JSON one
    status, body = registry.call("POST", f"/subjects/{subject}/versions", {"schema": ORDER})
    assert (status, body["error_code"]) == (422, 42201)
    status, body = registry.call("POST", f"/subjects/{subject}/versions", {"schema": "{", "schemaType": "JSON"})
    assert (status, body["error_code"]) == (422, 42201)


PROTO = """syntax = "proto3";
package shop;

message Item {
  string name = 1;
  int32 qty = 2;
}
"""


def test_protobuf_registration_and_compatibility_over_rest(registry, subject):
    status, first = registry.call("POST", f"/subjects/{subject}/versions",
                                  {"schema": PROTO, "schemaType": "PROTOBUF"})
    assert status == 200, first
    status, body = registry.call("GET", f"/schemas/ids/{first['id']}")
    assert status == 200 and body["schemaType"] == "PROTOBUF"
    # the same schema again (other spacing) is the same id
    again = PROTO.replace("  string name = 1;", "string   name = 1;")
    assert registry.call("POST", f"/subjects/{subject}/versions",
                         {"schema": again, "schemaType": "PROTOBUF"}) == (200, {"id": first["id"]})
    # changing a field's type breaks compatibility
    changed = PROTO.replace("int32 qty = 2;", "string qty = 2;")
    status, body = registry.call("POST", f"/subjects/{subject}/versions",
                                 {"schema": changed, "schemaType": "PROTOBUF"})
    assert (status, body["error_code"]) == (409, 409), body
    status, body = registry.call("POST", f"/subjects/{subject}/versions",
                                 {"schema": "message {", "schemaType": "PROTOBUF"})
    assert (status, body["error_code"]) == (422, 42201)
