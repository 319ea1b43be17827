"""Every message and version checked against Kafka's own definitions, field by field.

The reference folder (``--kafka-protocol``) is parsed here, with a comment stripper and
version parser of this file's own, independently of ``kbroker.wire.model``. Compared:

- the set of messages, their kind, API key, valid/flexible/deprecated versions;
- every field of every struct: name, Python attribute, type, versions, nullable versions,
  tagged versions and tag, default (as the compiled classes expose it), ignorable, map key,
  field-level flexible versions, and entityType/zeroCopy kept in ``messages.json``;
- the encoded layout at every version: a small interpreting encoder written here from the
  reference definitions must produce exactly the bytes kbroker's compiled codec produces,
  and kbroker must decode them back;
- ``messages.json`` holds facts only and regenerates byte for byte from the reference.
"""
from __future__ import annotations

import importlib.util
import json
import math
import re
import struct
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kbroker.wire import messages
from kbroker.wire.model import SCHEMA_FILE

from .test_codec_roundtrip import message_strategy

REPO = Path(__file__).resolve().parents[2]
SUBFOLDERS = ("metadata", "group-coordinator", "transaction-coordinator", "raft")
OPEN = math.inf


# --------------------------------------------------------------------------- own parsing

def strip_json_comments(text: str) -> str:
    """Remove ``//`` and ``/* */`` comments outside string literals."""
    out, i, n = [], 0, len(text)
    in_str = False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_str = False
            i += 1
        elif ch == '"':
            in_str = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def vrange(text) -> tuple[float, float]:
    """'3+' → (3, inf); '1-4' → (1, 4); '2' → (2, 2); None/'none' → empty (1, 0)."""
    if text is None or text == "none":
        return (1, 0)
    text = str(text).strip()
    if text.endswith("+"):
        return (int(text[:-1]), OPEN)
    if "-" in text:
        a, b = text.split("-")
        return (int(a), int(b))
    return (int(text), int(text))


def inr(v: int, r) -> bool:
    return r[0] <= v <= r[1]


def model_range(vs) -> tuple[float, float]:
    if vs.empty:
        return (1, 0)
    return (vs.low, OPEN if vs.high == vs.OPEN else vs.high)


def snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0:
            prev, nxt = name[i - 1], name[i + 1] if i + 1 < len(name) else ""
            if prev.islower() or prev.isdigit() or (prev.isupper() and nxt.islower()):
                out.append("_")
        out.append(ch.lower())
    return "".join(out)


def load_reference(root: Path) -> dict[str, dict]:
    defs = {}
    paths = sorted(root.glob("*.json")) + [p for sub in SUBFOLDERS for p in sorted((root / sub).glob("*.json"))]
    for path in paths:
        d = json.loads(strip_json_comments(path.read_text()))
        if d.get("validVersions") == "none":
            continue  # a removed API's tombstone (Kafka 4: LeaderAndIsr, UpdateMetadata, ...)
        common = {c["name"]: c for c in d.get("commonStructs", [])}

        def resolve(fields):
            for f in fields:
                elem = f["type"][2:] if f["type"].startswith("[]") else f["type"]
                if "fields" not in f and elem in common:
                    f["fields"] = common[elem]["fields"]
                    f["_common"] = True
                if "fields" in f:
                    resolve(f["fields"])
        resolve(d.get("fields", []))
        defs[d["name"]] = d
    return defs


@pytest.fixture(scope="module")
def reference(kafka_protocol_dir) -> dict[str, dict]:
    return load_reference(kafka_protocol_dir)


PRIMS = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
         "string", "bytes", "uuid", "records"}
INTS = {"int8", "int16", "uint16", "int32", "uint32", "int64"}


def expected_default(f: dict):
    """The default a field should have, by the definition format's rules."""
    t, raw = f["type"], f.get("default")
    if t.startswith("[]"):
        return None if raw == "null" else []
    elem = t
    if elem not in PRIMS:
        return None if raw == "null" else "struct"
    if raw == "null":
        return None
    if raw is not None and not isinstance(raw, str):
        raw = json.dumps(raw)
    if elem in INTS:
        if not raw:
            return 0
        return int(raw, 16) if raw.lower().startswith(("0x", "-0x")) else int(raw)
    if elem == "float64":
        return float(raw) if raw else 0.0
    if elem == "bool":
        return raw == "true"
    if elem == "string":
        return raw or ""
    if elem == "uuid":
        return uuid.UUID(raw) if raw else uuid.UUID(int=0)
    if elem == "bytes":
        return b""
    return None  # records


