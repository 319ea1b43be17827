"""Confluent's compatibility rules for Protobuf: two parsed .proto files compared.

The rules are Confluent's ``SchemaDiff`` for Protobuf (protobuf-provider): the old schema
is the writer (``original``), the new the reader (``update``) for BACKWARD, and every
difference gets one of Confluent's change types and a path (``#/Message/field-number``,
``#/Message/oneof/field-number``). Compatible: messages, enums, enum constants, fields
and oneofs added or removed, a field renamed, a message moved, string↔bytes label
changes, a oneof field moved to the top level. Reasons: package changed, message removed,
a field's kind (scalar/message/map) changed, a scalar changed group (int32/int64/uint32/
uint64/bool/enum; sint32/sint64; string/bytes; fixed32/sfixed32; fixed64/sfixed64;
float; double), a message field's type changed (by name, or because the referenced
message became incompatible), a numeric field's label changed (optional/required/
repeated, as the descriptor gives them: none for proto3 singular fields and oneof
members), a required field added or removed, a oneof member removed, fields from
different places moved into one oneof. The ``syntax`` line and options are not compared
(Confluent does not either).

Pure code: no I/O, no clock.
"""

from __future__ import annotations

from typing import Any

from proto_schema_parser import ast

from .protobuf import SCALARS, ProtobufSchema, TypeInfo, _elements


COMPATIBLE_CHANGES = frozenset({
    "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED",
    "ENUM_CONST_CHANGED", "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED",
    "FIELD_NAME_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED", "ONEOF_REMOVED",
    "ONEOF_FIELD_ADDED", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
})

_REASONS = {
    "PACKAGE_CHANGED": "The package at '{p}' in the {r} schema does not match the package in the {w} schema",
    "MESSAGE_REMOVED": "The {r} schema is missing a MESSAGE type at path '{p}' in the {w} schema",
    "FIELD_KIND_CHANGED": "The type of a field at path '{p}' in the {r} schema does not match the {w} schema",
    "FIELD_SCALAR_KIND_CHANGED": (
        "The kind of a SCALAR field at path '{p}' in the {r} schema does not match its kind in "
        "the {w} schema"),
    "FIELD_NAMED_TYPE_CHANGED": (
        "The type of a MESSAGE field at path '{p}' in the {r} schema does not match its type in "
        "the {w} schema"),
    "FIELD_NUMERIC_LABEL_CHANGED": (
        "The label for a NUMERIC field at path '{p}' in the {r} schema does not match its label "
        "in the {w} schema"),
    "REQUIRED_FIELD_ADDED": "A required field  at path '{p}' in the {r} schema is missing in the {w} schema",
    "REQUIRED_FIELD_REMOVED": "The {r} schema is missing a required field at path: '{p}' in the {w} schema",
    "ONEOF_FIELD_REMOVED": "The {r} schema is missing a oneof field at path '{p}' in the {w} schema",
    "ONEOF_FIELD_MOVED_TO_TOP_LEVEL": (
        "The oneof field at path '{p}' in the {r} schema was moved out of its oneof to a "
        "top-level field in the {w} schema"),
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": (
        "Multiple fields in the oneof at path '{p}' in the {r} schema are outside a oneof in the "
        "{w} schema"),
    "FIELD_MOVED_TO_EXISTING_ONEOF": (
        "A field in the oneof at path '{p}' in the {r} schema is outside an existing oneof in "
        "the {w} schema"),
}


class Difference:
    __slots__ = ("kind", "path")

    def __init__(self, kind: str, path: str) -> None:
        self.kind, self.path = kind, path

    @property
    def compatible(self) -> bool:
        return self.kind in COMPATIBLE_CHANGES

    def message(self, reader: str = "reader", writer: str = "writer") -> str:
        reason = _REASONS.get(self.kind, "").format(p=self.path, r=reader, w=writer)
        return f'{{errorType:"{self.kind}", description:"{reason}"}}'

    def __repr__(self) -> str:
        return f"{self.kind} {self.path}"


