"""Avro's reader/writer schema resolution, as Confluent's registry checks it.

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
branch readable, a reader union needs one branch that reads the writer; recursive types
(a pair met again while being checked counts as compatible).

Pure code: no I/O, no clock.
"""

from __future__ import annotations

from typing import Any

from .avro import PRIMITIVES, AvroSchema, _fullname



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
