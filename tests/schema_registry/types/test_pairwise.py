"""Each type's rules module and its pairwise rule ``can_read(reader, writer)`` on its own (the levels
are built on it): data written with the writer readable by the reader, or the reasons,
with the reader and writer named as the caller asks."""

from __future__ import annotations

import json
import re

import pytest

from kbroker.schema_registry.types import avro_resolution, json_diff, parse, protobuf_diff

CASES = [
    # (module, type, wider, narrower): the wider reads the narrower's data, not the reverse
    (avro_resolution, "AVRO", '{"type":"record","name":"A","fields":[{"name":"x","type":"long"}]}',
     '{"type":"record","name":"A","fields":[{"name":"x","type":"int"}]}'),
    (json_diff, "JSON", json.dumps({"type": "number"}), json.dumps({"type": "integer"})),
    (protobuf_diff, "PROTOBUF", 'syntax = "proto3";\nmessage A { int32 x = 1; }\nmessage B { int32 y = 1; }',
     'syntax = "proto3";\nmessage A { int32 x = 1; }'),
]


@pytest.mark.parametrize("module, schema_type, wider, narrower", CASES, ids=[c[1] for c in CASES])
def test_can_read_one_way(module, schema_type, wider, narrower):
    reader, writer = parse(schema_type, wider), parse(schema_type, narrower)
    assert module.can_read(reader, writer) == []
    reasons = module.can_read(writer, reader, "R", "W")
    assert reasons and all(isinstance(r, str) for r in reasons)
    assert re.search(r"\bR\b", reasons[0]) and re.search(r"\bW\b", reasons[0])


@pytest.mark.parametrize("module, schema_type, wider, narrower", CASES, ids=[c[1] for c in CASES])
def test_can_read_itself(module, schema_type, wider, narrower):
    for text in (wider, narrower):
        s = parse(schema_type, text)
        assert module.can_read(s, s) == []
