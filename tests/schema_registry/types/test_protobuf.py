"""PROTOBUF: parsing, imports and well-known types, canonical forms, and the
compatibility rules row by row.

Each row names a rule, the old and new .proto text, the level, and what Confluent's
registry answers: the incompatible changes (errorType and path) or none. Sources:

- ``CSR proto examples`` — confluentinc/schema-registry,
  protobuf-provider/src/test/resources/diff-schema-examples.json (the row's text names
  the example's "description"); Confluent runs its Protobuf ``SchemaDiff`` on (original =
  old, update = new), a BACKWARD check.
- ``CSR SchemaDiff`` — the compatible change set (protobuf/diff/SchemaDiff.java), the
  scalar groups (FieldSchemaDiff.java, after protobuf's "Updating A Message Type" rules)
  and the message wording (diff/Difference.java).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from kbroker.schema_registry.types import SchemaError, check_compatibility, parse
from kbroker.schema_registry.types import protobuf_diff

EX = "CSR proto examples"
SD = "CSR SchemaDiff"


def p3(body: str, package: str = "") -> str:
    pkg = f"package {package};\n" if package else ""
    return f'syntax = "proto3";\n{pkg}{body}\n'


def p2(body: str) -> str:
    return f'syntax = "proto2";\n{body}\n'


@dataclass
class Row:
    rule: str
    old: str
    new: str
    expect: list[tuple[str, str]]
    source: str
    level: str = "BACKWARD"
    old_refs: dict | None = None
    new_refs: dict | None = None


M = "message M { string a = 1; int32 b = 2; }"

ROWS = [
    Row("identical", p3(M), p3(M), [], SD),
    Row("package changed", p3(M, "foo"), p3(M, "bar"), [("PACKAGE_CHANGED", "#/")],
        EX + ": 'Detect package change'"),
    Row("name qualification changed", p3("message T { S s = 1; message S { string x = 1; } }"),
        p3("message T { .T.S s = 1; message S { string x = 1; } }"), [],
        EX + ": 'Detect change to name qualification'"),
    # fields
    Row("field added", p3(M), p3("message M { string a = 1; int32 b = 2; bool c = 3; }"), [], EX),
    Row("field removed", p3(M), p3("message M { string a = 1; }"), [], EX),
    Row("field renamed", p3(M), p3("message M { string a = 1; int32 bee = 2; }"), [], SD),
    Row("field number changed (remove + add)", p3(M), p3("message M { string a = 1; int32 b = 3; }"), [], SD),
    Row("scalar group changed", p3(M), p3("message M { string a = 1; string b = 2; }"),
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/2")], EX + ": 'Detect changed scalar type'"),
    Row("scalar within its group (int32 to int64)", p3(M), p3("message M { string a = 1; int64 b = 2; }"),
        [], SD + " (GENERAL_NUMBER)"),
    Row("int32 to bool (same group)", p3(M), p3("message M { string a = 1; bool b = 2; }"), [],
        SD + " (GENERAL_NUMBER)"),
    Row("int32 to sint32", p3(M), p3("message M { string a = 1; sint32 b = 2; }"),
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/2")], SD + " (SIGNED_NUMBER)"),
    Row("string to bytes", p3(M), p3("message M { bytes a = 1; int32 b = 2; }"), [], SD + " (STRING_OR_BYTES)"),
    Row("fixed32 to sfixed32", p3("message M { fixed32 a = 1; }"), p3("message M { sfixed32 a = 1; }"), [], SD),
    Row("float to double", p3("message M { float a = 1; }"), p3("message M { double a = 1; }"),
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/1")], SD),
    Row("enum to int32 (same group)", p3("message M { E e = 1; } enum E { Z = 0; }"),
        p3("message M { int32 e = 1; } enum E { Z = 0; }"), [], SD + " (an enum is a GENERAL_NUMBER)"),
    Row("scalar to message", p3("message M { string a = 1; } message N { string x = 1; }"),
        p3("message M { N a = 1; } message N { string x = 1; }"), [("FIELD_KIND_CHANGED", "#/M/1")], EX),
    Row("scalar to map", p3("message M { string a = 1; }"), p3("message M { map<string, string> a = 1; }"),
        [("FIELD_KIND_CHANGED", "#/M/1")], SD),
    Row("map value changed group", p3("message M { map<string, int32> a = 1; }"),
        p3("message M { map<string, string> a = 1; }"), [("FIELD_SCALAR_KIND_CHANGED", "#/M/1")], SD),
    # labels
    Row("proto2 numeric optional to repeated", p2("message M { optional int32 a = 1; }"),
        p2("message M { repeated int32 a = 1; }"), [("FIELD_NUMERIC_LABEL_CHANGED", "#/M/1")],
        EX + ": 'Detect changed numeric label'"),
    Row("proto2 string optional to repeated", p2("message M { optional string a = 1; }"),
        p2("message M { repeated string a = 1; }"), [], SD + " (string/bytes label change)"),
    Row("proto3 singular to optional", p3("message M { int32 a = 1; }"), p3("message M { optional int32 a = 1; }"),
        [], SD + " (no label on proto3 singular fields)"),
    Row("proto2 required field added", p2("message M { optional int32 a = 1; }"),
        p2("message M { optional int32 a = 1; required int32 b = 2; }"),
        [("REQUIRED_FIELD_ADDED", "#/M/2")], SD),
    Row("proto2 required field removed", p2("message M { optional int32 a = 1; required int32 b = 2; }"),
        p2("message M { optional int32 a = 1; }"), [("REQUIRED_FIELD_REMOVED", "#/M/2")], SD),
    # messages
    Row("message added", p3(M), p3(M + " message N { string x = 1; }"), [], EX),
    Row("message removed", p3(M + " message N { string x = 1; }"), p3(M), [("MESSAGE_REMOVED", "#/N")],
        EX + ": 'Detect removed message'"),
    Row("message moved", p3(M + " message N { string x = 1; }"), p3("message N { string x = 1; } " + M), [], EX),
    Row("nested message field changed", p3("message M { message I { int32 x = 1; } I i = 1; }"),
        p3("message M { message I { string x = 1; } I i = 1; }"),
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/I/1"), ("FIELD_SCALAR_KIND_CHANGED", "#/M/I/1"),
         ("FIELD_NAMED_TYPE_CHANGED", "#/M/1")], EX + ": nested message type change"),
    Row("message field type renamed", p3("message M { A f = 1; } message A { int32 x = 1; } message B { int32 x = 1; }"),
        p3("message M { B f = 1; } message A { int32 x = 1; } message B { int32 x = 1; }"),
        [("FIELD_NAMED_TYPE_CHANGED", "#/M/1")], SD),
    Row("recursive message", p3("message Node { Node next = 1; int32 v = 2; }"),
        p3("message Node { Node next = 1; int32 v = 2; string w = 3; }"), [], SD + " (cycle cut)"),
    # enums
    Row("enum constant added", p3("enum E { A = 0; }"), p3("enum E { A = 0; B = 1; }"), [], EX),
    Row("enum constant removed", p3("enum E { A = 0; B = 1; }"), p3("enum E { A = 0; }"), [], EX),
    Row("enum constant renamed", p3("enum E { A = 0; }"), p3("enum E { Z = 0; }"), [], EX),
    Row("enum removed", p3(M + " enum E { A = 0; }"), p3(M), [], SD),
    # oneofs
    Row("oneof added", p3(M), p3("message M { string a = 1; int32 b = 2; oneof o { bool c = 3; } }"), [], EX),
    Row("oneof field added", p3("message M { oneof o { bool c = 3; } }"),
        p3("message M { oneof o { bool c = 3; int32 d = 4; } }"), [], EX),
    Row("oneof field removed", p3("message M { oneof o { bool c = 3; int32 d = 4; } }"),
        p3("message M { oneof o { bool c = 3; } }"), [("ONEOF_FIELD_REMOVED", "#/M/o/4")], EX),
    Row("whole oneof removed", p3("message M { string a = 1; oneof o { bool c = 3; int32 d = 4; } }"),
        p3("message M { string a = 1; }"), [], EX + " (complete deletion)"),
    Row("oneof field moved to the top level", p3("message M { oneof o { bool c = 3; int32 d = 4; } }"),
        p3("message M { bool c = 3; oneof o { int32 d = 4; } }"), [], EX),
    Row("one field moved into a new oneof", p3(M), p3("message M { string a = 1; oneof o { int32 b = 2; } }"),
        [], EX + " (a single origin)"),
    Row("two fields moved into one oneof", p3(M), p3("message M { oneof o { string a = 1; int32 b = 2; } }"),
        [("MULTIPLE_FIELDS_MOVED_TO_ONEOF", "#/M/o")], EX),
    Row("field moved into an existing oneof", p3("message M { string a = 1; oneof o { int32 b = 2; } }"),
        p3("message M { oneof o { string a = 1; int32 b = 2; } }"),
        [("FIELD_MOVED_TO_EXISTING_ONEOF", "#/M/o")], EX),
    # imports
    Row("imported message changed incompatibly",
        p3('import "dep.proto";\nmessage T { .d.Home h = 1; }'),
        p3('import "dep.proto";\nmessage T { .d.Home h = 1; }'),
        [("FIELD_SCALAR_KIND_CHANGED", "#/Home/1"), ("FIELD_NAMED_TYPE_CHANGED", "#/T/1")],
        EX + ": 'Detect incompatible import change'",
        old_refs={"dep.proto": p3("message Home { int32 id = 1; }", "d")},
        new_refs={"dep.proto": p3("message Home { string id = 1; }", "d")}),
    Row("imported message changed compatibly",
        p3('import "dep.proto";\nmessage T { d.Home h = 1; }'),
        p3('import "dep.proto";\nmessage T { d.Home h = 1; }'), [], EX + " (import change family)",
        old_refs={"dep.proto": p3("message Home { int32 id = 1; }", "d")},
        new_refs={"dep.proto": p3("message Home { int32 id = 1; bool on = 2; }", "d")}),
    Row("well-known type kept", p3('import "google/protobuf/timestamp.proto";\nmessage T { google.protobuf.Timestamp at = 1; }'),
        p3('import "google/protobuf/timestamp.proto";\nmessage T { google.protobuf.Timestamp at = 1; string n = 2; }'), [], SD),
    Row("well-known type swapped", p3('import "google/protobuf/timestamp.proto";\nmessage T { google.protobuf.Timestamp at = 1; }'),
        p3('import "google/protobuf/duration.proto";\nmessage T { google.protobuf.Duration at = 1; }'),
        [("FIELD_NAMED_TYPE_CHANGED", "#/T/1")], SD),
    # syntax: Confluent's diff has no change type for it; labels are what differ
    Row("syntax proto2 to proto3", p2("message M { optional int32 a = 1; optional string b = 2; }"),
        p3("message M { int32 a = 1; string b = 2; }"), [], SD + " (no SYNTAX change type)"),
    Row("syntax proto2 repeated to proto3 singular", p2("message M { repeated int32 a = 1; }"),
        p3("message M { int32 a = 1; }"), [], SD + " (proto3 singular fields carry no label)"),
    # levels
    Row("message removed, forward", p3(M), p3(M + " message N { string x = 1; }"),
        [("MESSAGE_REMOVED", "#/N")], SD + " (swapped)", "FORWARD"),
    Row("field added, full", p3(M), p3("message M { string a = 1; int32 b = 2; bool c = 3; }"), [], SD, "FULL"),
    Row("NONE accepts anything", p3(M), p3("message Q { bytes z = 1; }"), [], "Confluent docs", "NONE"),
]


def _reasons(messages: list[str]) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        if m.startswith('{errorType:"'):
            kind = m.split('"')[1]
            found = re.search(r"'(#/[^']*)'", m)
            path = found.group(1) if found else ""
            out.append((kind, path))
    return out


@pytest.mark.parametrize("row", ROWS, ids=[r.rule for r in ROWS])
def test_compatibility_rule(row: Row):
    old = parse("PROTOBUF", row.old, row.old_refs or {})
    new = parse("PROTOBUF", row.new, row.new_refs or {})
    messages = check_compatibility(row.level, new, [old])
    assert sorted(_reasons(messages)) == sorted(row.expect), messages
    assert bool(messages) == bool(row.expect)


def test_message_text():
    old = parse("PROTOBUF", p3(M))
    new = parse("PROTOBUF", p3("message M { string a = 1; string b = 2; }"))
    msgs = check_compatibility("BACKWARD", new, [old], versions=[7])
    assert msgs[0] == (
        '{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at path '
        "'#/M/2' in the new schema does not match its kind in the old schema\"}"
    )
    assert msgs[1] == "{oldSchemaVersion: 7}"
    assert msgs[-1] == "{validateFields: 'false', compatibility: 'BACKWARD'}"


def test_compatible_set_is_confluents():
    assert "FIELD_REMOVED" in protobuf_diff.COMPATIBLE_CHANGES
    assert "MESSAGE_REMOVED" not in protobuf_diff.COMPATIBLE_CHANGES
    assert "ONEOF_FIELD_REMOVED" not in protobuf_diff.COMPATIBLE_CHANGES


# --- parsing -----------------------------------------------------------------------------

BAD = [
    ("syntax error", "message {"),
    ("missing field number", p3("message A { string a = ; }")),
    ("garbage", "garbage"),
    ("empty", ""),
    ("unknown syntax", 'syntax = "proto4"; message A {}'),
    ("unknown field type", p3("message A { Foo a = 1; }")),
    ("unknown map value type", p3("message A { map<string, Foo> a = 1; }")),
    ("float map key", p3("message A { map<float, string> a = 1; }")),
    ("missing import", p3('import "x.proto";\nmessage A { string a = 1; }')),
    ("duplicate field number", p3("message A { int32 a = 1; int32 b = 1; }")),
    ("duplicate field name", p3("message A { int32 a = 1; int32 a = 2; }")),
    ("field number 0", p3("message A { int32 a = 0; }")),
    ("reserved implementation range", p3("message A { int32 a = 19500; }")),
    ("duplicate message", p3("message A { int32 a = 1; } message A { int32 b = 1; }")),
    ("proto3 enum not starting at zero", p3("enum E { A = 1; }")),
    ("proto3 required field", p3("message A { required int32 a = 1; }")),
    ("duplicate enum number without allow_alias", p3("enum E { A = 0; B = 0; }")),
    ("unknown rpc type", p3("message A { int32 a = 1; } service S { rpc M(A) returns (Nope); }")),
    ("broken reference", p3('import "dep.proto";\nmessage A { int32 a = 1; }')),
]


@pytest.mark.parametrize("text", [t for _, t in BAD], ids=[n for n, _ in BAD])
def test_invalid_schema_raises_schema_error(text):
    refs = {"dep.proto": "message {"} if "dep.proto" in text else {}
    with pytest.raises(SchemaError) as e:
        parse("PROTOBUF", text, refs)
    assert str(e.value)


GOOD = [
    p3("message A { string a = 1; }"),
    p2("message A { required string a = 1; optional int32 b = 2 [default = 5]; repeated bytes c = 3; }"),
    p2("message A { optional group G = 1 { optional int32 q = 2; } }"),
    p3("enum E { option allow_alias = true; A = 0; B = 0; }"),
    p3("message A { oneof o { string s = 1; int32 i = 2; } map<string, A> kids = 3; }"),
    p3("message A { message B { enum C { X = 0; } C c = 1; } B b = 1; B.C c = 2; }", "x.y"),
    p3('import "google/protobuf/any.proto";\nimport "google/protobuf/wrappers.proto";\n'
       "message A { google.protobuf.Any x = 1; google.protobuf.StringValue s = 2; }"),
    p3('import "google/type/date.proto";\nimport "confluent/meta.proto";\nmessage A { google.type.Date d = 1; }'),
    p3("message A { int32 a = 1; } service S { rpc M(A) returns (stream A); }"),
    p3('import "google/protobuf/descriptor.proto";\nextend google.protobuf.FieldOptions { string tag = 50000; }\n'
       "message A { int32 a = 1 [(tag) = \"x\"]; }"),
]


@pytest.mark.parametrize("text", GOOD)
def test_valid_schemas_parse(text):
    assert parse("PROTOBUF", text, {}).schema_type == "PROTOBUF"


def test_import_through_references_chain():
    money = p3("message Money { int64 units = 1; }", "shop.common")
    item = p3('import "money.proto";\nmessage Item { shop.common.Money price = 1; }', "shop")
    order = p3('import "item.proto";\nmessage Order { repeated shop.Item items = 1; }', "shop")
    s = parse("PROTOBUF", order, {"item.proto": item, "money.proto": money})
    assert "shop.common.Money" in s.types


def test_canonical_drops_comments_and_layout():
    a = parse("PROTOBUF", 'syntax = "proto3";\n// hello\nmessage A {   string a = 1;  }\n')
    b = parse("PROTOBUF", 'syntax="proto3"; message A { string a = 1; }')
    assert a.canonical() == b.canonical() == 'syntax = "proto3";\nmessage A {\n  string a = 1;\n}'


def test_normalized_orders_fields_and_qualifies_types():
    a = parse("PROTOBUF", p3("message A { B b = 2; string a = 1; } message B { int32 x = 1; }", "p"))
    b = parse("PROTOBUF", p3("message A { string a = 1; .p.B b = 2; } message B { int32 x = 1; }", "p"))
    assert a.canonical() != b.canonical()
    assert a.normalized() == b.normalized()
    assert ".p.B b = 2;" in a.normalized()
