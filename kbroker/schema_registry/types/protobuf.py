"""PROTOBUF schemas: parsing proto2/proto3 text, imports as references, the well-known
types, canonical forms.

Parsing is ``proto-schema-parser`` (a pure-Python ANTLR grammar of the .proto language:
no ``protoc`` binary). Its syntax errors become ``SchemaError``; on the tree it gives,
this module makes the checks protoc would make that matter to a registry: every import is
either a reference handed over (keyed by the import path, parsed the same way) or a
well-known file (``google/protobuf/*.proto``, ``google/type/*.proto``, Confluent's
``confluent/meta.proto`` and ``confluent/type/decimal.proto``, known here by the types
they define); every field, map, rpc and extend type resolves by protobuf's scoping rules;
field numbers are in range, outside 19000-19999 and unique in their message (oneof
members included); field and type names are unique in their scope; proto3 has no
``required`` fields and no groups, and its enums start at 0.

A schema (or reference) given as the base64 of a serialized ``FileDescriptorProto``, as
confluent-kafka's ``ProtobufSerializer`` registers it, is first turned back into .proto
text by :mod:`.protobuf_descriptor`.

The compatibility rules, with the pairwise ``can_read`` the levels use, are in
:mod:`.protobuf_diff` (which imports this module, never the other way).

Pure code: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from antlr4.error.ErrorListener import ErrorListener
from proto_schema_parser import ast
from proto_schema_parser.generator import Generator
from proto_schema_parser.parser import Parser

from .base import ParsedSchema, SchemaError
from .protobuf_descriptor import maybe_to_text

SCALARS = {
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32",
    "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
}
MAP_KEYS = SCALARS - {"double", "float", "bytes"}
MAX_FIELD_NUMBER = (1 << 29) - 1

# The well-known files: package and the types each defines ("E:" marks an enum). A
# schema may import them without a reference, as Confluent's registry allows.
_WKT_MESSAGES = {
    "google/protobuf/any.proto": ("google.protobuf", ["Any"]),
    "google/protobuf/api.proto": ("google.protobuf", ["Api", "Method", "Mixin"]),
    "google/protobuf/duration.proto": ("google.protobuf", ["Duration"]),
    "google/protobuf/empty.proto": ("google.protobuf", ["Empty"]),
    "google/protobuf/field_mask.proto": ("google.protobuf", ["FieldMask"]),
    "google/protobuf/source_context.proto": ("google.protobuf", ["SourceContext"]),
    "google/protobuf/struct.proto": ("google.protobuf", ["Struct", "Value", "ListValue", "E:NullValue"]),
    "google/protobuf/timestamp.proto": ("google.protobuf", ["Timestamp"]),
    "google/protobuf/type.proto": ("google.protobuf", [
        "Type", "Field", "E:Field.Kind", "E:Field.Cardinality", "Enum", "EnumValue", "Option",
        "E:Syntax"]),
    "google/protobuf/wrappers.proto": ("google.protobuf", [
        "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value",
        "BoolValue", "StringValue", "BytesValue"]),
    "google/protobuf/descriptor.proto": ("google.protobuf", [
        "FileDescriptorSet", "FileDescriptorProto", "DescriptorProto",
        "DescriptorProto.ExtensionRange", "DescriptorProto.ReservedRange",
        "ExtensionRangeOptions", "FieldDescriptorProto", "E:FieldDescriptorProto.Type",
        "E:FieldDescriptorProto.Label", "OneofDescriptorProto", "EnumDescriptorProto",
        "EnumValueDescriptorProto", "ServiceDescriptorProto", "MethodDescriptorProto",
        "FileOptions", "MessageOptions", "FieldOptions", "OneofOptions", "EnumOptions",
        "EnumValueOptions", "ServiceOptions", "MethodOptions", "UninterpretedOption",
        "FeatureSet", "FeatureSetDefaults", "SourceCodeInfo", "GeneratedCodeInfo"]),
    "google/type/calendar_period.proto": ("google.type", ["E:CalendarPeriod"]),
    "google/type/color.proto": ("google.type", ["Color"]),
    "google/type/date.proto": ("google.type", ["Date"]),
    "google/type/datetime.proto": ("google.type", ["DateTime", "TimeZone"]),
    "google/type/dayofweek.proto": ("google.type", ["E:DayOfWeek"]),
    "google/type/decimal.proto": ("google.type", ["Decimal"]),
    "google/type/expr.proto": ("google.type", ["Expr"]),
    "google/type/fraction.proto": ("google.type", ["Fraction"]),
    "google/type/interval.proto": ("google.type", ["Interval"]),
    "google/type/latlng.proto": ("google.type", ["LatLng"]),
    "google/type/localized_text.proto": ("google.type", ["LocalizedText"]),
    "google/type/money.proto": ("google.type", ["Money"]),
    "google/type/month.proto": ("google.type", ["E:Month"]),
    "google/type/phone_number.proto": ("google.type", ["PhoneNumber", "PhoneNumber.ShortCode"]),
    "google/type/postal_address.proto": ("google.type", ["PostalAddress"]),
    "google/type/quaternion.proto": ("google.type", ["Quaternion"]),
    "google/type/timeofday.proto": ("google.type", ["TimeOfDay"]),
    "confluent/meta.proto": ("confluent", ["Meta"]),
    "confluent/type/decimal.proto": ("confluent.type", ["Decimal"]),
}
WELL_KNOWN = frozenset(_WKT_MESSAGES)


class _Raise(ErrorListener):
    def syntaxError(self, recognizer, offendingSymbol, line, column, msg, e):  # noqa: N802
        raise SchemaError(f"Invalid schema: line {line}:{column}: {msg}")


def _quiet(thing: Any) -> None:
    thing.removeErrorListeners()
    thing.addErrorListener(_Raise())


def _parse_text(text: str, what: str) -> ast.File:
    if not isinstance(text, str):
        raise SchemaError(f"Invalid schema{what}: not a string")
    try:
        return Parser(setup_lexer=_quiet, setup_parser=_quiet).parse(text)
    except SchemaError as e:
        raise SchemaError(str(e).replace("Invalid schema", f"Invalid schema{what}", 1)) from None
    except (ValueError, TypeError, AttributeError, RecursionError) as e:
        raise SchemaError(f"Invalid schema{what}: {type(e).__name__}: {e}") from None


# --------------------------------------------------------------------------------------
# the model


@dataclass
class TypeInfo:
    """A message or enum known by full name (without a leading dot)."""

    full_name: str
    package: str
    kind: str  # "message" | "enum"
    element: Any  # ast.Message / ast.Enum, or None for a well-known type
    source: str  # "" for the schema itself, else the import path it comes from


@dataclass
class ProtoFile:
    """A parsed ``.proto`` file: its path, tree, package, syntax and imports."""
    path: str
    tree: ast.File
    package: str = ""
    syntax: str = "proto2"
    imports: list[str] = field(default_factory=list)


def _package(tree: ast.File) -> str:
    for e in tree.file_elements:
        if isinstance(e, ast.Package):
            return e.name
    return ""


def _elements(container: Any) -> list:
    return list(getattr(container, "elements", None) or getattr(container, "file_elements", []))


class ProtobufSchema(ParsedSchema):
    """A parsed .proto file with its imports. ``types`` holds every message and enum in
    reach by full name (the file's, its references', the well-known ones imported)."""

    schema_type = "PROTOBUF"

    def __init__(self, text: str, references: dict[str, str] | None = None) -> None:
        super().__init__(text, references)
        self.file = self._load("", text, "")
        if not any(isinstance(e, (ast.Message, ast.Enum)) for e in self.file.tree.file_elements):
            raise SchemaError("Invalid schema: no message or enum is defined")
        self.types: dict[str, TypeInfo] = {}
        self.files: dict[str, ProtoFile] = {}
        self._collect(self.file, set())
        for f in self.files.values():
            _Validator(self, f).run()
        self._canonical = Generator().generate(_strip(self.file.tree, normalize=False, schema=self))
        self._normalized = Generator().generate(_strip(self.file.tree, normalize=True, schema=self))

    @staticmethod
    def _load(path: str, text: str, what: str) -> ProtoFile:
        # confluent-kafka's ProtobufSerializer sends a base64 FileDescriptorProto
        tree = _parse_text(maybe_to_text(text), what)
        syntax = tree.syntax or "proto2"
        if syntax not in ("proto2", "proto3"):
            raise SchemaError(f"Invalid schema{what}: unsupported syntax {syntax!r}")
        imports = [e.name for e in tree.file_elements if isinstance(e, ast.Import)]
        return ProtoFile(path, tree, _package(tree), syntax, imports)

    def _collect(self, f: ProtoFile, stack: set[str]) -> None:
        if f.path in self.files:
            return
        self.files[f.path] = f
        for imp in f.imports:
            if imp in self.references:
                if imp in stack:
                    raise SchemaError(f"Invalid schema: import cycle through {imp!r}")
                dep = self._load(imp, self.references[imp], f" reference {imp!r}")
                self._collect(dep, stack | {imp})
            elif imp in WELL_KNOWN:
                self._add_well_known(imp)
            else:
                raise SchemaError(f"Invalid schema: unknown import {imp!r} (no reference given)")
        self._add_types(f, f.package, f.tree.file_elements)

    def _add_well_known(self, path: str) -> None:
        package, names = _WKT_MESSAGES[path]
        for name in names:
            kind = "enum" if name.startswith("E:") else "message"
            full = f"{package}.{name.removeprefix('E:')}"
            self.types.setdefault(full, TypeInfo(full, package, kind, None, path))

    def _add_types(self, f: ProtoFile, scope: str, elements: list) -> None:
        for e in elements:
            if isinstance(e, (ast.Message, ast.Enum)):
                full = f"{scope}.{e.name}" if scope else e.name
                if full in self.types and self.types[full].source == f.path:
                    raise SchemaError(f"Invalid schema: {full!r} is already defined")
                kind = "message" if isinstance(e, ast.Message) else "enum"
                self.types[full] = TypeInfo(full, f.package, kind, e, f.path)
                if isinstance(e, ast.Message):
                    self._add_types(f, full, _elements(e))
            elif isinstance(e, ast.Group):
                full = f"{scope}.{e.name}" if scope else e.name
                self.types[full] = TypeInfo(full, f.package, "message", e, f.path)
                self._add_types(f, full, _elements(e))

    def resolve(self, name: str, scope: list[str], package: str) -> TypeInfo | None:
        """Protobuf's scoping: a leading dot is absolute; otherwise the name is looked up
        from the innermost scope (package parts then enclosing messages) outwards."""
        if name.startswith("."):
            return self.types.get(name[1:])
        prefix = (package.split(".") if package else []) + list(scope)
        while prefix:
            found = self.types.get(".".join(prefix) + "." + name)
            if found is not None:
                return found
            prefix.pop()
        return self.types.get(name)

    def canonical(self) -> str:
        """The file printed back without comments, in one layout."""
        return self._canonical

    def normalized(self) -> str:
        """Also imports and options sorted, fields in number order, types in full."""
        return self._normalized


def parse(text: str, references: dict[str, str] | None = None) -> ProtobufSchema:
    return ProtobufSchema(text, references)


class _Validator:
    """protoc's checks that decide whether a registry may accept a file."""

    def __init__(self, schema: ProtobufSchema, f: ProtoFile) -> None:
        self.schema, self.f = schema, f
        self.what = f" reference {f.path!r}" if f.path else ""

    def fail(self, reason: str) -> None:
        raise SchemaError(f"Invalid schema{self.what}: {reason}")

    def run(self) -> None:
        names: set[str] = set()
        for e in self.f.tree.file_elements:
            if isinstance(e, (ast.Message, ast.Enum, ast.Service)):
                if e.name in names:
                    self.fail(f"{e.name!r} is already defined")
                names.add(e.name)
            if isinstance(e, ast.Message):
                self.message(e, [e.name])
            elif isinstance(e, ast.Enum):
                self.enum(e)
            elif isinstance(e, ast.Service):
                for m in _elements(e):
                    if isinstance(m, ast.Method):
                        self.type_ref(m.input_type.type, [], f"rpc {m.name}")
                        self.type_ref(m.output_type.type, [], f"rpc {m.name}")
            elif isinstance(e, ast.Extension):
                self.type_ref(e.typeName, [], "extend")
                for fld in _elements(e):
                    if isinstance(fld, ast.Field):
                        self.field_type(fld, [])

    def type_ref(self, name: str, scope: list[str], where: str) -> TypeInfo:
        found = self.schema.resolve(name, scope, self.f.package)
        if found is None:
            self.fail(f"{where}: unknown type {name!r}")
        return found

    def field_type(self, fld: Any, scope: list[str]) -> None:
        if isinstance(fld, ast.MapField):
            if fld.key_type not in MAP_KEYS:
                self.fail(f"map field {fld.name!r}: key type {fld.key_type!r} not allowed")
            if fld.value_type not in SCALARS:
                self.type_ref(fld.value_type, scope, f"field {fld.name!r}")
        elif fld.type not in SCALARS:
            self.type_ref(fld.type, scope, f"field {fld.name!r}")

    def message(self, msg: Any, scope: list[str]) -> None:
        numbers: dict[int, str] = {}
        names: set[str] = set()
        nested: set[str] = set()
        proto3 = self.f.syntax == "proto3"

        def check_field(fld: Any) -> None:
            if fld.name in names:
                self.fail(f"field {fld.name!r} is already defined in {'.'.join(scope)}")
            names.add(fld.name)
            n = fld.number
            if not 1 <= n <= MAX_FIELD_NUMBER:
                self.fail(f"field {fld.name!r}: number {n} out of range")
            if 19000 <= n <= 19999:
                self.fail(f"field {fld.name!r}: number {n} is reserved for the protobuf implementation")
            if n in numbers:
                self.fail(f"field {fld.name!r}: number {n} already used by {numbers[n]!r}")
            numbers[n] = fld.name
            if proto3 and getattr(fld, "cardinality", None) == ast.FieldCardinality.REQUIRED:
                self.fail(f"field {fld.name!r}: required fields are not allowed in proto3")
            if isinstance(fld, ast.Group):
                if proto3:
                    self.fail("groups are not allowed in proto3")
                return
            self.field_type(fld, scope)

        for e in _elements(msg):
            if isinstance(e, (ast.Field, ast.MapField, ast.Group)):
                check_field(e)
                if isinstance(e, ast.Group):
                    self.message(e, scope + [e.name])
            elif isinstance(e, ast.OneOf):
                for member in _elements(e):
                    if isinstance(member, (ast.Field, ast.MapField, ast.Group)):
                        if isinstance(member, ast.MapField):
                            self.fail(f"map field {member.name!r} cannot be in a oneof")
                        check_field(member)
            elif isinstance(e, (ast.Message, ast.Enum)):
                if e.name in nested:
                    self.fail(f"{'.'.join(scope + [e.name])!r} is already defined")
                nested.add(e.name)
                if isinstance(e, ast.Message):
                    self.message(e, scope + [e.name])
                else:
                    self.enum(e)
            elif isinstance(e, ast.Extension):
                self.type_ref(e.typeName, scope, "extend")

    def enum(self, enum: Any) -> None:
        values = [v for v in _elements(enum) if isinstance(v, ast.EnumValue)]
        if not values:
            self.fail(f"enum {enum.name!r} has no values")
        if self.f.syntax == "proto3" and values[0].number != 0:
            self.fail(f"enum {enum.name!r}: the first value must be zero in proto3")
        alias = any(
            isinstance(o, ast.Option) and o.name == "allow_alias" and o.value in (True, "true")
            for o in _elements(enum)
        )
        seen_names: set[str] = set()
        seen_numbers: set[int] = set()
        for v in values:
            if v.name in seen_names:
                self.fail(f"enum value {v.name!r} is already defined")
            seen_names.add(v.name)
            if v.number in seen_numbers and not alias:
                self.fail(f"enum {enum.name!r}: number {v.number} used twice (set allow_alias)")
            seen_numbers.add(v.number)


