"""AVRO schemas: parsing, canonical forms, fingerprints and the reader/writer rules.

Parsing is fastavro's (``fastavro.schema.parse_schema``) plus the checks the Avro spec
asks for that fastavro leaves out (names, union branches, duplicate fields). References
are named types defined in other schemas: each referenced text is parsed first into a
shared table of named types, so the schema under parse may use their full names.

``can_read(reader, writer)`` keeps the schema-resolution rules of the Avro specification
("Schema Resolution"), in the form Apache Avro's Java ``SchemaCompatibility`` reports them
and Confluent's registry passes on: each incompatibility has a type (NAME_MISMATCH,
FIXED_SIZE_MISMATCH, MISSING_ENUM_SYMBOLS, READER_FIELD_MISSING_DEFAULT_VALUE,
TYPE_MISMATCH, MISSING_UNION_BRANCH), a JSON-pointer-like path into the reader schema and
a detail. Rules kept: promotions int→long→float→double and string↔bytes; record fields
matched by name or by the reader field's aliases, a reader field missing from the writer
needs a default; enum symbols of the writer must all be known to the reader unless the
reader enum has a default; named types match by unqualified name or the reader's
aliases; fixed sizes equal; arrays and maps recursively; a writer union needs every
branch readable, a reader union needs one branch that reads the writer.

Pure code: no I/O, no clock.
"""

from __future__ import annotations

import json
import re
from typing import Any

import fastavro.schema

from .base import ParsedSchema, SchemaError

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
NAMED = ("record", "error", "enum", "fixed")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --------------------------------------------------------------------------------------
# parsing


def _load_json(text: str, what: str) -> Any:
    if not isinstance(text, str):
        raise SchemaError(f"Invalid schema{what}: not a string")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise SchemaError(f"Invalid schema{what}: {e}") from None


