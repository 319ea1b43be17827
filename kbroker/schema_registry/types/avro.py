"""AVRO schemas: parsing, canonical forms and fingerprints.

Parsing is fastavro's (``fastavro.schema.parse_schema``) plus the checks the Avro spec
asks for that fastavro leaves out (names, union branches, duplicate fields). References
are named types defined in other schemas: each referenced text is parsed first into a
shared table of named types, so the schema under parse may use their full names.

Canonical forms: ``canonical()`` is the schema as Avro's Java ``Schema.toString()``
writes it (what Confluent's registry stores, compares and returns), ``normalized()`` that
with attributes and aliases sorted, ``parsing_canonical_form()`` and ``fingerprint()``
the spec's "Parsing Canonical Form" and its CRC-64-AVRO fingerprint.

The reader/writer rules, with the pairwise ``can_read`` the levels use, are in
:mod:`.avro_resolution` (which imports this module, never the other way).

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