class _Ctx:
    def __init__(self, original: ProtobufSchema, update: ProtobufSchema) -> None:
        self.schemas = {True: original, False: update}
        self.packages = {True: original.file.package, False: update.file.package}
        self.path: list[str] = []
        self.names: list[str] = []  # enclosing message names, for type resolution
        self.diffs: list[Difference] = []
        self.in_progress: set[int] = set()

    def sub(self) -> "_Ctx":
        c = _Ctx.__new__(_Ctx)
        c.schemas, c.packages = self.schemas, dict(self.packages)
        c.path, c.names = list(self.path), list(self.names)
        c.diffs, c.in_progress = [], self.in_progress
        return c

    def add(self, kind: str) -> None:
        self.diffs.append(Difference(kind, "#/" + "/".join(self.path)))

    @property
    def compatible(self) -> bool:
        return all(d.compatible for d in self.diffs)

    def type_of(self, name: str, original: bool) -> TypeInfo | None:
        return self.schemas[original].resolve(name, self.names, self.packages[original])


def compare(original: ProtobufSchema, update: ProtobufSchema) -> list[Difference]:
    """Every change from the writer's schema (``original``) to the reader's."""
    ctx = _Ctx(original, update)
    if original.file.package != update.file.package:
        ctx.add("PACKAGE_CHANGED")
    _types(ctx, original.file.tree.file_elements, update.file.tree.file_elements)
    return ctx.diffs


def _index(elements: list) -> tuple[dict, dict, dict]:
    messages, positions, enums = {}, {}, {}
    for e in elements:
        if isinstance(e, ast.Message):
            positions[e.name] = len(messages)
            messages[e.name] = e
        elif isinstance(e, ast.Enum):
            enums[e.name] = e
    return messages, positions, enums


def _types(ctx: _Ctx, original: list, update: list) -> None:
    omsgs, opos, oenums = _index(original)
    umsgs, upos, uenums = _index(update)
    for name in list(omsgs) + [n for n in umsgs if n not in omsgs]:
        ctx.path.append(name)
        ctx.names.append(name)
        if name not in umsgs:
            ctx.add("MESSAGE_REMOVED")
        elif name not in omsgs:
            ctx.add("MESSAGE_ADDED")
        else:
            _message(ctx, omsgs[name], umsgs[name])
            if opos[name] != upos[name]:
                ctx.add("MESSAGE_MOVED")
        ctx.names.pop()
        ctx.path.pop()
    for name in list(oenums) + [n for n in uenums if n not in oenums]:
        ctx.path.append(name)
        if name not in uenums:
            ctx.add("ENUM_REMOVED")
        elif name not in oenums:
            ctx.add("ENUM_ADDED")
        else:
            _enum(ctx, oenums[name], uenums[name])
        ctx.path.pop()


def _enum(ctx: _Ctx, original: Any, update: Any) -> None:
    old = {v.number: v.name for v in _elements(original) if isinstance(v, ast.EnumValue)}
    new = {v.number: v.name for v in _elements(update) if isinstance(v, ast.EnumValue)}
    for number in sorted(set(old) | set(new)):
        ctx.path.append(str(number))
        if number not in new:
            ctx.add("ENUM_CONST_REMOVED")
        elif number not in old:
            ctx.add("ENUM_CONST_ADDED")
        elif old[number] != new[number]:
            ctx.add("ENUM_CONST_CHANGED")
        ctx.path.pop()


def _fields(msg: Any) -> tuple[dict[int, Any], dict[int, str], dict[str, Any]]:
    by_number: dict[int, Any] = {}
    oneof_of: dict[int, str] = {}
    oneofs: dict[str, Any] = {}
    for e in _elements(msg):
        if isinstance(e, (ast.Field, ast.MapField, ast.Group)):
            by_number[e.number] = e
        elif isinstance(e, ast.OneOf):
            oneofs[e.name] = e
            for m in _elements(e):
                if isinstance(m, (ast.Field, ast.MapField, ast.Group)):
                    by_number[m.number] = m
                    oneof_of[m.number] = e.name
    return by_number, oneof_of, oneofs


def _is_required(fld: Any) -> bool:
    return getattr(fld, "cardinality", None) == ast.FieldCardinality.REQUIRED