def _fullname(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


class _Checker:
    """The spec's checks fastavro does not make, on the raw JSON (fastavro then parses)."""

    def __init__(self, known: set[str]) -> None:
        self.known = set(known)  # full names defined so far (references included)

    def check(self, node: Any, namespace: str | None, path: str) -> None:
        if isinstance(node, str):
            if node in PRIMITIVES:
                return
            if _fullname(node, namespace) in self.known or node in self.known:
                return
            raise SchemaError(f"Invalid schema: unknown type {node!r} at {path or '/'}")
        if isinstance(node, list):
            seen: set[str] = set()
            for i, branch in enumerate(node):
                if isinstance(branch, list):
                    raise SchemaError(f"Invalid schema: nested union at {path}/{i}")
                key = self._branch_key(branch, namespace)
                if key in seen:
                    raise SchemaError(f"Invalid schema: duplicate in union: {key} at {path}/{i}")
                seen.add(key)
                self.check(branch, namespace, f"{path}/{i}")
            return
        if not isinstance(node, dict):
            raise SchemaError(f"Invalid schema: {json.dumps(node)} is not a schema at {path or '/'}")
        if "type" not in node:
            raise SchemaError(f"Invalid schema: no type at {path or '/'}")
        typ = node["type"]
        if not isinstance(typ, str):
            raise SchemaError(f"Invalid schema: type must be a string at {path or '/'}")
        if typ in NAMED:
            namespace = self._define(node, namespace, path)
        if typ in ("record", "error"):
            fields = node.get("fields")
            if not isinstance(fields, list):
                raise SchemaError(f"Invalid schema: record {node.get('name')!r} has no fields list")
            names: set[str] = set()
            for i, field in enumerate(fields):
                if not isinstance(field, dict) or not isinstance(field.get("name"), str):
                    raise SchemaError(f"Invalid schema: field without a name at {path}/fields/{i}")
                fname = field["name"]
                if not _NAME_RE.fullmatch(fname):
                    raise SchemaError(f"Invalid schema: illegal field name {fname!r}")
                if fname in names:
                    raise SchemaError(f"Invalid schema: duplicate field {fname!r}")
                names.add(fname)
                if "type" not in field:
                    raise SchemaError(f"Invalid schema: field {fname!r} has no type")
                self.check(field["type"], namespace, f"{path}/fields/{i}/type")
        elif typ == "enum":
            symbols = node.get("symbols")
            if not isinstance(symbols, list):
                raise SchemaError(f"Invalid schema: enum {node.get('name')!r} has no symbols list")
        elif typ == "fixed":
            size = node.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise SchemaError(f"Invalid schema: fixed {node.get('name')!r} needs a size")
        elif typ == "array":
            if "items" not in node:
                raise SchemaError(f"Invalid schema: array without items at {path or '/'}")
            self.check(node["items"], namespace, f"{path}/items")
        elif typ == "map":
            if "values" not in node:
                raise SchemaError(f"Invalid schema: map without values at {path or '/'}")
            self.check(node["values"], namespace, f"{path}/values")
        elif typ not in PRIMITIVES:
            self.check(typ, namespace, f"{path}/type")

    def _define(self, node: dict, namespace: str | None, path: str) -> str | None:
        name = node.get("name")
        if not isinstance(name, str) or not name:
            raise SchemaError(f"Invalid schema: {node['type']} without a name at {path or '/'}")
        ns = node.get("namespace", namespace)
        if ns is not None and not isinstance(ns, str):
            raise SchemaError(f"Invalid schema: namespace of {name!r} is not a string")
        full = _fullname(name, ns)
        for part in full.split("."):
            if not _NAME_RE.fullmatch(part):
                raise SchemaError(f"Invalid schema: illegal name {full!r}")
        if full in PRIMITIVES:
            raise SchemaError(f"Invalid schema: {full!r} is a primitive type name")
        if full in self.known:
            raise SchemaError(f"Invalid schema: can't redefine: {full}")
        self.known.add(full)
        aliases = node.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise SchemaError(f"Invalid schema: aliases of {full!r} must be a list of names")
        return full.rpartition(".")[0] or None

    def _branch_key(self, branch: Any, namespace: str | None) -> str:
        if isinstance(branch, str):
            return branch if branch in PRIMITIVES else _fullname(branch, namespace)
        if isinstance(branch, dict):
            typ = branch.get("type")
            if typ in NAMED and isinstance(branch.get("name"), str):
                return _fullname(branch["name"], branch.get("namespace", namespace))
            if isinstance(typ, str):
                return typ
        return json.dumps(branch, sort_keys=True)


def _parse_into(text: str, named: dict[str, Any], what: str, validate: bool = True) -> Any:
    """Parse one schema text, adding its named types to ``named``; returns fastavro's form.
    ``validate=False`` accepts defaults that do not match their field's type."""
    raw = _load_json(text, what)
    _Checker(set(named)).check(raw, None, "")
    try:
        return fastavro.schema.parse_schema(
            raw, named, _write_hint=False, _force=True, _ignore_default_error=not validate
        )
    except fastavro.schema.UnknownType as e:
        raise SchemaError(f"Invalid schema{what}: unknown type {e.name!r}") from None
    except fastavro.schema.SchemaParseException as e:
        raise SchemaError(f"Invalid schema{what}: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as e:
        raise SchemaError(f"Invalid schema{what}: {type(e).__name__}: {e}") from None


def _parse_references(references: dict[str, str], validate: bool = True) -> dict[str, Any]:
    """Parse the referenced schemas in an order where each one's dependencies come first
    (the registry hands them over in that order; any order is accepted here)."""
    named: dict[str, Any] = {}
    pending = list(references.items())
    while pending:
        left = []
        for name, text in pending:
            trial = dict(named)
            try:
                _parse_into(text, trial, f" reference {name!r}", validate)
            except SchemaError:
                left.append((name, text))
                continue
            named = trial
        if len(left) == len(pending):
            name, text = left[0]
            _parse_into(text, dict(named), f" reference {name!r}", validate)  # the reason
        pending = left
    return named


class AvroSchema(ParsedSchema):
    """A parsed Avro schema. ``parsed`` is fastavro's form (named types referred to by
    full name after their definition), ``named`` every named type in reach (this schema's
    and its references'), ``raw`` the JSON as given.

    ``validate=False`` is for schemas already registered (replayed from ``_schemas``):
    like Confluent's registry for a schema that is not new, defaults are not checked
    against their types; names and structure still are."""

    schema_type = "AVRO"

    def __init__(
        self, text: str, references: dict[str, str] | None = None, validate: bool = True
    ) -> None:
        super().__init__(text, references)
        named = _parse_references(self.references, validate)
        self.ref_names = frozenset(named)
        self.raw = _load_json(text, "")
        self.parsed = _parse_into(text, named, "", validate)
        self.named = named
        # computed once: the registry compares and returns them often
        self._canonical = canonical_json(self.raw, normalize=False)
        self._normalized = canonical_json(self.raw, normalize=True)

    def canonical(self) -> str:
        return self._canonical

    def normalized(self) -> str:
        return self._normalized

    def parsing_canonical_form(self) -> str:
        """The Avro spec's Parsing Canonical Form (the input of fingerprints)."""
        return parsing_canonical_form(self.raw)

    def fingerprint(self) -> int:
        """The spec's 64-bit Rabin fingerprint (CRC-64-AVRO) of the canonical form."""
        return rabin_fingerprint(self.parsing_canonical_form().encode())


def parse(
    text: str, references: dict[str, str] | None = None, validate: bool = True
) -> AvroSchema:
    return AvroSchema(text, references, validate)


# --------------------------------------------------------------------------------------
# canonical forms


def canonical_json(raw: Any, normalize: bool) -> str:
    """The schema as Avro's Java ``Schema.toString()`` writes it, which is the text
    Confluent's registry stores, compares and returns (its ``canonicalString``): compact
    JSON; named types as type, name, namespace (only where it changes), doc, body, other
    attributes, aliases; fields as name, type, doc, default, order (unless ascending),
    aliases, other attributes; a type already defined written as its name, short when in
    the enclosing namespace.

    With ``normalize`` (Confluent's ``normalize=true``) the other attributes and the
    aliases are sorted and empty docs dropped, so that schemas differing only in those
    normalise to the same text."""
    out = _JavaWriter(normalize).write(raw, None)
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)


_SCHEMA_RESERVED = {
    "type", "name", "namespace", "fields", "items", "size", "symbols", "values", "doc",
    "aliases", "default",
}
_FIELD_RESERVED = {"name", "type", "doc", "default", "order", "aliases"}


class _JavaWriter:
    def __init__(self, normalize: bool) -> None:
        self.normalize = normalize
        self.defined: set[str] = set()

    def _props(self, node: dict, reserved: set[str]) -> list[tuple[str, Any]]:
        props = [(k, v) for k, v in node.items() if k not in reserved]
        if self.normalize:
            props.sort()
        return props

    @staticmethod
    def _qualified(full: str, space: str | None) -> str:
        ns, _, short = full.rpartition(".")
        return short if (ns or None) == space else full

    def write(self, node: Any, space: str | None) -> Any:
        if isinstance(node, str):
            if node in PRIMITIVES:
                return node
            return self._qualified(_fullname(node, space), space)
        if isinstance(node, list):
            return [self.write(b, space) for b in node]
        typ = node["type"]
        if typ in NAMED:
            return self._named(node, space)
        out: dict[str, Any] = {"type": typ}
        if typ == "array":
            out["items"] = self.write(node["items"], space)
        elif typ == "map":
            out["values"] = self.write(node["values"], space)
        elif typ not in PRIMITIVES:
            return self.write(typ, space)
        props = self._props(node, _SCHEMA_RESERVED)
        if typ in PRIMITIVES and not props:
            return typ
        out.update(props)
        return out

    def _named(self, node: dict, space: str | None) -> Any:
        full = _fullname(node["name"], node.get("namespace", space))
        if full in self.defined:
            return self._qualified(full, space)
        self.defined.add(full)
        ns, _, short = full.rpartition(".")
        ns = ns or None
        out: dict[str, Any] = {"type": node["type"], "name": short}
        if ns is not None and ns != space:
            out["namespace"] = ns
        elif ns is None and space is not None:
            out["namespace"] = ""
        doc = node.get("doc")
        if doc is not None and not (self.normalize and doc == ""):
            out["doc"] = doc
        typ = node["type"]
        if typ in ("record", "error"):
            out["fields"] = [self._field(f, ns) for f in node["fields"]]
        elif typ == "enum":
            out["symbols"] = node["symbols"]
            if "default" in node:
                out["default"] = node["default"]
        else:
            out["size"] = node["size"]
        out.update(self._props(node, _SCHEMA_RESERVED))
        aliases = [self._qualified(_fullname(a, ns), ns) for a in node.get("aliases", [])]
        if aliases:
            out["aliases"] = sorted(set(aliases)) if self.normalize else aliases
        return out

    def _field(self, field: dict, space: str | None) -> dict:
        out: dict[str, Any] = {"name": field["name"], "type": self.write(field["type"], space)}
        if "doc" in field:
            out["doc"] = field["doc"]
        if "default" in field:
            out["default"] = field["default"]
        order = field.get("order", "ascending")
        if isinstance(order, str) and order.lower() != "ascending":
            out["order"] = order.lower()
        aliases = field.get("aliases", [])
        if aliases:
            out["aliases"] = sorted(set(aliases)) if self.normalize else list(aliases)
        out.update(self._props(field, _FIELD_RESERVED))
        return out


def parsing_canonical_form(raw: Any) -> str:
    """The Avro spec's Parsing Canonical Form: full names, only the attributes that
    matter for reading (type, name, fields, symbols, items, values, size), in that
    order, no whitespace."""
    return json.dumps(_pcf(raw, None), separators=(",", ":"), ensure_ascii=False)


def _pcf(node: Any, namespace: str | None) -> Any:
    if isinstance(node, str):
        return node if node in PRIMITIVES else _fullname(node, namespace)
    if isinstance(node, list):
        return [_pcf(b, namespace) for b in node]
    typ = node["type"]
    if typ in NAMED:
        full = _fullname(node["name"], node.get("namespace", namespace))
        ns = full.rpartition(".")[0] or None
        if typ == "enum":
            return {"name": full, "type": "enum", "symbols": node["symbols"]}
        if typ == "fixed":
            return {"name": full, "type": "fixed", "size": node["size"]}
        return {
            "name": full,
            "type": "record",
            "fields": [{"name": f["name"], "type": _pcf(f["type"], ns)} for f in node["fields"]],
        }
    if typ == "array":
        return {"type": "array", "items": _pcf(node["items"], namespace)}
    if typ == "map":
        return {"type": "map", "values": _pcf(node["values"], namespace)}
    if typ in PRIMITIVES:
        return typ
    return _fullname(typ, namespace)


_EMPTY64 = 0xC15D213AA4D7A795


def _rabin_table() -> list[int]:
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_EMPTY64 & -(fp & 1))
        table.append(fp)
    return table


