"""Bad input never escapes as anything but ``SchemaError``: arbitrary text, deeply
nested JSON and mutated valid schemas, for every schema type (Hypothesis, bounded)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbroker.schema_registry.types import SCHEMA_TYPES, SchemaError, check_compatibility, parse

SEEDS = {
    "AVRO": '{"type":"record","name":"A","fields":[{"name":"a","type":["null","string"],"default":null}]}',
    "JSON": '{"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]}',
    "PROTOBUF": 'syntax = "proto3";\nmessage A { string a = 1; map<string, int32> m = 2; }\n',
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "name", "fields", "items", "values", "properties", "required",
                         "symbols", "size", "default", "anyOf", "$ref", "enum", "additionalProperties"]),
        inner, max_size=4),
    max_leaves=20,
)


def _parse_or_schema_error(schema_type: str, text: str):
    try:
        return parse(schema_type, text, {})
    except SchemaError as e:
        assert str(e)
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_type=st.sampled_from(SCHEMA_TYPES), text=st.text(max_size=60))
def test_arbitrary_text(schema_type, text):
    _parse_or_schema_error(schema_type, text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_type=st.sampled_from(["AVRO", "JSON"]), value=json_values)
def test_arbitrary_json(schema_type, value):
    s = _parse_or_schema_error(schema_type, json.dumps(value))
    if s is not None:
        # whatever parses can be compared with a valid schema of its type, both ways
        other = parse(schema_type, SEEDS[schema_type], {})
        for level in ("FULL", "BACKWARD_TRANSITIVE"):
            assert isinstance(check_compatibility(level, s, [other]), list)
            assert isinstance(check_compatibility(level, other, [s]), list)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_type=st.sampled_from(SCHEMA_TYPES), data=st.data())
def test_mutated_valid_schema(schema_type, data):
    seed = SEEDS[schema_type]
    i = data.draw(st.integers(0, len(seed)))
    j = data.draw(st.integers(i, len(seed)))
    insert = data.draw(st.text(max_size=5))
    _parse_or_schema_error(schema_type, seed[:i] + insert + seed[j:])


@pytest.mark.parametrize("schema_type, text", [
    ("AVRO", "[" * 5000 + "]" * 5000),
    ("JSON", '{"items":' * 3000 + "{}" + "}" * 3000),
    ("PROTOBUF", "message A {" * 2000 + "}" * 2000),
    ("AVRO", None),
])
def test_pathological_input(schema_type, text):
    with pytest.raises(SchemaError):
        parse(schema_type, text, {})


def test_checker_failure_is_an_incompatible_answer():
    # a nesting deep enough to exhaust the recursion of the pairwise walk: Confluent's
    # registry answers such a failure as incompatible with a reason, so do we
    depth = 400
    text = '"int"'
    for i in range(depth):
        text = '{"type":"array","items":' + text + "}"
    deep_int = parse("AVRO", text, {})
    deep_long = parse("AVRO", text.replace('"int"', '"long"'), {})
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        msgs = check_compatibility("BACKWARD", deep_int, [deep_long])
    finally:
        sys.setrecursionlimit(limit)
    assert msgs[0].startswith("Unexpected exception during compatibility check: RecursionError")
    assert check_compatibility("BACKWARD", deep_long, [deep_int]) == []
