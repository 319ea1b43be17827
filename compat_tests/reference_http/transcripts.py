"""The scripted request transcripts of the HTTP differential (issues #28 and #35).

Two transcripts, each played from a fresh server (fresh `_schemas`, no topics but the ones
``setup_topics`` names):

- ``registry``: Confluent Schema Registry API v1 — root, types, subjects, register (AVRO, JSON,
  PROTOBUF), versions (number, ``latest``, ``-1``, ``/schema``, ``/referencedby``), lookup,
  ids (``/versions``, ``/subjects``, ``/schema``), config (global, per subject,
  ``defaultToGlobal``), mode (READONLY, IMPORT with an explicit id), compatibility checks with
  ``verbose`` over a table of schema pairs and levels (``_TRANSITIVE`` included), ``normalize``,
  references (Avro named types, Protobuf imports), soft and permanent deletes, and the error
  answers (malformed JSON, invalid schemas, unknown types, levels and modes, missing subjects,
  versions and ids).
- ``rest``: Confluent REST Proxy API v2 — brokers, topics and partitions metadata, produce
  (binary, json, avro, jsonschema, protobuf; by partition and by key), consumer instances
  (create, subscribe, assign, seek, poll, commit, offsets, delete) and the error answers.
  The v3 steps only show which v3 paths the reference serves.

Names are fixed (``ref-...``) so that no answer depends on timing: every server starts empty,
ids are handed out in the same order on both sides, and offsets follow from the produce steps.
"""
from __future__ import annotations

import json

SR = "application/vnd.schemaregistry.v1+json"
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSONF = "application/vnd.kafka.json.v2+json"
AVROF = "application/vnd.kafka.avro.v2+json"
JSONSCHEMAF = "application/vnd.kafka.jsonschema.v2+json"
PROTOF = "application/vnd.kafka.protobuf.v2+json"


def _j(value) -> str:
    return json.dumps(value)


def avro_record(name: str, fields: list) -> str:
    return _j({"type": "record", "name": name, "namespace": "ref", "fields": fields})


# --- registry schemas -------------------------------------------------------------------

USER_V1 = avro_record("User", [{"name": "name", "type": "string"}])
USER_V2 = avro_record("User", [{"name": "name", "type": "string"},
                               {"name": "age", "type": "int", "default": 0}])
USER_BAD = avro_record("User", [{"name": "name", "type": "string"},
                                {"name": "email", "type": "string"}])
ADDRESS = avro_record("Address", [{"name": "street", "type": "string"}])
CUSTOMER = avro_record("Customer", [{"name": "addr", "type": "ref.Address"}])

JSON_V1 = _j({"type": "object", "properties": {"a": {"type": "string"}}})
JSON_V2 = _j({"type": "object", "properties": {"a": {"type": "string"}},
              "required": ["a"]})
JSON_BAD = _j({"type": "object", "properties": {"a": {"type": "integer"}}})

PROTO_V1 = 'syntax = "proto3";\npackage ref;\n\nmessage Order {\n  string id = 1;\n}\n'
PROTO_V2 = ('syntax = "proto3";\npackage ref;\n\nmessage Order {\n  string id = 1;\n'
            '  int32 qty = 2;\n}\n')
PROTO_BAD = 'syntax = "proto3";\npackage ref;\n\nmessage Order {\n  repeated Order id = 1;\n}\n'
PROTO_V1_MESSY = ('syntax   =   "proto3";   package ref;\nmessage Order {   string   id=1;  }\n')
PROTO_MONEY = 'syntax = "proto3";\npackage ref;\n\nmessage Money {\n  int64 cents = 1;\n}\n'
PROTO_INVOICE = ('syntax = "proto3";\npackage ref;\n\nimport "money.proto";\n\n'
                 'message Invoice {\n  ref.Money total = 1;\n}\n')

# Compatibility table: a base schema and candidates, checked under each level.
LEVELS = ["BACKWARD", "FORWARD", "FULL", "NONE"]

AVRO_BASE = avro_record("Pair", [
    {"name": "id", "type": "int"}, {"name": "name", "type": "string"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}])