_TABLE = _rabin_table()


def rabin_fingerprint(data: bytes) -> int:
    """CRC-64-AVRO as the spec defines it ("Schema Fingerprints"), as a signed 64-bit
    number like Java's ``SchemaNormalization.parsingFingerprint64``."""
    fp = _EMPTY64
    for byte in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ byte) & 0xFF]
    return fp - (1 << 64) if fp >= 1 << 63 else fp


# --------------------------------------------------------------------------------------
# reader/writer resolution


_REASONS = {
    "NAME_MISMATCH": "The name of the schema has changed (path '{path}')",
    "FIXED_SIZE_MISMATCH": (
        "The size of FIXED type field at path '{path}' in the {reader} schema does not match "
        "with the {writer} schema"
    ),
    "MISSING_ENUM_SYMBOLS": (
        "The {reader} schema is missing enum symbols '{info}' at path '{path}' in the "
        "{writer} schema"
    ),
    "READER_FIELD_MISSING_DEFAULT_VALUE": (
        "The field '{info}' at path '{path}' in the {reader} schema has no default value and "
        "is missing in the {writer} schema"
    ),
    "TYPE_MISMATCH": (
        "The type (path '{path}') of a field in the {reader} schema does not match with the "
        "{writer} schema"
    ),
    "MISSING_UNION_BRANCH": (
        "The {reader} schema is missing a type inside a union field at path '{path}' in the "
        "{writer} schema"
    ),
}