def _strip(tree: ast.File, normalize: bool, schema: ProtobufSchema) -> ast.File:
    """The tree without comments; normalised: imports and options sorted, fields in
    number order, and type names written in full with a leading dot."""

    def clean(elements: list, scope: list[str]) -> list:
        out = []
        for e in elements:
            if isinstance(e, ast.Comment):
                continue
            if isinstance(e, (ast.Message, ast.Group)):
                e = _replace(e, elements=clean(_elements(e), scope + [e.name]))
            elif isinstance(e, (ast.Enum, ast.OneOf, ast.Service, ast.Extension)):
                e = _replace(e, elements=clean(_elements(e), scope))
            elif normalize and isinstance(e, ast.Field) and e.type not in SCALARS:
                found = schema.resolve(e.type, scope, schema.file.package)
                if found is not None:
                    e = _replace(e, type="." + found.full_name)
            elif normalize and isinstance(e, ast.MapField) and e.value_type not in SCALARS:
                found = schema.resolve(e.value_type, scope, schema.file.package)
                if found is not None:
                    e = _replace(e, value_type="." + found.full_name)
            out.append(e)
        if normalize:
            def order(e: Any) -> tuple:
                if isinstance(e, ast.Import):
                    return (0, e.name)
                if isinstance(e, ast.Option):
                    return (1, e.name)
                if isinstance(e, (ast.Field, ast.MapField, ast.Group)):
                    return (2, e.number)
                if isinstance(e, ast.OneOf):
                    members = [m.number for m in _elements(e) if hasattr(m, "number")]
                    return (2, min(members) if members else 0)
                return (3, 0)
            head = [e for e in out if isinstance(e, (ast.Package,))]
            rest = [e for e in out if not isinstance(e, ast.Package)]
            out = head + sorted(rest, key=order)
        return out

    return ast.File(syntax=tree.syntax, edition=tree.edition,
                    file_elements=clean(tree.file_elements, []))


def _replace(e: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(e, **changes)
