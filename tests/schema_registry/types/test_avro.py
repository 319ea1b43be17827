"""AVRO: parsing, canonical forms, fingerprints, and the compatibility rules row by row.

Each compatibility row names a rule, the level, the old and new schema, what Confluent's
registry answers for that pair (compatible, or the errorType and path of each reason) and
where that answer comes from:

- ``CSR AvroCompatibilityTest`` — confluentinc/schema-registry,
  core/src/test/java/io/confluent/kafka/schemaregistry/avro/AvroCompatibilityTest.java
  (schemas 1..8 below are its schemaString1..8); Karapace's
  tests/unit/test_avro_compatibility.py runs the same pairs.
- ``Avro SchemaCompatibility`` — the Avro Java library's checker that Confluent's
  ``AvroSchema.isBackwardCompatible`` calls (apache/avro,
  lang/java/avro/src/main/java/org/apache/avro/SchemaCompatibility.java), and the Avro
  specification's "Schema Resolution" section.
- ``CSR Difference`` — the message wording, confluentinc/schema-registry
  client/.../avro/Difference.java; ``CSR SchemaValidatorBuilder`` and
  ``AbstractSchemaRegistry.isCompatibleWithPrevious`` — the order and trailer lines.
- ``observed`` — registry answers quoted in public write-ups (the exact message text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from kbroker.schema_registry.types import SchemaError, check_compatibility, parse
from kbroker.schema_registry.types import avro


def rec(*fields, name="myrecord", **extra) -> str:
    return json.dumps({"type": "record", "name": name, **extra, "fields": list(fields)})


def f(name, type_, **extra):
    return {"name": name, "type": type_, **extra}


def enum(symbols, name="E", **extra):
    return {"type": "enum", "name": name, "symbols": symbols, **extra}


# AvroCompatibilityTest.java's schemas
S1 = rec(f("f1", "string"))
S2 = rec(f("f1", "string"), f("f2", "string", default="foo"))
S3 = rec(f("f1", "string"), f("f2", "string"))
S4 = rec(f("f1_new", "string", aliases=["f1"]))
S6 = rec(f("f1", ["null", "string"], doc="doc of f1"))
S7 = rec(f("f1", ["null", "string", "int"], doc="doc of f1"))
S8 = rec(f("f1", "string"), f("f2", "string", default="foo"), f("f3", "string", default="bar"))

CSR = "CSR AvroCompatibilityTest"
AVRO = "Avro SchemaCompatibility"


@dataclass
class Row:
    rule: str
    level: str
    old: list[str]  # existing schemas, oldest..newest
    new: str
    expect: list[tuple[str, str]]  # (errorType, path) of each reason; [] = compatible
    source: str
    info: list[str] = field(default_factory=list)  # additionalInfo, when the row checks it


def one(t):
    return rec(f("f", t))


ROWS = [
    # record fields and defaults
    Row("add field with default", "BACKWARD", [S1], S2, [], CSR),
    Row("add field without default", "BACKWARD", [S1], S3,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")], CSR, ["f2"]),
    Row("add field without default, forward", "FORWARD", [S1], S3, [], CSR),
    Row("remove field with default, forward", "FORWARD", [S2], S1, [], CSR),
    Row("remove field without default, forward", "FORWARD", [S3], S1,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")], "observed + " + AVRO, ["f2"]),
    Row("remove field without default, backward", "BACKWARD", [S3], S1, [], AVRO),
    Row("add field with default, full", "FULL", [S1], S2, [], CSR),
    Row("add field without default, full", "FULL", [S1], S3,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")], AVRO),
    # aliases
    Row("rename field with alias", "BACKWARD", [S1], S4, [], CSR),
    Row("rename field without alias", "BACKWARD", [S1], rec(f("f1_new", "string")),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")], AVRO, ["f1_new"]),
    # unions
    Row("field type to a union containing it", "BACKWARD", [S1], S6, [], CSR),
    Row("union to one of its branches", "BACKWARD", [S6], S1,
        [("TYPE_MISMATCH", "/fields/0/type/0")], CSR,
        ["reader type: STRING not compatible with writer type: NULL"]),
    Row("add a union branch", "BACKWARD", [S6], S7, [], CSR),
    Row("remove a union branch", "BACKWARD", [S7], S6,
        [("MISSING_UNION_BRANCH", "/fields/0/type/2")], CSR,
        ["reader union lacking writer type: INT"]),
    Row("writer type not in the reader union", "BACKWARD", [one("int")], one(["null", "string"]),
        [("MISSING_UNION_BRANCH", "/fields/0/type")], AVRO,
        ["reader union lacking writer type: INT"]),
    Row("reader union branch promotes the writer type", "BACKWARD", [one("int")],
        one(["null", "long"]), [], AVRO),
    # promotions
    *[
        Row(f"promote {w} to {r}", "BACKWARD", [one(w)], one(r), [], AVRO)
        for w, r in [("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
                     ("long", "double"), ("float", "double"), ("string", "bytes"),
                     ("bytes", "string")]
    ],
    *[
        Row(f"narrow {w} to {r}", "BACKWARD", [one(w)], one(r),
            [("TYPE_MISMATCH", "/fields/0/type")], AVRO,
            [f"reader type: {r.upper()} not compatible with writer type: {w.upper()}"])
        for w, r in [("long", "int"), ("double", "float"), ("float", "long"), ("int", "string"),
                     ("string", "int"), ("boolean", "int"), ("null", "string")]
    ],
    Row("long to int is forward compatible", "FORWARD", [one("long")], one("int"), [], AVRO),
    Row("int to long is not forward compatible", "FORWARD", [one("int")], one("long"),
        [("TYPE_MISMATCH", "/fields/0/type")], AVRO,
        ["reader type: INT not compatible with writer type: LONG"]),
    Row("int to long is not fully compatible", "FULL", [one("int")], one("long"),
        [("TYPE_MISMATCH", "/fields/0/type")], AVRO),
    Row("string and bytes are fully compatible", "FULL", [one("string")], one("bytes"), [], AVRO),
    # enums
    Row("add an enum symbol", "BACKWARD", [one(enum(["A", "B"]))], one(enum(["A", "B", "C"])),
        [], AVRO),
    Row("remove an enum symbol", "BACKWARD", [one(enum(["A", "B"]))], one(enum(["A"])),
        [("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols")], "observed + " + AVRO, ["[B]"]),
    Row("add an enum symbol, forward", "FORWARD", [one(enum(["A"]))], one(enum(["A", "B"])),
        [("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols")], "observed + " + AVRO, ["[B]"]),
    Row("remove a symbol of an enum with a default", "BACKWARD",
        [one(enum(["A", "B"], default="A"))], one(enum(["A"], default="A")), [],
        AVRO + " (reader enum default, Avro 1.9+)"),
    Row("rename an enum", "BACKWARD", [one(enum(["A"], name="E"))], one(enum(["A"], name="F")),
        [("NAME_MISMATCH", "/fields/0/type/name")], AVRO, ["expected: E"]),
    # named types
    Row("rename a record", "BACKWARD", [rec(f("a", "int"), name="A")], rec(f("a", "int"), name="B"),
        [("NAME_MISMATCH", "/name")], "observed + " + AVRO, ["expected: A"]),
    Row("rename a record with an alias", "BACKWARD", [rec(f("a", "int"), name="A")],
        rec(f("a", "int"), name="B", aliases=["A"]), [], AVRO),
    Row("change only the namespace", "BACKWARD", [rec(f("a", "int"), name="A", namespace="x")],
        rec(f("a", "int"), name="A", namespace="y"), [], AVRO + " (names compared unqualified)"),
    Row("fixed of the same size", "BACKWARD",
        [one({"type": "fixed", "name": "X", "size": 16})],
        one({"type": "fixed", "name": "X", "size": 16}), [], AVRO),
    Row("fixed size changed", "BACKWARD", [one({"type": "fixed", "name": "X", "size": 16})],
        one({"type": "fixed", "name": "X", "size": 8}),
        [("FIXED_SIZE_MISMATCH", "/fields/0/type/size")], AVRO, ["expected: 16, found: 8"]),
    Row("record to enum", "BACKWARD", [one(json.loads(rec(f("a", "int"), name="R")))],
        one(enum(["A"], name="R")), [("TYPE_MISMATCH", "/fields/0/type")], "observed + " + AVRO,
        ["reader type: ENUM not compatible with writer type: RECORD"]),
    # arrays and maps, recursively
    Row("array items promoted", "BACKWARD", [one({"type": "array", "items": "int"})],
        one({"type": "array", "items": "long"}), [], AVRO),
    Row("array items narrowed", "BACKWARD", [one({"type": "array", "items": "long"})],
        one({"type": "array", "items": "int"}), [("TYPE_MISMATCH", "/fields/0/type/items")], AVRO),
    Row("map values promoted", "BACKWARD", [one({"type": "map", "values": "float"})],
        one({"type": "map", "values": "double"}), [], AVRO),
    Row("map values narrowed", "BACKWARD", [one({"type": "map", "values": "string"})],
        one({"type": "map", "values": "int"}), [("TYPE_MISMATCH", "/fields/0/type/values")], AVRO),
    Row("array to map", "BACKWARD", [one({"type": "array", "items": "int"})],
        one({"type": "map", "values": "int"}), [("TYPE_MISMATCH", "/fields/0/type")], AVRO),
    Row("nested record gains a field with default", "BACKWARD",
        [one(json.loads(rec(f("a", "int"), name="In")))],
        one(json.loads(rec(f("a", "int"), f("b", "int", default=0), name="In"))), [], AVRO),
    Row("nested record gains a field without default", "BACKWARD",
        [one(json.loads(rec(f("a", "int"), name="In")))],
        one(json.loads(rec(f("a", "int"), f("b", "int"), name="In"))),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0/type/fields/1")], AVRO),
    Row("recursive type gains a field with default", "BACKWARD",
        [rec(f("v", "int"), f("next", ["null", "Node"]), name="Node")],
        rec(f("v", "int"), f("next", ["null", "Node"]), f("w", "int", default=1), name="Node"),
        [], AVRO + " (recursion)"),
    Row("recursive type gains a field without default", "BACKWARD",
        [rec(f("v", "int"), f("next", ["null", "Node"]), name="Node")],
        rec(f("v", "int"), f("next", ["null", "Node"]), f("w", "int"), name="Node"),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/2")], AVRO + " (recursion)"),
    # top-level primitives
    Row("primitive promoted at the top", "BACKWARD", ['"int"'], '"long"', [], AVRO),
    Row("primitive changed at the top", "BACKWARD", ['"int"'], '"boolean"',
        [("TYPE_MISMATCH", "/")], "observed",
        ["reader type: BOOLEAN not compatible with writer type: INT"]),
    # levels: which existing schemas are checked
    Row("BACKWARD checks the newest only", "BACKWARD", [S1, S2], S3, [], CSR),
    Row("BACKWARD_TRANSITIVE checks all", "BACKWARD_TRANSITIVE", [S1, S2], S3,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")], CSR),
    Row("BACKWARD_TRANSITIVE, fields with defaults added one by one", "BACKWARD_TRANSITIVE",
        [S1, S2], S8, [], CSR),
    Row("FORWARD checks the newest only", "FORWARD", [S3, S2], S1, [], CSR),
    Row("FORWARD_TRANSITIVE checks all", "FORWARD_TRANSITIVE", [S3, S2], S1,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")], CSR),
    Row("FORWARD_TRANSITIVE, fields with defaults removed one by one", "FORWARD_TRANSITIVE",
        [S8, S2], S1, [], CSR),
    Row("FULL checks the newest only (added)", "FULL", [S1, S2], S3, [], CSR),
    Row("FULL checks the newest only (removed)", "FULL", [S3, S2], S1, [], CSR),
    Row("FULL_TRANSITIVE adding without default", "FULL_TRANSITIVE", [S1, S2], S3,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")], CSR),
    Row("FULL_TRANSITIVE removing without default", "FULL_TRANSITIVE", [S3, S2], S1,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")], CSR),
    Row("FULL_TRANSITIVE fields with defaults", "FULL_TRANSITIVE", [S1, S2], S8, [], CSR),
    Row("NONE accepts anything", "NONE", [one("int")], one("string"), [], "Confluent docs"),
]


def _reasons(messages: list[str]) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        if m.startswith("{errorType:'"):
            kind = m[len("{errorType:'"):m.index("'", len("{errorType:'"))]
            path = m.split("path '", 1)[1].split("'", 1)[0]
            out.append((kind, path))
    return out


@pytest.mark.parametrize("row", ROWS, ids=[r.rule for r in ROWS])
def test_compatibility_rule(row: Row):
    new = parse("AVRO", row.new, {})
    old = [parse("AVRO", s, {}) for s in row.old]
    messages = check_compatibility(row.level, new, old)
    assert _reasons(messages) == row.expect, messages
    assert bool(messages) == bool(row.expect)
    for info in row.info:
        assert any(f"additionalInfo:'{info}'" in m for m in messages), messages


def test_every_rule_has_both_answers():
    """The table holds compatible and incompatible rows for every error type."""
    kinds = {k for r in ROWS for k, _ in r.expect}
    assert kinds == {
        "READER_FIELD_MISSING_DEFAULT_VALUE", "TYPE_MISMATCH", "MISSING_UNION_BRANCH",
        "MISSING_ENUM_SYMBOLS", "NAME_MISMATCH", "FIXED_SIZE_MISMATCH",
    }
    assert any(not r.expect for r in ROWS)


# --- the message text and the lines around it (CSR Difference, SchemaValidatorBuilder) ----


def test_backward_message_text_and_trailer():
    old = parse("AVRO", S1, {})
    msgs = check_compatibility("BACKWARD", parse("AVRO", S3, {}), [old], versions=[1])
    assert msgs == [
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'f2' at path "
        "'/fields/1' in the new schema has no default value and is missing in the old schema', "
        "additionalInfo:'f2'}",
        "{oldSchemaVersion: 1}",
        "{oldSchema: '" + '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}]}' + "'}",
        "{validateFields: 'false', compatibility: 'BACKWARD'}",
    ]


def test_forward_message_names_the_old_schema_as_reader():
    msgs = check_compatibility("FORWARD", parse("AVRO", S1, {}), [parse("AVRO", S3, {})])
    assert msgs[0] == (
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'f2' at path "
        "'/fields/1' in the old schema has no default value and is missing in the new schema', "
        "additionalInfo:'f2'}"
    )
    assert msgs[-1] == "{validateFields: 'false', compatibility: 'FORWARD'}"


@pytest.mark.parametrize("kind, old, new, text", [
    ("TYPE_MISMATCH", one("int"), one("string"),
     "The type (path '/fields/0/type') of a field in the new schema does not match with the old schema"),
    ("MISSING_UNION_BRANCH", S7, S6,
     "The new schema is missing a type inside a union field at path '/fields/0/type/2' in the old schema"),
    ("MISSING_ENUM_SYMBOLS", one(enum(["A", "B"])), one(enum(["A"])),
     "The new schema is missing enum symbols '[B]' at path '/fields/0/type/symbols' in the old schema"),
    ("NAME_MISMATCH", rec(name="A"), rec(name="B"), "The name of the schema has changed (path '/name')"),
    ("FIXED_SIZE_MISMATCH", one({"type": "fixed", "name": "X", "size": 2}),
     one({"type": "fixed", "name": "X", "size": 3}),
     "The size of FIXED type field at path '/fields/0/type/size' in the new schema does not match with the old schema"),
])
def test_description_wording(kind, old, new, text):
    msgs = check_compatibility("BACKWARD", parse("AVRO", new, {}), [parse("AVRO", old, {})])
    assert f"{{errorType:'{kind}', description:'{text}'" in msgs[0]


def test_full_lists_forward_reasons_first_without_old_schema():
    # old reads new fails (f2 removed without default) and new reads old passes: only the
    # forward reason and the trailer (SchemaValidatorBuilder.mutualReadStrategy)
    msgs = check_compatibility("FULL", parse("AVRO", S1, {}), [parse("AVRO", S3, {})], versions=[4])
    assert [m.split(",")[0] for m in msgs] == [
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'", "{validateFields: 'false'"]
    msgs = check_compatibility(
        "FULL", parse("AVRO", one("string"), {}), [parse("AVRO", one("int"), {})], versions=[4]
    )
    assert "in the old schema does not match with the new schema" in msgs[0]
    assert msgs[1].startswith("{errorType:'TYPE_MISMATCH'") and "in the new schema" in msgs[1]
    assert msgs[2:4] == ["{oldSchemaVersion: 4}", "{oldSchema: '" + parse("AVRO", one("int")).canonical() + "'}"]


def test_transitive_reports_the_first_failing_schema_newest_first():
    old = [parse("AVRO", one("int")), parse("AVRO", one("string"))]
    msgs = check_compatibility("BACKWARD_TRANSITIVE", parse("AVRO", one("boolean")), old, versions=[1, 2])
    assert "{oldSchemaVersion: 2}" in msgs and "{oldSchemaVersion: 1}" not in msgs


def test_different_schema_type_is_incompatible():
    class Other(avro.AvroSchema):
        schema_type = "JSON"

    other = Other('"int"')
    msgs = check_compatibility("BACKWARD", parse("AVRO", '"int"'), [other])
    assert msgs[0] == "Incompatible because of different schema type"
    assert check_compatibility("NONE", parse("AVRO", '"int"'), [other]) == []


def test_unknown_level_is_refused():
    with pytest.raises(ValueError):
        check_compatibility("SIDEWAYS", parse("AVRO", '"int"'), [parse("AVRO", '"int"')])


def test_no_existing_schema_is_compatible():
    assert check_compatibility("FULL_TRANSITIVE", parse("AVRO", '"int"'), []) == []


# --- references ------------------------------------------------------------------------

ADDRESS = json.dumps({"type": "record", "name": "Address", "namespace": "com.acme",
                      "fields": [{"name": "street", "type": "string"}]})
ADDRESS2 = json.dumps({"type": "record", "name": "Address", "namespace": "com.acme",
                       "fields": [{"name": "street", "type": "string"},
                                  {"name": "zip", "type": "string"}]})
PERSON = rec(f("name", "string"), f("home", "com.acme.Address"), name="Person")


def test_reference_resolves_a_named_type():
    s = parse("AVRO", PERSON, {"com.acme.Address": ADDRESS})
    assert '"type":"com.acme.Address"' in s.canonical()
    assert "com.acme.Address" in s.named


def test_reference_chain_in_any_order():
    country = json.dumps({"type": "enum", "name": "Country", "namespace": "com.acme", "symbols": ["NL"]})
    addr = json.dumps({"type": "record", "name": "Address", "namespace": "com.acme",
                       "fields": [{"name": "country", "type": "Country"}]})
    parse("AVRO", PERSON, {"com.acme.Address": addr, "com.acme.Country": country})


def test_compatibility_follows_references():
    old = parse("AVRO", PERSON, {"com.acme.Address": ADDRESS})
    new = parse("AVRO", PERSON, {"com.acme.Address": ADDRESS2})
    assert _reasons(check_compatibility("BACKWARD", new, [old])) == [
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1/type/fields/1")]
    assert check_compatibility("FORWARD", new, [old]) == []


# --- parsing errors ----------------------------------------------------------------------

BAD = [
    ("malformed JSON", "{"),
    ("not a schema", "12"),
    ("unknown primitive", '"strin"'),
    ("unknown named type", rec(f("a", "Missing"))),
    ("missing reference", PERSON),
    ("record without fields", '{"type":"record","name":"A"}'),
    ("record without name", '{"type":"record","fields":[]}'),
    ("field without type", '{"type":"record","name":"A","fields":[{"name":"a"}]}'),
    ("duplicate field", rec(f("a", "int"), f("a", "long"))),
    ("illegal field name", rec(f("a-b", "int"))),
    ("illegal record name", rec(name="1abc")),
    ("nested union", one(["null", ["int", "long"]])),
    ("duplicate union branch", one(["int", "int"])),
    ("duplicate enum symbol", one(enum(["A", "A"]))),
    ("illegal enum symbol", one(enum(["A-1"]))),
    ("enum default not a symbol", one(enum(["A"], default="B"))),
    ("fixed without size", one({"type": "fixed", "name": "X"})),
    ("array without items", one({"type": "array"})),
    ("map without values", one({"type": "map"})),
    ("int default on a string field", rec(f("a", "string", default=1))),
    ("string default on an int field", rec(f("a", "int", default="x"))),
    ("redefined name", rec(f("a", json.loads(rec(name="X"))), f("b", json.loads(rec(name="X"))))),
    ("type is not a string", '{"type": 5}'),
    ("decimal scale above precision", one({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3})),
]


@pytest.mark.parametrize("text", [t for _, t in BAD], ids=[n for n, _ in BAD])
def test_invalid_schema_raises_schema_error(text):
    with pytest.raises(SchemaError) as e:
        parse("AVRO", text, {})
    assert str(e.value)


def test_invalid_reference_raises_schema_error():
    with pytest.raises(SchemaError):
        parse("AVRO", PERSON, {"com.acme.Address": "{not json"})


def test_unknown_schema_type():
    with pytest.raises(SchemaError):
        parse("XML", "<a/>", {})


GOOD = [
    '"string"', '{"type":"string"}', "[]", '["null","int"]',
    one({"type": "long", "logicalType": "timestamp-millis"}),
    one({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}),
    rec(f("a", ["null", "string"], default=None)),
    rec(f("e", enum(["A", "B"], default="A"))),
    '{"type":"error","name":"Oops","fields":[]}',
    # CSR AvroCompatibilityTest.testBadDefaultNull: a string default on a null|string union parses
    rec(f("f1", ["null", "string"], default="null"), f("f2", "string", default="foo")),
]


@pytest.mark.parametrize("text", GOOD)
def test_valid_schemas_parse(text):
    s = parse("AVRO", text, {})
    assert s.schema_type == "AVRO" and s.text == text


# --- canonical forms and fingerprints -----------------------------------------------------

# Avro's share/test/data/schema-tests.txt: input, Parsing Canonical Form, fingerprint
PCF = [
    ('"null"', '"null"', 7195948357588979594),
    ('{"type":"int"}', '"int"', 8247732601305521295),
    ('"string"', '"string"', -8142146995180207161),
    ('[ "int" , {"type":"boolean"} ]', '["int","boolean"]', 5392556393470105090),
    ('{"fields":[], "type":"record", "name":"foo", "namespace":"x.y"}',
     '{"name":"x.y.foo","type":"record","fields":[]}', 5916914534497305771),
    ('{"fields":[], "type":"record", "name":"a.b.foo", "namespace":"x.y"}',
     '{"name":"a.b.foo","type":"record","fields":[]}', -4616218487480524110),
    ('{"fields":[], "type":"record", "name":"foo", "doc":"foo", "aliases":["foo","bar"]}',
     '{"name":"foo","type":"record","fields":[]}', -4824392279771201922),
    ('{ "fields":[{"type":"boolean", "aliases":[], "name":"f1", "default":true},'
     '{"order":"descending","name":"f2","doc":"Hello","type":"int"}], "type":"record", "name":"foo"}',
     '{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"},{"name":"f2","type":"int"}]}',
     -4860222112080293046),
    ('{"namespace":"x.y.z", "type":"enum", "name":"foo", "doc":"foo bar", "symbols":["A1", "A2"]}',
     '{"name":"x.y.z.foo","type":"enum","symbols":["A1","A2"]}', -4448647247586288245),
    ('{"namespace":"x.y.z", "type":"fixed", "name":"foo", "doc":"foo bar", "size":32}',
     '{"name":"x.y.z.foo","type":"fixed","size":32}', -3064184465700546786),
    ('{ "items":{"type":"null"}, "type":"array"}', '{"type":"array","items":"null"}', -589620603366471059),
    ('{ "values":"string", "type":"map"}', '{"type":"map","values":"string"}', -8732877298790414990),
    ('{"name":"PigValue","type":"record","fields":[{"name":"value", "type":["null", "int", "long", "PigValue"]}]}',
     '{"name":"PigValue","type":"record","fields":[{"name":"value","type":["null","int","long","PigValue"]}]}',
     -1759257747318642341),
]


@pytest.mark.parametrize("text, pcf, fingerprint", PCF)
def test_parsing_canonical_form_and_fingerprint(text, pcf, fingerprint):
    s = parse("AVRO", text, {})
    assert s.parsing_canonical_form() == pcf
    assert s.fingerprint() == fingerprint


def test_canonical_is_avro_java_to_string():
    # the oldSchema text Confluent's registry echoes for a schema written in another order
    text = """{"namespace": "com.github.altfatterz.avro", "type": "record",
      "name": "NewCustomerCreatedEvent",
      "fields": [{"type": "string", "doc": "the first name of the customer", "name": "first_name"}]}"""
    assert parse("AVRO", text).canonical() == (
        '{"type":"record","name":"NewCustomerCreatedEvent","namespace":"com.github.altfatterz.avro",'
        '"fields":[{"name":"first_name","type":"string","doc":"the first name of the customer"}]}'
    )


def test_canonical_ignores_layout_but_keeps_docs():
    a = parse("AVRO", '{"type":"record","name":"A","fields":[{"name":"x","type":"int"}]}')
    b = parse("AVRO", '{ "fields" : [ {"type":"int", "name":"x"} ], "name":"A", "type":"record" }')
    c = parse("AVRO", '{"type":"record","name":"A","doc":"d","fields":[{"name":"x","type":"int"}]}')
    assert a.canonical() == b.canonical() != c.canonical()
    assert a == b and a != c


def test_canonical_writes_names_relative_to_the_namespace():
    text = json.dumps({"type": "record", "name": "A", "namespace": "n", "fields": [
        {"name": "x", "type": {"type": "enum", "name": "E", "symbols": ["Q"]}},
        {"name": "y", "type": "n.E"},
        {"name": "z", "type": {"type": "fixed", "name": "F", "namespace": "other", "size": 1}},
    ]})
    c = json.loads(parse("AVRO", text).canonical())
    assert c["fields"][1]["type"] == "E"
    assert c["fields"][2]["type"]["namespace"] == "other"


def test_normalized_sorts_attributes_and_aliases():
    a = parse("AVRO", rec(f("x", "int", aliases=["b", "a"]), name="A", zz=1, aa=2))
    b = parse("AVRO", rec(f("x", "int", aliases=["a", "b"]), name="A", aa=2, zz=1))
    assert a.canonical() != b.canonical()
    assert a.normalized() == b.normalized()
    assert json.loads(a.normalized()) == json.loads(b.canonical())


def test_canonical_writes_an_empty_namespace_inside_a_namespace():
    # Avro's Name.writeName: a type without namespace inside one with a namespace
    text = json.dumps({"type": "record", "name": "A", "namespace": "n", "fields": [
        {"name": "x", "type": {"type": "record", "name": "B", "namespace": "", "fields": []}}]})
    c = json.loads(parse("AVRO", text).canonical())
    assert c["fields"][0]["type"]["namespace"] == ""


def test_stored_schema_with_a_bad_default_parses_without_validation():
    # Confluent's AvroSchema validates defaults only for new schemas (validateAsNew):
    # a stored schema with a mistyped default is still served and compared
    text = rec(f("a", "int", default="x"))
    with pytest.raises(SchemaError):
        parse("AVRO", text)
    stored = parse("AVRO", text, validate=False)
    assert check_compatibility("BACKWARD", parse("AVRO", rec(f("a", "long"))), [stored]) == []
    with pytest.raises(SchemaError):
        parse("AVRO", rec(f("a", "Missing", default="x")), validate=False)
