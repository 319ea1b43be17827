"""PROTOBUF schemas given as a base64 ``FileDescriptorProto`` (what confluent-kafka's
ProtobufSerializer registers): turned into .proto text, then parsed, canonicalised and
compared like a text schema."""
from __future__ import annotations

import base64

import pytest
from google.protobuf import descriptor_pb2

from kbroker.schema_registry.types import SchemaError, check_compatibility, parse
from kbroker.schema_registry.types.protobuf_descriptor import decode, to_proto_text

from ..protobuf_fixtures import ORDERS_TEXT, F, b64, orders_descriptor

EXPECTED = """syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
option java_package = "com.example.shop";
option java_multiple_files = true;
message Order {
  string order_id = 1;
  int32 quantity = 2;
  repeated .shop.v1.Order.Line lines = 3;
  map<string, string> tags = 4;
  .shop.v1.Status status = 5;
  oneof payment {
    string card = 6;
    int64 voucher = 7;
  }
  .google.protobuf.Timestamp placed_at = 8;
  optional string note = 9;
  message Line {
    string sku = 1;
    double price = 2;
  }
  reserved 10 to 11;
  reserved "legacy";
}
enum Status {
  STATUS_UNKNOWN = 0;
  STATUS_PAID = 1;
}
"""


def test_descriptor_to_proto_text():
    # map entry folded into map<>, oneof grouped, proto3 optional's synthetic oneof
    # dropped, json_name left out where it is protoc's default, reserved end exclusive
    assert to_proto_text(orders_descriptor()) == EXPECTED


def test_base64_schema_parses_as_its_text_form():
    from_b64 = parse("PROTOBUF", b64(orders_descriptor()))
    from_text = parse("PROTOBUF", ORDERS_TEXT)
    # stored and answered in the .proto text form, as Confluent's registry does
    assert from_b64.canonical() == EXPECTED.rstrip("\n")
    # the text spells types short, the descriptor in full: normalised they are the same
    assert from_b64.normalized() == from_text.normalized()
    assert check_compatibility("FULL_TRANSITIVE", from_b64, [from_text]) == []


def test_base64_new_version_checked_against_text_version():
    old = parse("PROTOBUF", ORDERS_TEXT)
    fd = orders_descriptor()
    fd.message_type[0].field[1].type = F.TYPE_STRING  # quantity: int32 -> string
    messages = check_compatibility("BACKWARD", parse("PROTOBUF", b64(fd)), [old])
    assert 'FIELD_SCALAR_KIND_CHANGED' in messages[0] and "#/Order/2" in messages[0]


def test_proto2_labels_defaults_and_json_name():
    fd = descriptor_pb2.FileDescriptorProto(name="p2.proto", package="p2")
    m = fd.message_type.add(name="Legacy")
    m.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_REQUIRED)
    m.field.add(name="label", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL,
                default_value="none", json_name="lbl")
    m.field.add(name="ids", number=3, type=F.TYPE_INT32, label=F.LABEL_REPEATED).options.packed = True
    m.extension_range.add(start=100, end=536870912)
    text = to_proto_text(fd)
    assert 'syntax = "proto2";' in text
    assert "required int64 id = 1;" in text
    assert 'optional string label = 2 [default = "none", json_name = "lbl"];' in text
    assert "repeated int32 ids = 3 [packed = true];" in text
    assert "extensions 100 to max;" in text
    assert parse("PROTOBUF", b64(fd)).canonical().startswith('syntax = "proto2";')


def test_base64_reference_is_converted_too():
    dep = descriptor_pb2.FileDescriptorProto(name="common/money.proto", package="common",
                                             syntax="proto3")
    money = dep.message_type.add(name="Money")
    money.field.add(name="cents", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    main = descriptor_pb2.FileDescriptorProto(name="pay.proto", package="pay", syntax="proto3",
                                              dependency=["common/money.proto"])
    pay = main.message_type.add(name="Payment")
    pay.field.add(name="amount", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                  type_name=".common.Money")
    schema = parse("PROTOBUF", b64(main), {"common/money.proto": b64(dep)})
    assert "common.Money" in schema.types
    with pytest.raises(SchemaError, match="unknown import"):
        parse("PROTOBUF", b64(main))


def test_not_a_descriptor_stays_text_and_bad_input_is_a_schema_error():
    assert decode(ORDERS_TEXT) is None
    assert decode("bm90IGEgZGVzY3JpcHRvcg==") is None  # base64, not a descriptor
    with pytest.raises(SchemaError):
        parse("PROTOBUF", "bm90IGEgZGVzY3JpcHRvcg==")
    editions = descriptor_pb2.FileDescriptorProto(name="e.proto", syntax="editions")
    editions.message_type.add(name="M")
    with pytest.raises(SchemaError, match="editions"):
        parse("PROTOBUF", base64.b64encode(editions.SerializeToString()).decode())


def test_groups_are_refused_and_bytes_defaults_kept_escaped():
    fd = descriptor_pb2.FileDescriptorProto(name="g.proto", package="g")
    m = fd.message_type.add(name="M")
    m.field.add(name="raw", number=1, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL,
                default_value="a\\001b")
    assert 'optional bytes raw = 1 [default = "a\\001b"];' in to_proto_text(fd)
    m.field.add(name="grp", number=2, type=F.TYPE_GROUP, label=F.LABEL_OPTIONAL,
                type_name=".g.M.Grp")
    m.nested_type.add(name="Grp")
    with pytest.raises(SchemaError, match="groups"):
        parse("PROTOBUF", b64(fd))