AVRO_CANDIDATES = {
    "add-default": avro_record("Pair", [
        {"name": "id", "type": "int"}, {"name": "name", "type": "string"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "extra", "type": "string", "default": ""}]),
    "add-no-default": avro_record("Pair", [
        {"name": "id", "type": "int"}, {"name": "name", "type": "string"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "extra", "type": "string"}]),
    "remove-field": avro_record("Pair", [
        {"name": "id", "type": "int"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]),
    "int-to-long": avro_record("Pair", [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]),
    "int-to-string": avro_record("Pair", [
        {"name": "id", "type": "string"}, {"name": "name", "type": "string"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]),
    "enum-add-symbol": avro_record("Pair", [
        {"name": "id", "type": "int"}, {"name": "name", "type": "string"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}}]),
}

JSON_BASE = _j({"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}},
                "additionalProperties": False})
JSON_CANDIDATES = {
    "closed-add-optional": _j({"type": "object", "properties": {
        "a": {"type": "string"}, "n": {"type": "integer"}, "c": {"type": "string"}},
        "additionalProperties": False}),
    "closed-remove-property": _j({"type": "object", "properties": {"a": {"type": "string"}},
                                  "additionalProperties": False}),
    "integer-to-number": _j({"type": "object", "properties": {
        "a": {"type": "string"}, "n": {"type": "number"}}, "additionalProperties": False}),
    "add-required": _j({"type": "object", "properties": {
        "a": {"type": "string"}, "n": {"type": "integer"}}, "required": ["a"],
        "additionalProperties": False}),
    "open-model": _j({"type": "object", "properties": {
        "a": {"type": "string"}, "n": {"type": "integer"}}}),
}

PROTO_BASE = 'syntax = "proto3";\npackage ref;\n\nmessage M {\n  string a = 1;\n  int32 n = 2;\n}\n'
PROTO_CANDIDATES = {
    "add-field": 'syntax = "proto3";\npackage ref;\n\nmessage M {\n  string a = 1;\n  int32 n = 2;\n'
                 '  int64 c = 3;\n}\n',
    "remove-field": 'syntax = "proto3";\npackage ref;\n\nmessage M {\n  string a = 1;\n}\n',
    "rename-field": 'syntax = "proto3";\npackage ref;\n\nmessage M {\n  string a = 1;\n'
                    '  int32 count = 2;\n}\n',
    "int32-to-int64": 'syntax = "proto3";\npackage ref;\n\nmessage M {\n  string a = 1;\n'
                      '  int64 n = 2;\n}\n',
    "string-to-int32": 'syntax = "proto3";\npackage ref;\n\nmessage M {\n  int32 a = 1;\n'
                       '  int32 n = 2;\n}\n',
}

IMPORTED = avro_record("Imported", [{"name": "i", "type": "long"}])

# Transitive: v3 reads v2's data but not v1's (its new field has no default).
TRANS_V1 = avro_record("T", [{"name": "a", "type": "int"}])
TRANS_V2 = avro_record("T", [{"name": "b", "type": "string", "default": "x"}])
TRANS_V3 = avro_record("T", [{"name": "b", "type": "string"}])


def _step(name, method, path, json_body=None, **kw) -> dict:
    step = {"name": name, "method": method, "path": path}
    if json_body is not None:
        step["json"] = json_body
        step.setdefault("content_type", SR)
    step.update(kw)
    return step


def _reg(name, subject, schema, schema_type=None, **extra) -> dict:
    body = {"schema": schema}
    if schema_type:
        body["schemaType"] = schema_type
    body.update(extra.pop("body", {}))
    return _step(name, "POST", f"/subjects/{subject}/versions{extra.pop('query', '')}", body, **extra)


def registry_steps() -> list[dict]:
    s = _step
    steps = [
        s("root", "GET", "/"),
        s("types", "GET", "/schemas/types"),
        s("subjects-empty", "GET", "/subjects"),
        s("config-global-default", "GET", "/config"),
        s("mode-global-default", "GET", "/mode"),
        # AVRO register and read back
        _reg("avro-register-v1", "ref-avro", USER_V1),
        _reg("avro-register-v1-again", "ref-avro", USER_V1),
        _reg("avro-register-v2", "ref-avro", USER_V2),
        _reg("avro-register-incompatible", "ref-avro", USER_BAD),
        s("avro-versions", "GET", "/subjects/ref-avro/versions"),
        s("avro-version-1", "GET", "/subjects/ref-avro/versions/1"),
        s("avro-version-latest", "GET", "/subjects/ref-avro/versions/latest"),
        s("avro-version-minus-1", "GET", "/subjects/ref-avro/versions/-1"),
        s("avro-version-1-schema", "GET", "/subjects/ref-avro/versions/1/schema"),
        s("avro-version-missing", "GET", "/subjects/ref-avro/versions/99"),
        s("avro-version-invalid", "GET", "/subjects/ref-avro/versions/abc"),
        s("avro-version-zero", "GET", "/subjects/ref-avro/versions/0"),
        s("subject-missing-versions", "GET", "/subjects/ref-missing/versions"),
        s("subject-missing-version", "GET", "/subjects/ref-missing/versions/1"),
        s("avro-lookup", "POST", "/subjects/ref-avro", {"schema": USER_V1}),
        s("avro-lookup-unknown-schema", "POST", "/subjects/ref-avro", {"schema": USER_BAD}),
        s("avro-lookup-missing-subject", "POST", "/subjects/ref-missing", {"schema": USER_V1}),
        s("id-1", "GET", "/schemas/ids/1"),
        s("id-1-with-subject", "GET", "/schemas/ids/1?subject=ref-avro"),
        s("id-1-schema", "GET", "/schemas/ids/1/schema"),
        s("id-1-versions", "GET", "/schemas/ids/1/versions"),
        s("id-1-subjects", "GET", "/schemas/ids/1/subjects"),
        s("id-missing", "GET", "/schemas/ids/999"),
        s("id-missing-versions", "GET", "/schemas/ids/999/versions"),
        s("id-invalid", "GET", "/schemas/ids/abc"),
        # same schema under a second subject: same id
        _reg("avro-second-subject", "ref-avro-copy", USER_V1),
        s("id-1-subjects-two", "GET", "/schemas/ids/1/subjects"),
        s("id-1-versions-two", "GET", "/schemas/ids/1/versions"),
        # compatibility endpoint
        s("compat-latest-ok", "POST", "/compatibility/subjects/ref-avro/versions/latest",
          {"schema": USER_V2}),
        s("compat-latest-bad-verbose", "POST",
          "/compatibility/subjects/ref-avro/versions/latest?verbose=true", {"schema": USER_BAD}),
        s("compat-latest-bad", "POST", "/compatibility/subjects/ref-avro/versions/latest",
          {"schema": USER_BAD}),
        s("compat-version-1", "POST", "/compatibility/subjects/ref-avro/versions/1",
          {"schema": USER_V2}),
        s("compat-version-missing", "POST", "/compatibility/subjects/ref-avro/versions/42",
          {"schema": USER_V2}),
        s("compat-subject-missing", "POST", "/compatibility/subjects/ref-missing/versions/latest",
          {"schema": USER_V2}),
        s("compat-all-versions", "POST", "/compatibility/subjects/ref-avro/versions",
          {"schema": USER_V2}),
        s("compat-invalid-schema", "POST", "/compatibility/subjects/ref-avro/versions/latest",
          {"schema": '{"type": "recrd"}'}),
        # config
        s("config-put-global-full", "PUT", "/config", {"compatibility": "FULL"}),
        s("config-get-global-full", "GET", "/config"),
        s("config-put-subject-none", "PUT", "/config/ref-avro", {"compatibility": "NONE"}),
        s("config-get-subject", "GET", "/config/ref-avro"),
        s("config-get-subject-unset", "GET", "/config/ref-avro-copy"),
        s("config-get-subject-default-to-global", "GET", "/config/ref-avro-copy?defaultToGlobal=true"),
        s("config-put-invalid-level", "PUT", "/config", {"compatibility": "SOMETIMES"}),
        s("config-put-missing-field", "PUT", "/config", {"level": "FULL"}),
        s("config-delete-subject", "DELETE", "/config/ref-avro"),
        s("config-get-subject-after-delete", "GET", "/config/ref-avro"),
        s("config-put-global-backward", "PUT", "/config", {"compatibility": "BACKWARD"}),
        # JSON Schema
        _reg("json-register-v1", "ref-json", JSON_V1, "JSON"),
        _reg("json-register-v2", "ref-json", JSON_V2, "JSON"),
        _reg("json-register-incompatible", "ref-json", JSON_BAD, "JSON"),
        s("json-version-latest", "GET", "/subjects/ref-json/versions/latest"),
        s("json-lookup", "POST", "/subjects/ref-json", {"schema": JSON_V1, "schemaType": "JSON"}),
        s("json-lookup-wrong-type", "POST", "/subjects/ref-json", {"schema": JSON_V1}),
        _reg("json-invalid", "ref-json-bad", '{"type": "object", "properties": 5}', "JSON"),
        # PROTOBUF
        _reg("proto-register-v1", "ref-proto", PROTO_V1, "PROTOBUF"),
        _reg("proto-register-v2", "ref-proto", PROTO_V2, "PROTOBUF"),
        _reg("proto-register-incompatible", "ref-proto", PROTO_BAD, "PROTOBUF"),
        s("proto-version-1", "GET", "/subjects/ref-proto/versions/1"),
        s("proto-lookup", "POST", "/subjects/ref-proto", {"schema": PROTO_V1, "schemaType": "PROTOBUF"}),
        _reg("proto-invalid", "ref-proto-bad", "message {", "PROTOBUF"),
        # normalize
        _reg("proto-register-messy-normalized", "ref-proto", PROTO_V1_MESSY, "PROTOBUF",
             query="?normalize=true"),
        s("proto-lookup-messy-normalized", "POST", "/subjects/ref-proto?normalize=true",
          {"schema": PROTO_V1_MESSY, "schemaType": "PROTOBUF"}),
        s("proto-lookup-messy-plain", "POST", "/subjects/ref-proto",
          {"schema": PROTO_V1_MESSY, "schemaType": "PROTOBUF"}),
        _reg("avro-register-normalized", "ref-avro", USER_V1.replace(", ", ",  "),
             query="?normalize=true"),
        # references
        _reg("ref-avro-address", "ref-address", ADDRESS),
        _reg("ref-avro-customer", "ref-customer", CUSTOMER, body={"references": [
            {"name": "ref.Address", "subject": "ref-address", "version": 1}]}),
        s("ref-avro-customer-version", "GET", "/subjects/ref-customer/versions/1"),
        s("ref-avro-referencedby", "GET", "/subjects/ref-address/versions/1/referencedby"),
        _reg("ref-avro-customer-no-refs", "ref-customer-bare", CUSTOMER),
        _reg("ref-avro-unknown-reference", "ref-customer-x", CUSTOMER, body={"references": [
            {"name": "ref.Address", "subject": "ref-nowhere", "version": 1}]}),
        _reg("ref-proto-money", "ref-money", PROTO_MONEY, "PROTOBUF"),
        _reg("ref-proto-invoice", "ref-invoice", PROTO_INVOICE, "PROTOBUF", body={"references": [
            {"name": "money.proto", "subject": "ref-money", "version": 1}]}),
        s("ref-proto-invoice-version", "GET", "/subjects/ref-invoice/versions/latest"),
        s("ref-proto-referencedby", "GET", "/subjects/ref-money/versions/1/referencedby"),
        s("ref-delete-referenced-version", "DELETE", "/subjects/ref-money/versions/1"),
        s("ref-delete-referenced-subject", "DELETE", "/subjects/ref-address"),
        # mode
        s("mode-put-subject-readonly", "PUT", "/mode/ref-mode", {"mode": "READONLY"}),
        s("mode-get-subject", "GET", "/mode/ref-mode"),
        _reg("mode-register-readonly", "ref-mode", USER_V1),
        s("mode-put-subject-readwrite", "PUT", "/mode/ref-mode", {"mode": "READWRITE"}),
        _reg("mode-register-readwrite", "ref-mode", USER_V1),
        s("mode-put-invalid", "PUT", "/mode", {"mode": "SOMETIMES"}),
        s("mode-put-import-subject", "PUT", "/mode/ref-import", {"mode": "IMPORT"}),
        _reg("mode-import-register-with-id", "ref-import", IMPORTED,
             body={"id": 500, "version": 3}),
        s("mode-import-version", "GET", "/subjects/ref-import/versions/3"),
        s("mode-import-id", "GET", "/schemas/ids/500"),
        s("mode-delete-subject", "DELETE", "/mode/ref-import"),
        s("mode-get-global-after", "GET", "/mode"),
        # transitive levels
        s("trans-config-none", "PUT", "/config/ref-trans", {"compatibility": "NONE"}),
        _reg("trans-register-v1", "ref-trans", TRANS_V1),
        _reg("trans-register-v2", "ref-trans", TRANS_V2),
        s("trans-config-backward-transitive", "PUT", "/config/ref-trans",
          {"compatibility": "BACKWARD_TRANSITIVE"}),
        s("trans-check-v3-verbose", "POST",
          "/compatibility/subjects/ref-trans/versions?verbose=true", {"schema": TRANS_V3}),
        _reg("trans-register-v3-transitive", "ref-trans", TRANS_V3),
        s("trans-config-backward", "PUT", "/config/ref-trans", {"compatibility": "BACKWARD"}),
        _reg("trans-register-v3-backward", "ref-trans", TRANS_V3),
    ]
    # compatibility table
    for kind, base, candidates, stype in (("avro", AVRO_BASE, AVRO_CANDIDATES, None),
                                          ("json", JSON_BASE, JSON_CANDIDATES, "JSON"),
                                          ("proto", PROTO_BASE, PROTO_CANDIDATES, "PROTOBUF")):
        subject = f"ref-table-{kind}"
        steps.append(_reg(f"table-{kind}-base", subject, base, stype))
        for level in LEVELS:
            steps.append(s(f"table-{kind}-level-{level}", "PUT", f"/config/{subject}",
                           {"compatibility": level}))
            for cname, cand in candidates.items():
                body = {"schema": cand}
                if stype:
                    body["schemaType"] = stype
                steps.append(s(f"table-{kind}-{level}-{cname}", "POST",
                               f"/compatibility/subjects/{subject}/versions/latest?verbose=true",
                               body))
    steps += [
        # deletes
        s("del-config-none", "PUT", "/config/ref-del", {"compatibility": "NONE"}),
        _reg("del-register-v1", "ref-del", TRANS_V1),
        _reg("del-register-v2", "ref-del", TRANS_V3),
        s("del-version-permanent-first", "DELETE", "/subjects/ref-del/versions/2?permanent=true"),
        s("del-version-soft", "DELETE", "/subjects/ref-del/versions/2"),
        s("del-versions-after-soft", "GET", "/subjects/ref-del/versions"),
        s("del-versions-deleted", "GET", "/subjects/ref-del/versions?deleted=true"),
        s("del-version-soft-again", "DELETE", "/subjects/ref-del/versions/2"),
        s("del-version-get-soft-deleted", "GET", "/subjects/ref-del/versions/2"),
        s("del-version-get-soft-deleted-flag", "GET", "/subjects/ref-del/versions/2?deleted=true"),
        s("del-version-permanent", "DELETE", "/subjects/ref-del/versions/2?permanent=true"),
        s("del-version-invalid", "DELETE", "/subjects/ref-del/versions/abc"),
        s("del-subject-permanent-first", "DELETE", "/subjects/ref-del?permanent=true"),
        s("del-subject-soft", "DELETE", "/subjects/ref-del"),
        s("del-subjects-after-soft", "GET", "/subjects"),
        s("del-subjects-deleted", "GET", "/subjects?deleted=true"),
        s("del-subject-soft-again", "DELETE", "/subjects/ref-del"),
        s("del-subject-lookup-soft-deleted", "POST", "/subjects/ref-del", {"schema": TRANS_V1}),
        s("del-subject-permanent", "DELETE", "/subjects/ref-del?permanent=true"),
        s("del-subject-versions-after", "GET", "/subjects/ref-del/versions"),
        s("del-subject-missing", "DELETE", "/subjects/ref-missing"),
        _reg("del-reregister", "ref-del", TRANS_V1),
        # error answers
        s("err-malformed-json", "POST", "/subjects/ref-err/versions", raw="{not json",
          content_type=SR),
        s("err-missing-schema", "POST", "/subjects/ref-err/versions", {"schemaType": "AVRO"}),
        _reg("err-invalid-avro", "ref-err", '{"type": "recrd", "name": "X"}'),
        _reg("err-avro-not-json", "ref-err", "not a schema"),
        _reg("err-unknown-type", "ref-err", USER_V1, "XML"),
        _reg("err-wrong-type-for-subject", "ref-avro", JSON_V1, "JSON"),
        s("err-schema-not-string", "POST", "/subjects/ref-err/versions", {"schema": {"type": "string"}}),
        s("err-unknown-path", "GET", "/nothing/here"),
        s("err-method-not-allowed", "DELETE", "/schemas/types"),
        s("err-config-missing-subject", "GET", "/config/ref-missing"),
        s("err-mode-missing-subject", "GET", "/mode/ref-missing"),
        s("err-plain-json-content-type", "POST", "/subjects/ref-plain/versions",
          {"schema": TRANS_V1}, content_type="application/json"),
        s("err-text-content-type", "POST", "/subjects/ref-text/versions",
          {"schema": TRANS_V1}, content_type="text/plain"),
        # final listings
        s("subjects-final", "GET", "/subjects"),
        s("subjects-prefix", "GET", "/subjects?subjectPrefix=ref-avro"),
        s("schemas-list", "GET", "/schemas"),
        s("config-global-final", "GET", "/config"),
    ]
    return steps


# --- REST proxy ---------------------------------------------------------------------------

REST_TOPICS = {"ref-gw-bin": 2, "ref-gw-json": 1, "ref-gw-avro": 1, "ref-gw-jsonschema": 1,
               "ref-gw-proto": 1}

GW_AVRO = avro_record("Reading", [{"name": "sensor", "type": "string"},
                                  {"name": "value", "type": "double"}])
GW_JSONSCHEMA = _j({"type": "object", "properties": {"sensor": {"type": "string"},
                                                     "value": {"type": "number"}}})
GW_PROTO = ('syntax = "proto3";\npackage ref;\n\nmessage Reading {\n  string sensor = 1;\n'
            '  double value = 2;\n}\n')


def _rest(name, method, path, json_body=None, content_type=None, **kw) -> dict:
    step = {"name": name, "service": "rest", "method": method, "path": path}
    if json_body is not None:
        step["json"] = json_body
        step["content_type"] = content_type or V2
    elif content_type:
        step["content_type"] = content_type
    step.update(kw)
    return step


def _b64(text: str) -> str:
    import base64
    return base64.b64encode(text.encode()).decode()


def _consumer(group: str, inst: str, fmt: str, topic: str, partition: int,
              accept: str, min_items: int = 2) -> list[dict]:
    base = f"/consumers/{group}/instances/{inst}"
    r = _rest
    return [
        r(f"{fmt}-consumer-create", "POST", f"/consumers/{group}",
          {"name": inst, "format": fmt, "auto.offset.reset": "earliest"}),
        r(f"{fmt}-consumer-assign", "POST", f"{base}/assignments",
          {"partitions": [{"topic": topic, "partition": partition}]}),
        r(f"{fmt}-consumer-seek-beginning", "POST", f"{base}/positions/beginning",
          {"partitions": [{"topic": topic, "partition": partition}]}, retry_status=[409]),
        r(f"{fmt}-consumer-poll", "GET", f"{base}/records?timeout=1000", accept=accept,
          until={"min_items": min_items, "tries": 20}),
        r(f"{fmt}-consumer-delete", "DELETE", base),
    ]


def rest_steps() -> list[dict]:
    r = _rest
    g = "/consumers/ref-gw-group/instances/ref-inst"
    steps = [
        r("brokers", "GET", "/brokers"),
        # Karapace caches topic metadata for a few seconds: wait until it lists the new ones
        r("topics", "GET", "/topics", until={"min_items": len(REST_TOPICS), "tries": 60}),
        r("topic-bin", "GET", "/topics/ref-gw-bin"),
        r("topic-missing", "GET", "/topics/ref-gw-missing"),
        r("partitions-bin", "GET", "/topics/ref-gw-bin/partitions"),
        r("partition-bin-0", "GET", "/topics/ref-gw-bin/partitions/0"),
        r("partition-missing", "GET", "/topics/ref-gw-bin/partitions/7"),
        r("partitions-missing-topic", "GET", "/topics/ref-gw-nothing/partitions"),
        r("partition-offsets-empty", "GET", "/topics/ref-gw-bin/partitions/1/offsets"),
        # produce
        r("produce-binary-partitioned", "POST", "/topics/ref-gw-bin", {"records": [
            {"value": _b64("v0"), "partition": 0}, {"value": _b64("v1"), "partition": 1},
            {"value": _b64("v2"), "partition": 1}]}, BINARY),
        r("produce-binary-keyed", "POST", "/topics/ref-gw-bin", {"records": [
            {"key": _b64("alpha"), "value": _b64("k0")}, {"key": _b64("beta"), "value": _b64("k1")},
            {"key": _b64("gamma"), "value": _b64("k2")}, {"key": _b64("alpha"), "value": _b64("k3")}]},
          BINARY),
        r("produce-binary-to-partition", "POST", "/topics/ref-gw-bin/partitions/1", {"records": [
            {"value": _b64("p0")}, {"key": _b64("alpha"), "value": _b64("p1")}]}, BINARY),
        r("produce-binary-null-value", "POST", "/topics/ref-gw-bin/partitions/0", {"records": [
            {"key": _b64("tomb"), "value": None}]}, BINARY),
        r("partition-offsets-after", "GET", "/topics/ref-gw-bin/partitions/1/offsets"),
        r("produce-json", "POST", "/topics/ref-gw-json", {"records": [
            {"value": {"a": 1, "b": [True, None]}}, {"key": "k", "value": "text"}]}, JSONF),
        r("produce-avro-inline", "POST", "/topics/ref-gw-avro", {
            "value_schema": GW_AVRO, "records": [{"value": {"sensor": "s1", "value": 1.5}}]}, AVROF,
          capture={"avro_id": "value_schema_id"}),
        r("produce-avro-by-id", "POST", "/topics/ref-gw-avro", {
            "value_schema_id": "${avro_id}", "records": [{"value": {"sensor": "s2", "value": 2.5}}]},
          AVROF),
        r("produce-avro-key-and-value", "POST", "/topics/ref-gw-avro", {
            "key_schema": '"string"', "value_schema_id": "${avro_id}",
            "records": [{"key": "k1", "value": {"sensor": "s3", "value": 3.5}}]}, AVROF),
        r("produce-avro-bad-value", "POST", "/topics/ref-gw-avro", {
            "value_schema_id": "${avro_id}", "records": [{"value": {"sensor": 7}}]}, AVROF),
        r("produce-avro-unknown-id", "POST", "/topics/ref-gw-avro", {
            "value_schema_id": 4242, "records": [{"value": {"sensor": "s", "value": 1.0}}]}, AVROF),
        r("produce-avro-no-schema", "POST", "/topics/ref-gw-avro", {
            "records": [{"value": {"sensor": "s", "value": 1.0}}]}, AVROF),
        r("produce-json-to-partition", "POST", "/topics/ref-gw-json/partitions/0", {"records": [
            {"key": {"id": 7}, "value": [1, 2, 3]}]}, JSONF),
        r("produce-jsonschema-inline", "POST", "/topics/ref-gw-jsonschema", {
            "value_schema": GW_JSONSCHEMA, "records": [{"value": {"sensor": "s1", "value": 3}},
                                                      {"value": {"sensor": "s2", "value": 4}}]},
          JSONSCHEMAF, capture={"js_id": "value_schema_id"}),
        r("produce-jsonschema-invalid-value", "POST", "/topics/ref-gw-jsonschema", {
            "value_schema_id": "${js_id}", "records": [{"value": {"sensor": 1}}]}, JSONSCHEMAF),
        r("produce-protobuf-inline", "POST", "/topics/ref-gw-proto", {
            "value_schema": GW_PROTO, "records": [{"value": {"sensor": "s1", "value": 5.0}},
                                                 {"value": {"sensor": "s2", "value": 6.0}}]},
          PROTOF, capture={"proto_id": "value_schema_id"}),
        # bad produce input
        r("produce-missing-topic", "POST", "/topics/ref-gw-missing", {"records": [
            {"value": _b64("x")}]}, BINARY),
        r("produce-missing-partition", "POST", "/topics/ref-gw-bin/partitions/9", {"records": [
            {"value": _b64("x")}]}, BINARY),
        r("produce-record-partition-missing", "POST", "/topics/ref-gw-bin", {"records": [
            {"value": _b64("x"), "partition": 9}]}, BINARY),
        r("produce-malformed-json", "POST", "/topics/ref-gw-bin", raw="{\"records\": [",
          content_type=BINARY),
        r("produce-no-records", "POST", "/topics/ref-gw-bin", {"value": _b64("x")}, BINARY),
        r("produce-empty-records", "POST", "/topics/ref-gw-bin", {"records": []}, BINARY),
        r("produce-bad-base64", "POST", "/topics/ref-gw-bin", {"records": [
            {"value": "***not base64***"}]}, BINARY),
        r("produce-unknown-format", "POST", "/topics/ref-gw-bin", {"records": [
            {"value": _b64("x")}]}, "application/vnd.kafka.morse.v2+json"),
        r("produce-text-content-type", "POST", "/topics/ref-gw-bin", {"records": [
            {"value": _b64("x")}]}, "text/plain"),
        r("partition-offsets-unchanged", "GET", "/topics/ref-gw-bin/partitions/1/offsets"),
        # consumer instance lifecycle (binary)
        r("consumer-create", "POST", "/consumers/ref-gw-group",
          {"name": "ref-inst", "format": "binary", "auto.offset.reset": "earliest",
           "auto.commit.enable": "false"}),
        r("consumer-create-duplicate", "POST", "/consumers/ref-gw-group",
          {"name": "ref-inst", "format": "binary"}),
        r("consumer-create-bad-format", "POST", "/consumers/ref-gw-group",
          {"name": "ref-inst-2", "format": "morse"}),
        r("consumer-create-bad-reset", "POST", "/consumers/ref-gw-group",
          {"name": "ref-inst-3", "format": "binary", "auto.offset.reset": "sideways"}),
        r("consumer-unknown-instance-poll", "GET", "/consumers/ref-gw-group/instances/nobody/records",
          accept=BINARY),
        r("consumer-subscribe", "POST", f"{g}/subscription", {"topics": ["ref-gw-bin"]}),
        r("consumer-subscription", "GET", f"{g}/subscription"),
        r("consumer-unsubscribe", "DELETE", f"{g}/subscription"),
        r("consumer-subscription-after", "GET", f"{g}/subscription"),
        r("consumer-assign", "POST", f"{g}/assignments",
          {"partitions": [{"topic": "ref-gw-bin", "partition": 1}]}),
        r("consumer-assignments", "GET", f"{g}/assignments"),
        r("consumer-seek-beginning", "POST", f"{g}/positions/beginning",
          {"partitions": [{"topic": "ref-gw-bin", "partition": 1}]}, retry_status=[409]),
        r("consumer-poll", "GET", f"{g}/records?timeout=1000", accept=BINARY,
          until={"min_items": 1, "tries": 20}),
        r("consumer-seek-offset", "POST", f"{g}/positions",
          {"offsets": [{"topic": "ref-gw-bin", "partition": 1, "offset": 1}]}),
        r("consumer-poll-from-offset", "GET", f"{g}/records?timeout=1000", accept=BINARY,
          until={"min_items": 1, "tries": 20}),
        r("consumer-commit", "POST", f"{g}/offsets",
          {"offsets": [{"topic": "ref-gw-bin", "partition": 1, "offset": 2}]}),
        r("consumer-committed", "GET", f"{g}/offsets",
          {"partitions": [{"topic": "ref-gw-bin", "partition": 1}]}),
        r("consumer-seek-end", "POST", f"{g}/positions/end",
          {"partitions": [{"topic": "ref-gw-bin", "partition": 1}]}),
        r("consumer-poll-at-end", "GET", f"{g}/records?timeout=500", accept=BINARY),
        r("consumer-poll-wrong-accept", "GET", f"{g}/records", accept=JSONF),
        r("consumer-seek-unassigned", "POST", f"{g}/positions",
          {"offsets": [{"topic": "ref-gw-json", "partition": 0, "offset": 0}]}),
        r("consumer-delete", "DELETE", g),
        r("consumer-poll-deleted", "GET", f"{g}/records", accept=BINARY),
        r("consumer-delete-again", "DELETE", g),
    ]
    steps += _consumer("ref-gw-json-group", "ref-json-inst", "json", "ref-gw-json", 0, JSONF, 3)
    steps += _consumer("ref-gw-avro-group", "ref-avro-inst", "avro", "ref-gw-avro", 0, AVROF, 3)
    steps += _consumer("ref-gw-js-group", "ref-js-inst", "jsonschema", "ref-gw-jsonschema", 0,
                       JSONSCHEMAF)
    steps += _consumer("ref-gw-proto-group", "ref-proto-inst", "protobuf", "ref-gw-proto", 0,
                       PROTOF)
    steps += [
        r("v3-clusters", "GET", "/v3/clusters"),
        r("topics-final", "GET", "/topics"),
    ]
    return steps


TRANSCRIPTS = {
    "registry": {"steps": registry_steps, "setup_topics": {}},
    "rest": {"steps": rest_steps, "setup_topics": REST_TOPICS},
}
