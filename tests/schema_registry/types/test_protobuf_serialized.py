"""``types/protobuf_serialized.py``: .proto text to the FileDescriptorProto protoc would
write for it (what ``format=serialized`` answers and the REST gateway builds its message
classes from), checked against descriptors built by hand and through a real
``DescriptorPool`` and the ``protobuf`` package's JSON mapping."""
from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, timestamp_pb2
from google.protobuf.message_factory import GetMessageClass

from kbroker.schema_registry.types import SchemaError, parse
from kbroker.schema_registry.types.protobuf_descriptor import to_proto_text
from kbroker.schema_registry.types.protobuf_serialized import (
    file_descriptor, file_descriptors, json_name)

from ..protobuf_fixtures import ORDERS_TEXT, orders_descriptor


def _by_name(fd):
    """The descriptor with nested types in name order (protoc puts a map's entry where
    the map is declared, the hand-built fixture after the nested messages)."""
    fd = descriptor_pb2.FileDescriptorProto.FromString(fd.SerializeToString())
    for m in fd.message_type:
        nested = sorted(m.nested_type, key=lambda n: n.name)
        del m.nested_type[:]
        m.nested_type.extend(nested)
    return fd


def test_the_orders_file_gives_the_hand_built_descriptor():
    expected = orders_descriptor("shop/orders.proto")
    for m in [expected.message_type[0], *expected.message_type[0].nested_type]:
        for f in m.field:
            f.json_name = json_name(f.name)
    got = file_descriptor(parse("PROTOBUF", ORDERS_TEXT), name="shop/orders.proto")
    assert _by_name(got) == _by_name(expected)
    # the map entry follows protoc's naming and sits where the map is declared
    assert [n.name for n in got.message_type[0].nested_type] == ["TagsEntry", "Line"]


def test_descriptor_text_descriptor_round_trip():
    text = to_proto_text(orders_descriptor())
    again = file_descriptor(parse("PROTOBUF", text), name="shop/orders.proto")
    assert again.message_type[0].field[3].type_name == ".shop.v1.Order.TagsEntry"
    assert to_proto_text(again) == text


def test_references_come_before_their_importer_and_load_in_a_pool():
    money = 'syntax = "proto3";\npackage common;\nmessage Money { int64 cents = 1; string currency = 2; }\n'
    text = ('syntax = "proto2";\npackage pay;\nimport "common/money.proto";\n'
            'message Payment {\n  required string payer = 1;\n  optional common.Money amount = 2;\n'
            '  optional int32 tries = 3 [default = 3];\n  repeated int32 codes = 4 [packed = true];\n'
            '  enum Kind { option allow_alias = true; A = 0; B = 1; C = 1; }\n'
            '  optional Kind kind = 5 [default = B];\n  extensions 100 to max;\n  reserved 7, 9 to 11;\n}\n')
    files = file_descriptors(parse("PROTOBUF", text, {"common/money.proto": money}), name="pay.proto")
    assert [f.name for f in files] == ["common/money.proto", "pay.proto"]
    pay = files[1]
    assert list(pay.dependency) == ["common/money.proto"] and not pay.syntax
    m = pay.message_type[0]
    assert [f.label for f in m.field][:2] == [2, 1]
    assert m.field[1].type_name == ".common.Money" and m.field[2].default_value == "3"
    assert m.field[3].options.packed and m.enum_type[0].options.allow_alias
    assert [(r.start, r.end) for r in m.extension_range] == [(100, 536870912)]
    assert [(r.start, r.end) for r in m.reserved_range] == [(7, 8), (9, 12)]
    pool = descriptor_pool.DescriptorPool()
    for f in files:
        pool.Add(f)
    Payment = GetMessageClass(pool.FindMessageTypeByName("pay.Payment"))
    p = json_format.ParseDict({"payer": "ann", "amount": {"cents": "5", "currency": "EUR"}}, Payment())
    assert p.tries == 3 and p.kind == 1 and p.amount.cents == 5


def test_well_known_imports_resolve_in_a_pool_holding_them():
    fd = file_descriptor(parse("PROTOBUF", ORDERS_TEXT))
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fd)
    Order = GetMessageClass(pool.FindMessageTypeByName("shop.v1.Order"))
    o = json_format.ParseDict({"orderId": "x", "placedAt": "2024-01-01T00:00:00Z",
                               "tags": {"a": "b"}, "voucher": "7"}, Order())
    assert o.placed_at.seconds == 1704067200 and o.WhichOneof("payment") == "voucher"


def test_groups_are_refused():
    schema = parse("PROTOBUF", 'syntax = "proto2";\nmessage M {\n  optional group G = 1 { optional int32 a = 2; }\n}\n')
    with pytest.raises(SchemaError):
        file_descriptor(schema)
