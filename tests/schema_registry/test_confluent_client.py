"""confluent-kafka's own schema registry client and Avro serde against kbroker: the
registry and the broker of one ``kbroker serve`` process, as a user runs them."""
from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from .conftest import avro_record

USER = avro_record("User", ("name", "string"), ("favorite_number", "int"))


def test_avro_round_trip_through_the_broker_with_automatic_registration(registry):
    topic = f"users-{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": registry.url})
    serializer = AvroSerializer(client, USER)
    producer = Producer({"bootstrap.servers": registry.broker.bootstrap_servers})
    sent = [{"name": f"user-{i}", "favorite_number": i} for i in range(5)]
    for value in sent:
        producer.produce(topic, value=serializer(value, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0

    # the serializer registered the schema under the topic's value subject
    assert f"{topic}-value" in client.get_subjects()
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.version == 1 and latest.schema.schema_type == "AVRO"

    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
    consumer = Consumer({"bootstrap.servers": registry.broker.bootstrap_servers,
                         "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < len(sent):
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            # the Confluent wire format: magic byte 0, then the schema id, then Avro
            assert msg.value()[0] == 0
            assert int.from_bytes(msg.value()[1:5], "big") == latest.schema_id
            got.append(deserializer(msg.value(), SerializationContext(topic, MessageField.VALUE)))
    finally:
        consumer.close()
    assert got == sent


def test_client_register_by_hand_lookup_and_get_by_id(registry):
    client = SchemaRegistryClient({"url": registry.url})
    subject = f"manual-{uuid.uuid4().hex[:8]}"
    schema_id = client.register_schema(subject, Schema(USER, "AVRO"))
    got = client.get_schema(schema_id)
    assert got.schema_type == "AVRO" and json.loads(got.schema_str) == json.loads(USER)
    registered = client.lookup_schema(subject, Schema(USER, "AVRO"))
    assert (registered.schema_id, registered.version, registered.subject) == (schema_id, 1, subject)
    assert client.get_versions(subject) == [1]
    assert client.get_version(subject, 1).schema_id == schema_id


def test_client_sees_confluent_error_codes(registry):
    client = SchemaRegistryClient({"url": registry.url})
    with pytest.raises(SchemaRegistryError) as e:
        client.get_latest_version(f"missing-{uuid.uuid4().hex[:8]}")
    assert e.value.http_status_code == 404 and e.value.error_code == 40401
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(f"bad-{uuid.uuid4().hex[:8]}", Schema('{"type": "nope"}', "AVRO"))
    assert e.value.http_status_code == 422 and e.value.error_code == 42201


def test_use_latest_version_serializer(registry):
    client = SchemaRegistryClient({"url": registry.url})
    topic = f"latest-{uuid.uuid4().hex[:8]}"
    schema_id = client.register_schema(f"{topic}-value", Schema(USER, "AVRO"))
    serializer = AvroSerializer(client, None, conf={"auto.register.schemas": False,
                                                    "use.latest.version": True})
    data = serializer({"name": "a", "favorite_number": 1}, SerializationContext(topic, MessageField.VALUE))
    assert int.from_bytes(data[1:5], "big") == schema_id
    assert AvroDeserializer(client)(data, SerializationContext(topic, MessageField.VALUE)) == \
        {"name": "a", "favorite_number": 1}


def test_client_references_and_referenced_by(registry):
    from confluent_kafka.schema_registry import SchemaReference
    client = SchemaRegistryClient({"url": registry.url})
    tag = uuid.uuid4().hex[:8]
    address = avro_record("Address", ("street", "string"))
    client.register_schema(f"address-{tag}", Schema(address, "AVRO"))
    person = json.dumps({"type": "record", "name": "Person",
                         "fields": [{"name": "home", "type": "Address"}]})
    refs = [SchemaReference("Address", f"address-{tag}", 1)]
    person_id = client.register_schema(f"person-{tag}", Schema(person, "AVRO", refs))
    got = client.get_schema(person_id)
    assert [(r.name, r.subject, r.version) for r in got.references] == [("Address", f"address-{tag}", 1)]
    status, users = registry.call("GET", f"/subjects/address-{tag}/versions/1/referencedby")
    assert (status, users) == (200, [person_id])
    # a serializer with the referencing schema writes records the deserializer reads back
    ctx = SerializationContext(f"person-{tag}", MessageField.VALUE)
    ser = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True,
                                            "subject.name.strategy": lambda *_: f"person-{tag}"})
    data = ser({"home": {"street": "Main"}}, ctx)
    assert AvroDeserializer(client)(data, ctx) == {"home": {"street": "Main"}}


def test_client_management_calls(registry):
    """The answers' shapes confluent-kafka's client reads: config, mode, compatibility,
    versions, deletes, ids' subjects and versions, types."""
    client = SchemaRegistryClient({"url": registry.url})
    subject = f"mgmt-{uuid.uuid4().hex[:8]}"
    v1 = avro_record("Mgmt", ("a", "int"))
    v2 = avro_record("Mgmt", ("a", "int"), ("b", "string"), b="")
    bad = avro_record("Mgmt", ("a", "string"))
    id1 = client.register_schema(subject, Schema(v1, "AVRO"))
    assert client.test_compatibility(subject, Schema(v2, "AVRO")) is True
    assert client.test_compatibility(subject, Schema(bad, "AVRO")) is False
    assert client.test_compatibility_all_versions(subject, Schema(v2, "AVRO")) is True
    client.set_compatibility(subject, "FULL")
    assert client.get_compatibility(subject) == "FULL"
    assert client.get_compatibility() == "BACKWARD"
    id2 = client.register_schema(subject, Schema(v2, "AVRO"))
    assert client.get_versions(subject) == [1, 2]
    assert client.get_subjects_by_schema_id(id1) == [subject]
    assert [(v.subject, v.version) for v in client.get_schema_versions(id2)] == [(subject, 2)]
    assert sorted(client.get_schema_types()) == ["AVRO", "JSON", "PROTOBUF"]
    assert client.update_mode(subject, "READONLY") == "READONLY"
    assert client.get_mode(subject) == "READONLY"
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, Schema(avro_record("Mgmt", ("a", "int"), ("c", "int"), c=0), "AVRO"))
    assert e.value.error_code == 42205
    client.delete_mode(subject)
    assert client.delete_version(subject, 2) == 2
    assert client.delete_version(subject, 2, permanent=True) == 2
    assert client.delete_subject(subject) == [1]
    assert client.delete_subject(subject, permanent=True) == [1]
    assert subject not in client.get_subjects()
