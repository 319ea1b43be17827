"""PROTOBUF schemas as serialized ``FileDescriptorProto``s: the reverse of
:mod:`.protobuf_descriptor`.

Confluent's registry answers ``GET /schemas/ids/{id}?format=serialized`` (and
``/subjects/{s}/versions/{v}?format=serialized``) for a Protobuf schema with the base64
(standard alphabet) of the schema file's ``FileDescriptorProto``; confluent-kafka's
``ProtobufDeserializer`` with a registry client asks for that form, parses it and adds it
to a ``DescriptorPool`` with each reference (asked for the same way, named by its import
path). The REST gateway builds its dynamic message classes from the same descriptors.

This module walks a parsed :class:`.protobuf.ProtobufSchema` (every file in its reach is
already parsed and every type resolved by protobuf's scoping rules there) and fills in the
descriptor as protoc would for the same file: package, syntax, imports (public and weak
indexes), messages with nested types, enums, fields with their labels, types and fully
qualified type names, ``json_name`` (the option, else protoc's default), proto2
defaults, oneofs, proto3 ``optional`` (a synthetic oneof ``_name`` after the real ones),
maps (a nested ``XxxEntry`` message with ``map_entry``), reserved ranges and names,
extension ranges, ``extend`` fields and services. Options whose name is a field of the
options message (``packed``, ``deprecated``, ``allow_alias``, ``java_package``...) are
set; custom ``(ext)`` options are left out, as they need their extension's pool.

Rules kept: proto2 groups are refused (``SchemaError``) rather than encoded wrongly.
Pure code: no I/O, no clock.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf import descriptor_pb2
from proto_schema_parser import ast

from .base import SchemaError
from .protobuf import SCALARS, ProtobufSchema, ProtoFile, _elements
from .protobuf_descriptor import json_name

_FDP = descriptor_pb2.FieldDescriptorProto
_SCALAR_TYPES = {
    "double": _FDP.TYPE_DOUBLE, "float": _FDP.TYPE_FLOAT, "int64": _FDP.TYPE_INT64,
    "uint64": _FDP.TYPE_UINT64, "int32": _FDP.TYPE_INT32, "fixed64": _FDP.TYPE_FIXED64,
    "fixed32": _FDP.TYPE_FIXED32, "bool": _FDP.TYPE_BOOL, "string": _FDP.TYPE_STRING,
    "bytes": _FDP.TYPE_BYTES, "uint32": _FDP.TYPE_UINT32, "sfixed32": _FDP.TYPE_SFIXED32,
    "sfixed64": _FDP.TYPE_SFIXED64, "sint32": _FDP.TYPE_SINT32, "sint64": _FDP.TYPE_SINT64,
}
_LABELS = {
    ast.FieldCardinality.REQUIRED: _FDP.LABEL_REQUIRED,
    ast.FieldCardinality.OPTIONAL: _FDP.LABEL_OPTIONAL,
    ast.FieldCardinality.REPEATED: _FDP.LABEL_REPEATED,
}
_MAX = (1 << 29) - 1


def _entry_name(field: str) -> str:
    camel = json_name(field)
    return camel[:1].upper() + camel[1:] + "Entry"


def _set_options(target: Any, options: list, skip: tuple[str, ...] = ()) -> None:
    """Set each ``name = value`` option that is a plain field of ``target``."""
    for o in options:
        if not isinstance(o, ast.Option) or o.name in skip or o.name.startswith("("):
            continue
        field = target.DESCRIPTOR.fields_by_name.get(o.name)
        if field is None or field.type == field.TYPE_MESSAGE:
            continue
        value = o.value
        try:
            if field.type == field.TYPE_ENUM and not isinstance(value, int):
                value = field.enum_type.values_by_name[str(getattr(value, "name", value))].number
            elif field.type == field.TYPE_BOOL and isinstance(value, str):
                value = value == "true"
            setattr(target, o.name, value)
        except (TypeError, ValueError, KeyError, AttributeError):
            continue    # an option value protoc would reject: the parser let it by; skip it


def _ranges(text_ranges: list[str], exclusive: bool) -> list[tuple[int, int]]:
    out = []
    for r in text_ranges:
        lo, _, hi = str(r).partition(" to ")
        start = int(lo.strip(), 0)
        end = start if not hi else (_MAX if hi.strip() == "max" else int(hi.strip(), 0))
        out.append((start, end + 1 if exclusive else end))
    return out


class _Builder:
    def __init__(self, schema: ProtobufSchema, f: ProtoFile, name: str) -> None:
        self.schema, self.f = schema, f
        self.fd = descriptor_pb2.FileDescriptorProto(name=name)

    def build(self) -> descriptor_pb2.FileDescriptorProto:
        fd, f = self.fd, self.f
        if f.package:
            fd.package = f.package
        if f.syntax == "proto3":
            fd.syntax = "proto3"
        for e in f.tree.file_elements:
            if isinstance(e, ast.Import):
                if e.public:
                    fd.public_dependency.append(len(fd.dependency))
                if e.weak:
                    fd.weak_dependency.append(len(fd.dependency))
                fd.dependency.append(e.name)
            elif isinstance(e, ast.Option):
                _set_options(fd.options, [e])
            elif isinstance(e, ast.Message):
                self.message(fd.message_type.add(), e, [e.name])
            elif isinstance(e, ast.Enum):
                self.enum(fd.enum_type.add(), e)
            elif isinstance(e, ast.Extension):
                self.extend(fd.extension, e, [])
            elif isinstance(e, ast.Service):
                self.service(fd.service.add(), e)
        if not fd.HasField("options") or not fd.options.ListFields():
            fd.ClearField("options")
        return fd

    def type_of(self, name: str, scope: list[str]) -> tuple[int, str]:
        if name in _SCALAR_TYPES:
            return _SCALAR_TYPES[name], ""
        found = self.schema.resolve(name, scope, self.f.package)
        if found is None:
            raise SchemaError(f"Invalid schema: unknown type {name!r}")
        kind = _FDP.TYPE_ENUM if found.kind == "enum" else _FDP.TYPE_MESSAGE
        return kind, "." + found.full_name

    def field(self, out, fld: Any, scope: list[str], *, in_oneof: bool = False) -> None:
        if isinstance(fld, ast.Group):
            raise SchemaError(f"Invalid schema: field {fld.name!r}: groups cannot be serialized")
        out.name, out.number = fld.name, fld.number
        kind, type_name = self.type_of(fld.type, scope)
        out.type = kind
        if type_name:
            out.type_name = type_name
        card = fld.cardinality
        if in_oneof or card is None:
            out.label = _FDP.LABEL_OPTIONAL
        else:
            out.label = _LABELS[card]
            if card == ast.FieldCardinality.OPTIONAL and self.f.syntax == "proto3":
                out.proto3_optional = True
        out.json_name = json_name(fld.name)
        for o in fld.options or []:
            if o.name == "json_name":
                out.json_name = str(o.value)
            elif o.name == "default":
                value = getattr(o.value, "name", o.value)     # an enum value's Identifier
                if isinstance(value, bool):
                    value = "true" if value else "false"
                out.default_value = str(value)
        _set_options(out.options, fld.options or [], skip=("json_name", "default"))
        if not out.options.ListFields():
            out.ClearField("options")

    def message(self, out, msg: Any, scope: list[str]) -> None:
        out.name = msg.name
        synthetic = []
        for e in _elements(msg):
            if isinstance(e, (ast.Field, ast.Group)):
                f = out.field.add()
                self.field(f, e, scope)
                if f.proto3_optional:
                    synthetic.append(f)
            elif isinstance(e, ast.MapField):
                entry = out.nested_type.add(name=_entry_name(e.name))
                entry.options.map_entry = True
                for number, (name, type_text) in enumerate(
                        (("key", e.key_type), ("value", e.value_type)), start=1):
                    kind, type_name = self.type_of(type_text, scope)
                    ef = entry.field.add(name=name, number=number, label=_FDP.LABEL_OPTIONAL,
                                         type=kind, json_name=name)
                    if type_name:
                        ef.type_name = type_name
                f = out.field.add(name=e.name, number=e.number, label=_FDP.LABEL_REPEATED,
                                  type=_FDP.TYPE_MESSAGE, json_name=json_name(e.name),
                                  type_name="." + ".".join(
                                      ([self.f.package] if self.f.package else []) + scope
                                      + [entry.name]))
                _set_options(f.options, e.options or [], skip=("json_name",))
                if not f.options.ListFields():
                    f.ClearField("options")
            elif isinstance(e, ast.OneOf):
                index = len(out.oneof_decl)
                decl = out.oneof_decl.add(name=e.name)
                _set_options(decl.options, _elements(e))
                if not decl.options.ListFields():
                    decl.ClearField("options")
                for member in _elements(e):
                    if isinstance(member, (ast.Field, ast.Group)):
                        f = out.field.add()
                        self.field(f, member, scope, in_oneof=True)
                        f.oneof_index = index
            elif isinstance(e, ast.Message):
                self.message(out.nested_type.add(), e, scope + [e.name])
            elif isinstance(e, ast.Enum):
                self.enum(out.enum_type.add(), e)
            elif isinstance(e, ast.Extension):
                self.extend(out.extension, e, scope)
            elif isinstance(e, ast.Reserved):
                for start, end in _ranges(e.ranges or [], True):
                    out.reserved_range.add(start=start, end=end)
                out.reserved_name.extend(e.names or [])
            elif isinstance(e, ast.ExtensionRange):
                for start, end in _ranges(e.ranges or [], True):
                    out.extension_range.add(start=start, end=end)
            elif isinstance(e, ast.Option):
                _set_options(out.options, [e], skip=("map_entry",))
        for f in synthetic:           # proto3 optional: a synthetic oneof each, after the real ones
            f.oneof_index = len(out.oneof_decl)
            out.oneof_decl.add(name="_" + f.name)
        if not out.options.ListFields():
            out.ClearField("options")

    def enum(self, out, enum: Any) -> None:
        out.name = enum.name
        for e in _elements(enum):
            if isinstance(e, ast.EnumValue):
                v = out.value.add(name=e.name, number=e.number)
                _set_options(v.options, e.options or [])
                if not v.options.ListFields():
                    v.ClearField("options")
            elif isinstance(e, ast.Option):
                _set_options(out.options, [e])
            elif isinstance(e, ast.Reserved):
                for start, end in _ranges(e.ranges or [], False):
                    out.reserved_range.add(start=start, end=end)
                out.reserved_name.extend(e.names or [])
        if not out.options.ListFields():
            out.ClearField("options")

    def extend(self, out, ext: Any, scope: list[str]) -> None:
        _, extendee = self.type_of(ext.typeName, scope)
        for fld in _elements(ext):
            if isinstance(fld, (ast.Field, ast.Group)):
                f = out.add()
                self.field(f, fld, scope)
                f.extendee = extendee

    def service(self, out, svc: Any) -> None:
        out.name = svc.name
        for m in _elements(svc):
            if isinstance(m, ast.Method):
                method = out.method.add(name=m.name)
                method.input_type = self.type_of(m.input_type.type, [])[1]
                method.output_type = self.type_of(m.output_type.type, [])[1]
                if m.input_type.stream:
                    method.client_streaming = True
                if m.output_type.stream:
                    method.server_streaming = True
            elif isinstance(m, ast.Option):
                _set_options(out.options, [m])
        if not out.options.ListFields():
            out.ClearField("options")


def file_descriptor(schema: ProtobufSchema, path: str = "",
                    name: str = "default") -> descriptor_pb2.FileDescriptorProto:
    """The descriptor of the schema's file (``path`` "") or of one of its references (its
    import path), named ``name`` (references: their import path, as importers name them)."""
    f = schema.files.get(path)
    if f is None:
        raise SchemaError(f"Invalid schema: no file {path!r} in the schema's reach")
    return _Builder(schema, f, name if not path else path).build()


def file_descriptors(schema: ProtobufSchema, name: str = "default"
                     ) -> list[descriptor_pb2.FileDescriptorProto]:
    """Every file in the schema's reach, each after the files it imports (the order a
    ``DescriptorPool`` takes them in); the schema's own file last, named ``name``."""
    order: list[str] = []

    def visit(path: str) -> None:
        if path in order:
            return
        for imp in schema.files[path].imports:
            if imp in schema.files:
                visit(imp)
        order.append(path)
    visit("")
    return [file_descriptor(schema, p, name) for p in order]


def serialized(schema: ProtobufSchema) -> str:
    """Confluent's ``format=serialized`` text: base64 of the file's FileDescriptorProto."""
    return base64.standard_b64encode(file_descriptor(schema).SerializeToString()).decode("ascii")


__all__ = ["file_descriptor", "file_descriptors", "json_name", "serialized", "SCALARS"]