# --------------------------------------------------------------------------- field by field

def test_same_set_of_messages(reference):
    assert sorted(reference) == sorted(messages.specs())


def _compare_fields(msg: str, path: str, ref_fields: list[dict], spec_fields, cls: type):
    assert [f["name"] for f in ref_fields] == [f.name for f in spec_fields], f"{msg}{path}: field order"
    instance = cls()
    for rf, sf in zip(ref_fields, spec_fields):
        where = f"{msg}{path}.{rf['name']}"
        assert sf.attr == snake(rf["name"]), where
        assert sf.type == rf["type"], where
        assert model_range(sf.versions) == vrange(rf.get("versions", rf.get("taggedVersions"))), where
        assert model_range(sf.nullable) == vrange(rf.get("nullableVersions")), where
        assert model_range(sf.tagged) == vrange(rf.get("taggedVersions")), where
        assert sf.tag == (int(rf["tag"]) if "tag" in rf else None), where
        assert sf.ignorable == bool(rf.get("ignorable", False)), where
        assert sf.map_key == bool(rf.get("mapKey", False)), where
        if "flexibleVersions" in rf:
            assert model_range(sf.flexible) == vrange(rf["flexibleVersions"]), where
        else:
            assert sf.flexible is None, where
        # the default as the compiled class exposes it
        exp = expected_default(rf)
        got = getattr(instance, sf.attr)
        if exp == "struct":
            sub = getattr(cls, sf.element)
            assert type(got) is sub, where
        else:
            assert got == exp and type(got) is type(exp), (where, got, exp)
        if "fields" in rf:
            sub = getattr(cls, sf.element)
            assert sub._spec is sf.struct, where
            _compare_fields(msg, f"{path}.{rf['name']}", rf["fields"], sf.struct.fields, sub)
        else:
            assert sf.struct is None, where
            assert sf.element in PRIMS, where


def test_every_message_field_by_field(reference):
    for name, ref in reference.items():
        spec = messages.specs()[name]
        cls = messages.get(name)
        assert spec.kind == ref["type"], name
        assert spec.api_key == ref.get("apiKey"), name
        assert model_range(spec.valid) == vrange(ref.get("validVersions")), name
        assert model_range(spec.flexible) == vrange(ref.get("flexibleVersions")), name
        assert model_range(spec.deprecated) == vrange(ref.get("deprecatedVersions")), name
        assert spec.latest_unstable == bool(ref.get("latestVersionUnstable", False)), name
        assert spec.listeners == tuple(ref.get("listeners", ())), name
        _compare_fields(name, "", ref["fields"], spec.struct.fields, cls)


def test_api_keys_pair_requests_and_responses(reference):
    keys = {ref["apiKey"] for ref in reference.values() if ref["type"] == "request"}
    assert messages.api_keys() == sorted(keys)
    for ref in reference.values():
        if ref["type"] in ("request", "response"):
            lookup = messages.request_class if ref["type"] == "request" else messages.response_class
            assert lookup(ref["apiKey"]).__name__ == ref["name"]


def _walk(fields):
    for f in fields:
        yield f
        yield from _walk(f.get("fields", []))


def test_schema_file_holds_facts_only_and_keeps_entity_types(reference):
    data = json.loads(SCHEMA_FILE.read_text())
    allowed_field = {"name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default",
                     "mapKey", "ignorable", "flexibleVersions", "zeroCopy", "entityType", "fields"}
    for m in data["messages"]:
        for f in _walk(m["fields"] + [x for c in m.get("commonStructs", []) for x in c["fields"]]):
            assert set(f) <= allowed_field, (m["name"], f["name"], set(f) - allowed_field)
        common = {c["name"]: c["fields"] for c in m.get("commonStructs", [])}

        def same(ours, refs, where):
            assert [f["name"] for f in ours] == [f["name"] for f in refs], where
            for o, r in zip(ours, refs):
                w = f"{where}.{r['name']}"
                assert (o.get("entityType"), o.get("zeroCopy")) == (r.get("entityType"), r.get("zeroCopy")), w
                if "fields" in r:
                    elem = o["type"][2:] if o["type"].startswith("[]") else o["type"]
                    same(o.get("fields") or common[elem], r["fields"], w)
        same(m["fields"], reference[m["name"]]["fields"], m["name"])
    assert "about" not in SCHEMA_FILE.read_text()