def _message(ctx: _Ctx, original: Any, update: Any) -> None:
    if id(original) not in ctx.in_progress:
        ctx.in_progress.add(id(original))
        try:
            _message_fields(ctx, original, update)
        finally:
            ctx.in_progress.discard(id(original))
    nested_o = [e for e in _elements(original) if isinstance(e, (ast.Message, ast.Enum))]
    nested_u = [e for e in _elements(update) if isinstance(e, (ast.Message, ast.Enum))]
    _types(ctx, nested_o, nested_u)


def _message_fields(ctx: _Ctx, original: Any, update: Any) -> None:
    o_fields, o_oneof, o_oneofs = _fields(original)
    u_fields, u_oneof, u_oneofs = _fields(update)
    # a oneof deleted with every member is a compatible removal
    deleted = {
        name for name, one in o_oneofs.items()
        if name not in u_oneofs and not any(
            getattr(m, "number", None) in u_fields for m in _elements(one))
    }
    # members gathered into one oneof from more than one place become mutually exclusive
    for name, one in u_oneofs.items():
        origins: set[str] = set()
        moved_in = 0
        for m in _elements(one):
            number = getattr(m, "number", None)
            if number in o_oneof:
                origins.add("oneof:" + o_oneof[number])
            elif number in o_fields:
                origins.add(f"field:{number}")
                moved_in += 1
        if len(origins) > 1:
            ctx.path.append(name)
            ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF")
            ctx.path.pop()
    for name in sorted(set(o_oneofs) | set(u_oneofs)):
        ctx.path.append(name)
        if name not in u_oneofs:
            ctx.add("ONEOF_REMOVED")
        elif name not in o_oneofs:
            ctx.add("ONEOF_ADDED")
        ctx.path.pop()
    syntax = {True: ctx.schemas[True].file.syntax, False: ctx.schemas[False].file.syntax}
    for number in sorted(set(o_fields) | set(u_fields)):
        old, new = o_fields.get(number), u_fields.get(number)
        o_one, u_one = o_oneof.get(number), u_oneof.get(number)
        if new is None:
            if o_one is not None:
                if o_one not in deleted:
                    ctx.path += [o_one, str(number)]
                    ctx.add("ONEOF_FIELD_REMOVED")
                    del ctx.path[-2:]
            else:
                ctx.path.append(str(number))
                ctx.add("REQUIRED_FIELD_REMOVED" if _is_required(old) else "FIELD_REMOVED")
                ctx.path.pop()
        elif old is None:
            if u_one is not None:
                ctx.path += [u_one, str(number)]
                ctx.add("ONEOF_FIELD_ADDED")
                del ctx.path[-2:]
            else:
                ctx.path.append(str(number))
                ctx.add("REQUIRED_FIELD_ADDED" if _is_required(new) else "FIELD_ADDED")
                ctx.path.pop()
        else:
            if o_one is not None and u_one is None:
                ctx.path.append(str(number))
                ctx.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL")
                ctx.path.pop()
            where = [u_one, str(number)] if u_one is not None else [str(number)]
            ctx.path += where
            _field(ctx, old, new, _label(old, o_one, syntax[True]), _label(new, u_one, syntax[False]))
            del ctx.path[-len(where):]


def _label(fld: Any, oneof: str | None, syntax: str) -> str | None:
    """The label as Confluent's registry sees it (from the descriptor): none for oneof
    members and proto3 singular fields, OPTIONAL for proto3 ``optional``, and proto2's
    optional/required/repeated as written."""
    if oneof is not None:
        return None
    if isinstance(fld, ast.MapField):
        return "REPEATED"
    card = getattr(fld, "cardinality", None)
    if card is None:
        return None if syntax == "proto3" else "OPTIONAL"
    if syntax == "proto3" and card != ast.FieldCardinality.OPTIONAL and card != ast.FieldCardinality.REPEATED:
        return None
    return card.value


