"""confluent-kafka's ProtobufSerializer and ProtobufDeserializer against a real
``kbroker serve`` with the registry: the serializer registers its file (and each
imported file, as a reference) as a base64 ``FileDescriptorProto``; kbroker stores and
answers the ``.proto`` text form, as Confluent's registry does. The message classes are
made at test time from descriptors (tests/schema_registry/protobuf_fixtures.py).

The deserializers run with a registry client: they ask for the writer schema (and each
reference) with ``format=serialized``, which kbroker answers with the base64
``FileDescriptorProto`` of the stored text, as Confluent's registry does."""
from __future__ import annotations

import base64
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
from google.protobuf.message_factory import GetMessageClass

from .protobuf_fixtures import ORDERS_TEXT, F, b64, order_class, orders_descriptor


def consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < count:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_protobuf_round_trip_with_automatic_registration(registry):
    Order = order_class()
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": registry.url})
    serializer = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    sent = []
    for i in range(4):
        o = Order(order_id=f"o-{i}", quantity=i, tags={"k": str(i)}, card=f"c{i}")
        o.lines.add(sku=f"sku-{i}", price=1.5 * i)
        o.placed_at.seconds = 1_700_000_000 + i
        sent.append(o)
    producer = Producer({"bootstrap.servers": registry.broker.bootstrap_servers})
    for o in sent:
        producer.produce(topic, value=serializer(o, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0

    latest = client.get_latest_version(f"{topic}-value")
    assert latest.version == 1 and latest.schema.schema_type == "PROTOBUF"
    # registered as a descriptor, answered as .proto text (the well-known import is no
    # reference: the serializer skips it and the registry knows it)
    text = latest.schema.schema_str
    assert text.startswith('syntax = "proto3";') and "package shop.v1;" in text
    assert "map<string, string> tags = 4;" in text and "oneof payment {" in text
    assert latest.schema.references == []
    # a second serializer finds the same schema (lookup of the base64 form) and id
    again = ProtobufSerializer(Order, SchemaRegistryClient({"url": registry.url}),
                               {"use.deprecated.format": False})
    payload = again(sent[0], SerializationContext(topic, MessageField.VALUE))
    assert int.from_bytes(payload[1:5], "big") == latest.schema_id

    deserializer = ProtobufDeserializer(Order, {"use.deprecated.format": False},
                                        SchemaRegistryClient({"url": registry.url}))
    got = []
    for value in consume(registry.broker.bootstrap_servers, topic, len(sent)):
        assert value[0] == 0 and int.from_bytes(value[1:5], "big") == latest.schema_id
        got.append(deserializer(value, SerializationContext(topic, MessageField.VALUE)))
    assert got == sent


def test_protobuf_import_registered_as_reference(registry):
    money = descriptor_pb2.FileDescriptorProto(name="common/money.proto", package="common",
                                               syntax="proto3")
    m = money.message_type.add(name="Money")
    m.field.add(name="cents", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m.field.add(name="currency", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pay = descriptor_pb2.FileDescriptorProto(name="pay/payment.proto", package="pay",
                                             syntax="proto3", dependency=["common/money.proto"])
    p = pay.message_type.add(name="Payment")
    p.field.add(name="payer", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    p.field.add(name="amount", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                type_name=".common.Money")
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(money)
    pool.Add(pay)
    Payment = GetMessageClass(pool.FindMessageTypeByName("pay.Payment"))

    topic = f"payments-{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": registry.url})
    serializer = ProtobufSerializer(Payment, client, {"use.deprecated.format": False})
    sent = Payment(payer="ann")
    sent.amount.cents = 1250
    sent.amount.currency = "EUR"
    value = serializer(sent, SerializationContext(topic, MessageField.VALUE))

    # the import went in first under its own subject (the reference strategy's default:
    # the file name), and the message's schema refers to it
    ref = client.get_latest_version("common/money.proto")
    assert "message Money {" in ref.schema.schema_str
    latest = client.get_latest_version(f"{topic}-value")
    assert [(r.name, r.subject, r.version) for r in latest.schema.references] == [
        ("common/money.proto", "common/money.proto", ref.version)]
    assert 'import "common/money.proto";' in latest.schema.schema_str
    assert int.from_bytes(value[1:5], "big") == latest.schema_id

    producer = Producer({"bootstrap.servers": registry.broker.bootstrap_servers})
    producer.produce(topic, value=value)
    assert producer.flush(30) == 0
    [raw] = consume(registry.broker.bootstrap_servers, topic, 1)
    got = ProtobufDeserializer(Payment, {"use.deprecated.format": False},
                               SchemaRegistryClient({"url": registry.url}))(
        raw, SerializationContext(topic, MessageField.VALUE))
    assert got == sent


def test_format_serialized_answers_the_file_descriptor(registry, subject):
    """``?format=serialized`` on a schema registered as .proto text answers the base64
    FileDescriptorProto of that file (what a deserializer with a registry client asks
    for); without it, and for other types, the stored text."""
    status, body = registry.call("POST", f"/subjects/{subject}/versions",
                                 {"schema": ORDERS_TEXT, "schemaType": "PROTOBUF"})
    assert status == 200, body
    sid = body["id"]
    status, plain = registry.call("GET", f"/schemas/ids/{sid}")
    assert status == 200 and plain["schema"].startswith("syntax")
    for path in (f"/schemas/ids/{sid}?format=serialized",
                 f"/subjects/{subject}/versions/latest?format=serialized"):
        status, got = registry.call("GET", path)
        assert status == 200 and got["schemaType"] == "PROTOBUF", got
        fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(got["schema"]))
        assert fd.package == "shop.v1" and list(fd.dependency) == ["google/protobuf/timestamp.proto"]
        assert [m.name for m in fd.message_type] == ["Order"]
        # a pool takes it, and its Order reads what the hand-built descriptor's writes
        Order = order_class(fd)
        Reference = order_class()
        sent = Reference(order_id="o", quantity=2, tags={"a": "b"}, note="n")
        assert Order.FromString(sent.SerializeToString()).note == "n"
    for path in (f"/schemas/ids/{sid}/schema?format=serialized",
                 f"/subjects/{subject}/versions/1/schema?format=serialized"):
        status, raw = registry.call("GET", path)
        assert status == 200
        assert descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(raw)).package == "shop.v1"
    status, avro = registry.call("POST", f"/subjects/{subject}-avro/versions", {"schema": '"string"'})
    assert status == 200
    assert registry.call("GET", f"/schemas/ids/{avro['id']}?format=serialized")[1]["schema"] == '"string"'


def test_descriptor_the_registry_cannot_take_is_a_42201_and_nothing_is_stored(registry, subject):
    fd = descriptor_pb2.FileDescriptorProto(name="g.proto", package="g")
    m = fd.message_type.add(name="M")
    m.field.add(name="grp", number=1, type=F.TYPE_GROUP, label=F.LABEL_OPTIONAL,
                type_name=".g.M.Grp")
    m.nested_type.add(name="Grp")
    status, body = registry.call("POST", f"/subjects/{subject}/versions",
                                 {"schema": b64(fd), "schemaType": "PROTOBUF"})
    assert status == 422 and body["error_code"] == 42201 and "groups" in body["message"]
    assert registry.call("GET", f"/subjects/{subject}/versions")[0] == 404
    # the broker goes on serving: the same subject takes a good descriptor
    status, body = registry.call("POST", f"/subjects/{subject}/versions",
                                 {"schema": b64(orders_descriptor()), "schemaType": "PROTOBUF"})
    assert status == 200 and body["id"] > 0
