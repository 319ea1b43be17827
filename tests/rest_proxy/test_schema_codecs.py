"""The gateway's Protobuf and JSON Schema codecs without a broker: message-index lists as
Confluent writes them (zig-zag varints, ``[0]`` as one zero byte), a schema with
references and well-known imports, a nested message named by its indexes, and JSON Schema
``$ref``s into a reference document. What the broker tests cannot pick cheaply."""
from __future__ import annotations

import struct

import pytest
from google.protobuf import descriptor_pool, timestamp_pb2
from google.protobuf.message_factory import GetMessageClass

from kbroker.rest_proxy.errors import RestError
from kbroker.rest_proxy.schema_formats import JsonSchemaCodec, ProtobufCodec, message_indexes
from kbroker.schema_registry.types import parse
from kbroker.schema_registry.types.protobuf_serialized import file_descriptors

MONEY = 'syntax = "proto3";\npackage common;\nmessage Money { int64 cents = 1; string currency = 2; }\n'
PAY = ('syntax = "proto3";\npackage pay;\nimport "common/money.proto";\n'
       'import "google/protobuf/timestamp.proto";\n'
       'message Payment {\n  common.Money amount = 1;\n  google.protobuf.Timestamp at = 2;\n'
       '  message Refund { string reason = 1; }\n}\nmessage Other { bool x = 1; }\n')


def test_message_index_lists():
    assert message_indexes(b"\x00", 0) == ([0], 1)
    # count 2 (zig-zag 4), indexes 1 (2) and 0 (0): the first message's... second nested
    assert message_indexes(b"\x04\x02\x00rest", 0) == ([1, 0], 3)
    assert message_indexes(bytes([2, 0xAC, 0x02]), 0) == ([150], 3)
    with pytest.raises(ValueError):
        message_indexes(b"\x04\x02", 0)


def test_protobuf_codec_with_references_and_nested_messages():
    schema = parse("PROTOBUF", PAY, {"common/money.proto": MONEY})
    codec = ProtobufCodec(7, schema)
    raw = codec.encode({"amount": {"cents": "125", "currency": "EUR"}, "at": "2024-01-01T00:00:00Z"}, "v")
    assert raw[:6] == b"\x00" + struct.pack(">I", 7) + b"\x00"
    assert codec.decode(raw, "v") == {"amount": {"cents": "125", "currency": "EUR"},
                                      "at": "2024-01-01T00:00:00Z"}
    # a record of the nested Payment.Refund (indexes [0, 0]) and of Other ([1]), as a
    # client's serializer writes them
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    for fd in file_descriptors(schema, name="pay.proto"):
        pool.Add(fd)
    Refund = GetMessageClass(pool.FindMessageTypeByName("pay.Payment.Refund"))
    Other = GetMessageClass(pool.FindMessageTypeByName("pay.Other"))
    head = b"\x00" + struct.pack(">I", 7)
    refund = head + b"\x04\x00\x00" + Refund(reason="late").SerializeToString()
    other = head + b"\x02\x02" + Other(x=True).SerializeToString()
    assert codec.decode(refund, "v") == {"reason": "late"}
    assert codec.decode(other, "v") == {"x": True}
    with pytest.raises(RestError) as e:
        codec.decode(head + b"\x02\x08", "v")                     # index 4: no such message
    assert e.value.code == 50002
    with pytest.raises(RestError) as e:
        codec.encode({"amount": {"cents": "not a number"}}, "v")
    assert (e.value.status, e.value.code) == (422, 42203)


def test_json_schema_codec_resolves_references():
    address = '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'
    person = ('{"type": "object", "properties": {"name": {"type": "string"}, '
              '"home": {"$ref": "address.json"}}, "required": ["name"]}')
    codec = JsonSchemaCodec(3, parse("JSON", person, {"address.json": address}))
    raw = codec.encode({"name": "ann", "home": {"city": "Oslo"}}, "v")
    assert raw == b"\x00" + struct.pack(">I", 3) + b'{"name":"ann","home":{"city":"Oslo"}}'
    assert codec.decode(raw, "v") == {"name": "ann", "home": {"city": "Oslo"}}
    with pytest.raises(RestError) as e:
        codec.encode({"name": "bob", "home": {}}, "v")             # the referenced rule
    assert (e.value.status, e.value.code) == (422, 42203) and "city" in e.value.message
    assert codec.encode(None, "v") is None