class Incompatibility:
    """One reason a reader cannot read a writer's data: ``kind`` is one of Avro's
    SchemaIncompatibilityType names, ``path`` a JSON pointer into the reader schema,
    ``info`` the detail Avro gives (a field name, the missing symbols, the two types)."""

    __slots__ = ("kind", "path", "info")

    def __init__(self, kind: str, path: str, info: str) -> None:
        self.kind, self.path, self.info = kind, path, info

    def message(self, reader: str = "reader", writer: str = "writer") -> str:
        """Confluent's wording, the reader and writer named as the caller says ("new" and
        "old" for a BACKWARD check, the other way round for FORWARD)."""
        reason = _REASONS[self.kind].format(
            path=self.path, info=self.info, reader=reader, writer=writer
        )
        return f"{{errorType:'{self.kind}', description:'{reason}', additionalInfo:'{self.info}'}}"

    def __repr__(self) -> str:
        return f"Incompatibility({self.kind!r}, {self.path!r}, {self.info!r})"


def can_read(
    reader: AvroSchema, writer: AvroSchema, reader_label: str = "reader",
    writer_label: str = "writer",
) -> list[str]:
    """The pairwise rule: can data written with ``writer`` be read with ``reader``?
    Empty list = yes; otherwise Confluent's message for each incompatibility."""
    return [i.message(reader_label, writer_label) for i in check(reader, writer)]