def test_schema_file_regenerates_identically(kafka_protocol_dir, tmp_path):
    spec = importlib.util.spec_from_file_location("genschema", REPO / "tools" / "genschema.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = gen.render(kafka_protocol_dir)
    assert text == SCHEMA_FILE.read_text(), "messages.json is stale: run tools/genschema.py"
    assert gen.render(kafka_protocol_dir) == text  # deterministic


# --------------------------------------------------------------------------- layout

FMT = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I",
       "int64": ">q", "float64": ">d", "bool": ">?"}


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


class RefEncoder:
    """Encodes an object by reading the reference definition at run time (slow, obvious)."""

    def __init__(self, version: int, flexible: bool):
        self.v = version
        self.flex = flexible

    def length(self, n: int | None, width: str, compact: bool) -> bytes:
        if compact:
            return uvarint(0 if n is None else n + 1)
        return struct.pack(width, -1 if n is None else n)

    def value(self, f: dict, elem: str, val) -> bytes:
        compact = self.flex and inr(self.v, vrange(f.get("flexibleVersions", "0+")))
        if elem in FMT:
            return struct.pack(FMT[elem], val)
        if elem == "uuid":
            return val.bytes
        if elem == "string":
            if val is None:
                return self.length(None, ">h", compact)
            b = val.encode()
            return self.length(len(b), ">h", compact) + b
        if elem in ("bytes", "records"):
            if val is None:
                return self.length(None, ">i", compact)
            b = bytes(val)
            return self.length(len(b), ">i", compact) + b
        return self.struct(f["fields"], val)

    def field(self, f: dict, val) -> bytes:
        t = f["type"]
        if t.startswith("[]"):
            if val is None:
                return self.length(None, ">i", self.flex)
            return self.length(len(val), ">i", self.flex) + b"".join(self.value(f, t[2:], x) for x in val)
        if t not in PRIMS and inr(self.v, vrange(f.get("nullableVersions"))):
            return b"\xff" if val is None else b"\x01" + self.value(f, t, val)
        return self.value(f, t, val)

    def struct(self, fields: list[dict], obj) -> bytes:
        out = b""
        tagged = []
        for f in fields:
            if not inr(self.v, vrange(f.get("versions", f.get("taggedVersions")))):
                continue
            val = getattr(obj, snake(f["name"]))
            if self.flex and inr(self.v, vrange(f.get("taggedVersions"))):
                default = expected_default(f)
                if default == "struct":  # Kafka writes a null or non-default struct
                    is_default = val is not None and val == type(val)()
                else:
                    is_default = val == default
                if not is_default:
                    tagged.append((int(f["tag"]), self.field(f, val)))
                continue
            out += self.field(f, val)
        if self.flex:
            tagged += list((obj._unknown_tags or {}).items())
            tagged.sort()
            out += uvarint(len(tagged))
            for tag, data in tagged:
                out += uvarint(tag) + uvarint(len(data)) + data
        return out


@pytest.mark.parametrize("name", sorted(messages.specs()))
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_encoded_layout_matches_reference(name, data, request):
    ref = load_reference_cached(request)[name]
    cls = messages.get(name)
    lo, hi = vrange(ref["validVersions"])
    for v in range(lo, int(hi) + 1):
        flexible = inr(v, vrange(ref.get("flexibleVersions")))
        obj = data.draw(message_strategy(name, v), label=f"v{v}")
        expected = RefEncoder(v, flexible).struct(ref["fields"], obj)
        assert obj.encode(v) == expected, f"{name} v{v}: layout differs from the reference"
        assert cls.decode(expected, v) == obj


_CACHE: dict = {}


def load_reference_cached(request) -> dict:
    root = request.getfixturevalue("kafka_protocol_dir")
    if root not in _CACHE:
        _CACHE[root] = load_reference(root)
    return _CACHE[root]


def test_snake_case_agrees_with_model():
    from kbroker.wire.model import snake_case
    for name in ["PartitionIndex", "ClientIDs", "TopicId", "UUID", "ACLs", "MaxBytes", "V2", "IsrLeaderEpoch"]:
        assert snake(name) == snake_case(name), name
