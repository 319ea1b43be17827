"""A ``FileDescriptorProto`` built in code (no .proto compiler, no generated code): the
``shop.v1`` order file the Protobuf descriptor tests share, and the message classes the
``protobuf`` package makes from it."""
from __future__ import annotations

import base64

from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
from google.protobuf.message_factory import GetMessageClass

F = descriptor_pb2.FieldDescriptorProto

# the same file as .proto text, written by hand
ORDERS_TEXT = """syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
option java_package = "com.example.shop";
option java_multiple_files = true;
message Order {
  string order_id = 1;
  int32 quantity = 2;
  repeated Line lines = 3;
  map<string, string> tags = 4;
  Status status = 5;
  oneof payment {
    string card = 6;
    int64 voucher = 7;
  }
  google.protobuf.Timestamp placed_at = 8;
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


def orders_descriptor(name: str = "shop/orders.proto") -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name=name, package="shop.v1", syntax="proto3",
                                            dependency=["google/protobuf/timestamp.proto"])
    fd.options.java_package = "com.example.shop"
    fd.options.java_multiple_files = True
    m = fd.message_type.add(name="Order")
    add = m.field.add
    add(name="order_id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="orderId")
    add(name="quantity", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    add(name="lines", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
        type_name=".shop.v1.Order.Line")
    add(name="tags", number=4, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
        type_name=".shop.v1.Order.TagsEntry")
    add(name="status", number=5, type=F.TYPE_ENUM, label=F.LABEL_OPTIONAL,
        type_name=".shop.v1.Status")
    add(name="card", number=6, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0)
    add(name="voucher", number=7, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL, oneof_index=0)
    add(name="placed_at", number=8, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
        type_name=".google.protobuf.Timestamp")
    add(name="note", number=9, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=1,
        proto3_optional=True)
    m.oneof_decl.add(name="payment")
    m.oneof_decl.add(name="_note")
    m.reserved_range.add(start=10, end=12)
    m.reserved_name.append("legacy")
    line = m.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    line.field.add(name="price", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    entry = m.nested_type.add(name="TagsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    e = fd.enum_type.add(name="Status")
    e.value.add(name="STATUS_UNKNOWN", number=0)
    e.value.add(name="STATUS_PAID", number=1)
    return fd


def b64(fd: descriptor_pb2.FileDescriptorProto) -> str:
    """The form confluent-kafka's ProtobufSerializer registers."""
    return base64.standard_b64encode(fd.SerializeToString()).decode("ascii")


def order_class(fd: descriptor_pb2.FileDescriptorProto | None = None):
    """The ``shop.v1.Order`` message class, from a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fd or orders_descriptor())
    return GetMessageClass(pool.FindMessageTypeByName("shop.v1.Order"))