def check(reader: AvroSchema, writer: AvroSchema) -> list[Incompatibility]:
    """Every incompatibility of reading ``writer``'s data with ``reader``, in the order
    Avro's Java ``SchemaCompatibility`` finds them (which is the order Confluent lists)."""
    return _Resolver(reader.named, writer.named).compatibility(reader.parsed, writer.parsed)


def _type_of(node: Any) -> str:
    if isinstance(node, list):
        return "union"
    if isinstance(node, dict):
        typ = node["type"]
        return "record" if typ == "error" else typ
    return node


def _java(node: Any) -> str:
    return _type_of(node).upper()


class _Resolver:
    """Walks a reader and a writer schema together. Results are memoised per pair of
    schema nodes; a pair met again while it is being checked (a recursive type) counts as
    compatible, as the spec's resolution of recursive types implies."""

    _IN_PROGRESS = object()

    def __init__(self, reader_named: dict[str, Any], writer_named: dict[str, Any]) -> None:
        self.rnamed, self.wnamed = reader_named, writer_named
        self.memo: dict[tuple[int, int], Any] = {}

    def _resolve(self, node: Any, named: dict[str, Any]) -> Any:
        if isinstance(node, str) and node not in PRIMITIVES:
            return named[node]
        return node

    def compatibility(self, reader: Any, writer: Any) -> list[Incompatibility]:
        return self._get("", reader, writer, [])

    def _get(self, token: str, reader: Any, writer: Any, loc: list[str]) -> list[Incompatibility]:
        reader = self._resolve(reader, self.rnamed)
        writer = self._resolve(writer, self.wnamed)
        loc.append(token)
        try:
            if isinstance(reader, str) and isinstance(writer, str):
                return self._calculate(reader, writer, loc)  # primitives: no memo needed
            key = (id(reader), id(writer))
            found = self.memo.get(key)
            if found is self._IN_PROGRESS:
                return []
            if found is not None:
                return list(found)
            self.memo[key] = self._IN_PROGRESS
            result = self._calculate(reader, writer, loc)
            self.memo[key] = result
            return list(result)
        finally:
            loc.pop()

    @staticmethod
    def _path(loc: list[str]) -> str:
        parts = [p.replace("~", "~0").replace("/", "~1") for p in loc[1:]]
        return "/" + "/".join(parts)

    def _incompatible(self, kind: str, info: str, loc: list[str]) -> list[Incompatibility]:
        return [Incompatibility(kind, self._path(loc), info)]

    def _type_mismatch(self, reader: Any, writer: Any, loc: list[str]) -> list[Incompatibility]:
        info = f"reader type: {_java(reader)} not compatible with writer type: {_java(writer)}"
        return self._incompatible("TYPE_MISMATCH", info, loc)

    def _calculate(self, reader: Any, writer: Any, loc: list[str]) -> list[Incompatibility]:
        rtype, wtype = _type_of(reader), _type_of(writer)
        if rtype == wtype:
            if rtype in PRIMITIVES:
                return []
            if rtype == "array":
                return self._get("items", reader["items"], writer["items"], loc)
            if rtype == "map":
                return self._get("values", reader["values"], writer["values"], loc)
            if rtype == "fixed":
                out = self._names(reader, writer, loc)
                if reader["size"] != writer["size"]:
                    loc.append("size")
                    info = f"expected: {writer['size']}, found: {reader['size']}"
                    out += self._incompatible("FIXED_SIZE_MISMATCH", info, loc)
                    loc.pop()
                return out
            if rtype == "enum":
                return self._names(reader, writer, loc) + self._symbols(reader, writer, loc)
            if rtype == "record":
                return self._names(reader, writer, loc) + self._fields(reader, writer, loc)
            # both unions: every writer branch must be readable by the reader union
            out = []
            for i, branch in enumerate(writer):
                loc.append(str(i))
                if self._get("", reader, branch, []):
                    branch_type = _java(self._resolve(branch, self.wnamed))
                    info = f"reader union lacking writer type: {branch_type}"
                    out += self._incompatible("MISSING_UNION_BRANCH", info, loc)
                loc.pop()
            return out
        if wtype == "union":
            # a reader of another type reads a writer union if it reads every branch
            out = []
            for i, branch in enumerate(writer):
                out += self._get(str(i), reader, branch, loc)
            return out
        if rtype == "union":
            for branch in reader:
                if not self._get("", branch, writer, []):
                    return []
            info = f"reader union lacking writer type: {_java(writer)}"
            return self._incompatible("MISSING_UNION_BRANCH", info, loc)
        if (rtype, wtype) in _PROMOTIONS:
            return []
        return self._type_mismatch(reader, writer, loc)

    def _names(self, reader: dict, writer: dict, loc: list[str]) -> list[Incompatibility]:
        rfull, wfull = reader["name"], writer["name"]
        if rfull.rpartition(".")[2] == wfull.rpartition(".")[2]:
            return []
        namespace = rfull.rpartition(".")[0] or None
        if wfull in (_fullname(a, namespace) for a in reader.get("aliases", [])):
            return []
        loc.append("name")
        out = self._incompatible("NAME_MISMATCH", f"expected: {wfull}", loc)
        loc.pop()
        return out

    def _symbols(self, reader: dict, writer: dict, loc: list[str]) -> list[Incompatibility]:
        missing = sorted(set(writer["symbols"]) - set(reader["symbols"]))
        if not missing:
            return []
        if reader.get("default") in reader["symbols"]:
            return []  # unknown symbols read as the reader's default (Avro 1.9+)
        loc.append("symbols")
        out = self._incompatible("MISSING_ENUM_SYMBOLS", "[" + ", ".join(missing) + "]", loc)
        loc.pop()
        return out

    def _fields(self, reader: dict, writer: dict, loc: list[str]) -> list[Incompatibility]:
        out: list[Incompatibility] = []
        by_name = {f["name"]: f for f in writer["fields"]}
        loc.append("fields")
        for pos, field in enumerate(reader["fields"]):
            loc.append(str(pos))
            matches = [by_name[n] for n in [field["name"], *field.get("aliases", [])] if n in by_name]
            if not matches:
                if "default" in field:
                    pass
                else:
                    ftype = self._resolve(field["type"], self.rnamed)
                    if _type_of(ftype) == "enum" and "default" in ftype:
                        # an enum field with an enum default reads as that default
                        out += self._get("type", ftype, writer, loc)
                    else:
                        out += self._incompatible(
                            "READER_FIELD_MISSING_DEFAULT_VALUE", field["name"], loc
                        )
            else:
                out += self._get("type", field["type"], matches[0]["type"], loc)
            loc.pop()
        loc.pop()
        return out


_PROMOTIONS = {
    ("long", "int"), ("float", "int"), ("float", "long"), ("double", "int"),
    ("double", "long"), ("double", "float"), ("bytes", "string"), ("string", "bytes"),
}
