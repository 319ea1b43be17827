"""The record names the gateway's RECORD_NAME / TOPIC_RECORD_NAME strategies use, without
a broker, for the shapes the broker test does not pick: an Avro record given by reference,
a dotted Avro name beside a namespace, an ``error`` type, the schemas without a name, a
Protobuf file whose first type is an enum or a nested message, one without a package, and
JSON Schema titles. The names are those of Confluent's ``ParsedSchema.name()``."""
from __future__ import annotations

import json

import pytest
import trio

from kbroker.rest_proxy.subject_names import RecordNames, record_name, subject_name
from kbroker.schema_registry.types import parse

ADDRESS = json.dumps({"type": "record", "name": "Address", "namespace": "geo",
                      "fields": [{"name": "city", "type": "string"}]})


@pytest.mark.parametrize("text, refs, name", [
    (ADDRESS, None, "geo.Address"),
    ('{"type": "record", "name": "a.b.C", "namespace": "ignored", "fields": []}', None, "a.b.C"),
    ('{"type": "error", "name": "Oops", "fields": []}', None, "Oops"),
    ('"geo.Address"', {"geo.Address": ADDRESS}, "geo.Address"),
    ('{"type": "enum", "name": "Color", "namespace": "x", "symbols": ["RED"]}', None, None),
    ('{"type": "fixed", "name": "Id", "size": 4}', None, None),
    ('"string"', None, None),
    ('["null", "string"]', None, None),
    ('{"type": "array", "items": "int"}', None, None),
])
def test_avro_names(text, refs, name):
    assert record_name(parse("AVRO", text, refs)) == name


@pytest.mark.parametrize("text, name", [
    ('syntax = "proto3";\npackage shop.v1;\nenum Kind { A = 0; }\nmessage Order { Kind k = 1; }\n',
     "shop.v1.Order"),
    ('syntax = "proto3";\nmessage Outer { message Inner { int32 x = 1; } Inner i = 1; }\n'
     'message Second { int32 y = 1; }\n', "Outer"),
    ('syntax = "proto3";\npackage only.enums;\nenum Level { LOW = 0; HIGH = 1; }\n', "only.enums.Level"),
])
def test_protobuf_names(text, name):
    assert record_name(parse("PROTOBUF", text)) == name


@pytest.mark.parametrize("doc, name", [
    ({"title": "Person", "type": "object"}, "Person"),
    ({"type": "object", "properties": {"a": {"title": "Inner"}}}, None),
    ({"title": "", "type": "object"}, ""),
    (True, None),
])
def test_json_schema_names(doc, name):
    assert record_name(parse("JSON", json.dumps(doc))) == name


def test_subjects_by_strategy():
    assert subject_name("TOPIC_NAME", "orders", "key", None) == "orders-key"
    assert subject_name("TOPIC_NAME", "orders", "value", "shop.Order") == "orders-value"
    assert subject_name("RECORD_NAME", "orders", "value", "shop.Order") == "shop.Order"
    assert subject_name("TOPIC_RECORD_NAME", "orders", "key", "shop.Order") == "orders-shop.Order"
    assert subject_name("RECORD_NAME", "orders", "value", None) is None
    assert subject_name("TOPIC_RECORD_NAME", "orders", "value", None) is None


def test_names_are_remembered_and_failures_are_not():
    names = RecordNames()
    calls = []

    async def parse_address():
        calls.append(1)
        return parse("AVRO", ADDRESS)

    async def broken():
        raise ValueError("does not parse")

    async def main():
        assert await names.name_of(("id", 1), parse_address) == "geo.Address"
        assert await names.name_of(("id", 1), parse_address) == "geo.Address"
        assert len(calls) == 1
        with pytest.raises(ValueError):
            await names.name_of(("id", 2), broken)
        assert await names.name_of(("id", 2), parse_address) == "geo.Address"
        assert len(calls) == 2
    trio.run(main)