def _field(ctx: _Ctx, old: Any, new: Any, old_label: str | None, new_label: str | None) -> None:
    if old.name != new.name:
        ctx.add("FIELD_NAME_CHANGED")
    _labels_and_types(ctx, old_label, new_label, _ptype(old), _ptype(new))


def _ptype(fld: Any) -> Any:
    if isinstance(fld, ast.MapField):
        return ("map", fld.key_type, fld.value_type)
    if isinstance(fld, ast.Group):
        return fld.name
    return fld.type


def _kind(ctx: _Ctx, t: Any, original: bool) -> str:
    if isinstance(t, tuple):
        return "MAP"
    if t in SCALARS:
        return "SCALAR"
    info = ctx.type_of(t, original)
    if info is not None and info.kind == "enum":
        return "SCALAR"
    return "MESSAGE"


_SCALAR_GROUP = {
    "int32": "GENERAL_NUMBER", "int64": "GENERAL_NUMBER", "uint32": "GENERAL_NUMBER",
    "uint64": "GENERAL_NUMBER", "bool": "GENERAL_NUMBER", "sint32": "SIGNED_NUMBER",
    "sint64": "SIGNED_NUMBER", "string": "STRING_OR_BYTES", "bytes": "STRING_OR_BYTES",
    "fixed32": "FIXED32", "sfixed32": "FIXED32", "fixed64": "FIXED64", "sfixed64": "FIXED64",
    "float": "FLOAT", "double": "DOUBLE",
}


def _scalar_group(ctx: _Ctx, t: str, original: bool) -> str:
    if t in _SCALAR_GROUP:
        return _SCALAR_GROUP[t]
    return "GENERAL_NUMBER"  # an enum


def _labels_and_types(ctx: _Ctx, old_label: str | None, new_label: str | None, old_t: Any, new_t: Any) -> None:
    okind, ukind = _kind(ctx, old_t, True), _kind(ctx, new_t, False)
    if okind != ukind:
        ctx.add("FIELD_KIND_CHANGED")
    elif okind == "SCALAR":
        ogroup, ugroup = _scalar_group(ctx, old_t, True), _scalar_group(ctx, new_t, False)
        if ogroup != ugroup:
            ctx.add("FIELD_SCALAR_KIND_CHANGED")
        elif old_label is not None and new_label is not None and old_label != new_label:
            ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if ogroup == "STRING_OR_BYTES"
                    else "FIELD_NUMERIC_LABEL_CHANGED")
    elif okind == "MESSAGE":
        _message_types(ctx, old_t, new_t)
    elif okind == "MAP":
        _labels_and_types(ctx, None, None, old_t[1], new_t[1])
        _labels_and_types(ctx, None, None, old_t[2], new_t[2])


def _message_types(ctx: _Ctx, old_t: str, new_t: str) -> None:
    oinfo, uinfo = ctx.type_of(old_t, True), ctx.type_of(new_t, False)
    if oinfo is None or uinfo is None:
        if old_t != new_t:
            ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    olocal = _local(oinfo)
    ulocal = _local(uinfo)
    if olocal != ulocal:
        ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    if oinfo.element is None or uinfo.element is None:
        return  # a well-known type on both sides: the same definition
    sub = ctx.sub()
    sub.packages = {True: oinfo.package, False: uinfo.package}
    sub.names = olocal.split(".")
    sub.path = list(sub.names)
    _message(sub, oinfo.element, uinfo.element)
    ctx.diffs += sub.diffs
    if not sub.compatible:
        ctx.add("FIELD_NAMED_TYPE_CHANGED")


def _local(info: TypeInfo) -> str:
    if info.package and info.full_name.startswith(info.package + "."):
        return info.full_name[len(info.package) + 1:]
    return info.full_name


def differences(reader: ProtobufSchema, writer: ProtobufSchema) -> list[Difference]:
    return compare(writer, reader)


def can_read(
    reader: ProtobufSchema, writer: ProtobufSchema, reader_label: str = "reader",
    writer_label: str = "writer",
) -> list[str]:
    """Confluent's message for each incompatible change from ``writer`` to ``reader``."""
    return [
        d.message(reader_label, writer_label)
        for d in differences(reader, writer) if not d.compatible
    ]
