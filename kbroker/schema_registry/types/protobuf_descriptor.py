"""PROTOBUF schemas sent as a serialized ``FileDescriptorProto``: back to ``.proto`` text.

confluent-kafka's ``ProtobufSerializer`` registers the base64 (standard alphabet) of its
message file's ``FileDescriptorProto``, and its imports the same way as references.
Confluent's registry accepts that form and stores and answers the ``.proto`` text. This
module decodes it with the ``protobuf`` package and writes the equivalent ``.proto``
source (syntax, package, imports with public/weak, options set in the descriptor,
messages with nested types, enums, oneofs, proto3 ``optional``, maps, labels, field
numbers and types, defaults, ``json_name`` where it is not the default one, reserved
ranges and names, extension ranges, ``extend`` blocks and services), which
:mod:`.protobuf` then parses as any text schema, so canonical forms, compatibility and
references behave the same either way.

Rules kept: text that is not pure base64 is never treated as a descriptor (a .proto file
always has blanks or punctuation base64 lacks); a descriptor that decodes but defines no
message or enum, uses editions, or uses proto2 groups is refused with a ``SchemaError``
(42201) rather than guessed at. Type names are written fully qualified with their leading
dot, as the descriptor holds them. Custom options unknown to the ``protobuf`` package's
pool are dropped, as protoc drops unknown fields. The reverse (``format=serialized``
answers) is :mod:`.protobuf_serialized`.

Pure code: no I/O, no clock.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from .base import SchemaError

_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_FDP = descriptor_pb2.FieldDescriptorProto

_TYPE_NAMES = {
    _FDP.TYPE_DOUBLE: "double", _FDP.TYPE_FLOAT: "float", _FDP.TYPE_INT64: "int64",
    _FDP.TYPE_UINT64: "uint64", _FDP.TYPE_INT32: "int32", _FDP.TYPE_FIXED64: "fixed64",
    _FDP.TYPE_FIXED32: "fixed32", _FDP.TYPE_BOOL: "bool", _FDP.TYPE_STRING: "string",
    _FDP.TYPE_BYTES: "bytes", _FDP.TYPE_UINT32: "uint32", _FDP.TYPE_SFIXED32: "sfixed32",
    _FDP.TYPE_SFIXED64: "sfixed64", _FDP.TYPE_SINT32: "sint32", _FDP.TYPE_SINT64: "sint64",
}
_MAX_FIELD = (1 << 29) - 1


def decode(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The descriptor ``text`` is the base64 of, or None when it is not one (then it is
    to be read as .proto text)."""
    if not isinstance(text, str) or not _B64.fullmatch(text.strip()):
        return None
    try:
        raw = base64.b64decode(text.strip(), validate=True)
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    if not fd.message_type and not fd.enum_type:
        return None
    return fd


def maybe_to_text(text: str) -> str:
    """``text`` itself, or the .proto source of the descriptor it encodes."""
    fd = decode(text)
    return text if fd is None else to_proto_text(fd)


def to_proto_text(fd: descriptor_pb2.FileDescriptorProto) -> str:
    return _Writer(fd).file()


def json_name(name: str) -> str:
    """protoc's default json_name: underscores dropped, the next letter upper-cased."""
    out, upper = [], False
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)


def _literal(field: FieldDescriptor, value) -> str:
    if field.type == FieldDescriptor.TYPE_ENUM:
        v = field.enum_type.values_by_number.get(value)
        return v.name if v is not None else str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _options(opts: Message, skip: tuple[str, ...] = ()) -> list[str]:
    """``name = value`` for each scalar option set (message-valued ones are skipped)."""
    out = []
    for f, value in opts.ListFields():
        if f.name in skip or f.type == FieldDescriptor.TYPE_MESSAGE or _is_repeated(f):
            continue
        name = f"({f.full_name})" if f.is_extension else f.name
        out.append(f"{name} = {_literal(f, value)}")
    return out


def _is_repeated(f: FieldDescriptor) -> bool:
    return getattr(f, "is_repeated", None) or getattr(f, "label", None) == FieldDescriptor.LABEL_REPEATED


def _ranges(ranges, exclusive_end: bool) -> str:
    parts = []
    for r in ranges:
        end = r.end - 1 if exclusive_end else r.end
        if end == r.start:
            parts.append(str(r.start))
        else:
            parts.append(f"{r.start} to {'max' if end >= _MAX_FIELD else end}")
    return ", ".join(parts)


class _Writer:
    def __init__(self, fd: descriptor_pb2.FileDescriptorProto) -> None:
        self.fd = fd
        if fd.syntax not in ("", "proto2", "proto3"):
            raise SchemaError(f"Invalid schema: syntax {fd.syntax!r} is not supported")
        self.proto3 = fd.syntax == "proto3"
        self.lines: list[str] = []

    def out(self, depth: int, line: str) -> None:
        self.lines.append("  " * depth + line)

    def file(self) -> str:
        fd = self.fd
        self.out(0, f'syntax = "{fd.syntax or "proto2"}";')
        if fd.package:
            self.out(0, f"package {fd.package};")
        for i, dep in enumerate(fd.dependency):
            kind = "public " if i in fd.public_dependency else "weak " if i in fd.weak_dependency else ""
            self.out(0, f"import {kind}{json.dumps(dep)};")
        for opt in _options(fd.options):
            self.out(0, f"option {opt};")
        for m in fd.message_type:
            self.message(m, 0)
        for e in fd.enum_type:
            self.enum(e, 0)
        self.extends(fd.extension, 0)
        for s in fd.service:
            self.out(0, f"service {s.name} {{")
            for opt in _options(s.options):
                self.out(1, f"option {opt};")
            for m in s.method:
                ins = "stream " if m.client_streaming else ""
                outs = "stream " if m.server_streaming else ""
                opts = _options(m.options)
                body = " {\n" + "".join(f"    option {o};\n" for o in opts) + "  }" if opts else ";"
                self.out(1, f"rpc {m.name} ({ins}{m.input_type}) returns ({outs}{m.output_type}){body}")
            self.out(0, "}")
        return "\n".join(self.lines) + "\n"

    def message(self, m: descriptor_pb2.DescriptorProto, depth: int) -> None:
        maps = {n.name: n for n in m.nested_type if n.options.map_entry}
        self.out(depth, f"message {m.name} {{")
        for opt in _options(m.options, skip=("map_entry",)):
            self.out(depth + 1, f"option {opt};")
        done_oneofs: set[int] = set()
        for f in m.field:
            if f.HasField("oneof_index") and not f.proto3_optional:
                idx = f.oneof_index
                if idx in done_oneofs:
                    continue
                done_oneofs.add(idx)
                self.out(depth + 1, f"oneof {m.oneof_decl[idx].name} {{")
                for opt in _options(m.oneof_decl[idx].options):
                    self.out(depth + 2, f"option {opt};")
                for member in m.field:
                    if member.HasField("oneof_index") and member.oneof_index == idx \
                            and not member.proto3_optional:
                        self.field(member, depth + 2, maps, in_oneof=True)
                self.out(depth + 1, "}")
            else:
                self.field(f, depth + 1, maps)
        for n in m.nested_type:
            if n.name not in maps:
                self.message(n, depth + 1)
        for e in m.enum_type:
            self.enum(e, depth + 1)
        self.extends(m.extension, depth + 1)
        if m.extension_range:
            self.out(depth + 1, f"extensions {_ranges(m.extension_range, True)};")
        if m.reserved_range:
            self.out(depth + 1, f"reserved {_ranges(m.reserved_range, True)};")
        if m.reserved_name:
            self.out(depth + 1, "reserved " + ", ".join(json.dumps(n) for n in m.reserved_name) + ";")
        self.out(depth, "}")

    def field(self, f: descriptor_pb2.FieldDescriptorProto, depth: int,
              maps: dict[str, descriptor_pb2.DescriptorProto], in_oneof: bool = False) -> None:
        if f.type == _FDP.TYPE_GROUP:
            raise SchemaError(f"Invalid schema: field {f.name!r}: groups are not supported "
                              "in a serialized descriptor")
        attrs = []
        if f.HasField("default_value"):
            value = f.default_value
            if f.type == _FDP.TYPE_STRING:
                value = json.dumps(value)
            elif f.type == _FDP.TYPE_BYTES:  # the descriptor holds it C-escaped already
                value = f'"{value}"'
            attrs.append(f"default = {value}")
        if f.HasField("json_name") and f.json_name != json_name(f.name):
            attrs.append(f"json_name = {json.dumps(f.json_name)}")
        attrs.extend(_options(f.options))
        tail = f" [{', '.join(attrs)}]" if attrs else ""
        entry = maps.get(f.type_name.rsplit(".", 1)[-1]) if f.type == _FDP.TYPE_MESSAGE else None
        if entry is not None and f.label == _FDP.LABEL_REPEATED:
            key, value = entry.field[0], entry.field[1]
            self.out(depth, f"map<{self.type_of(key)}, {self.type_of(value)}> {f.name} = {f.number}{tail};")
            return
        label = ""
        if not in_oneof:
            if f.label == _FDP.LABEL_REPEATED:
                label = "repeated "
            elif f.label == _FDP.LABEL_REQUIRED:
                label = "required "
            elif not self.proto3 or f.proto3_optional:
                label = "optional "
        self.out(depth, f"{label}{self.type_of(f)} {f.name} = {f.number}{tail};")

    @staticmethod
    def type_of(f: descriptor_pb2.FieldDescriptorProto) -> str:
        if f.type in _TYPE_NAMES:
            return _TYPE_NAMES[f.type]
        if not f.type_name:
            raise SchemaError(f"Invalid schema: field {f.name!r} has no type")
        return f.type_name

    def enum(self, e: descriptor_pb2.EnumDescriptorProto, depth: int) -> None:
        self.out(depth, f"enum {e.name} {{")
        for opt in _options(e.options):
            self.out(depth + 1, f"option {opt};")
        for v in e.value:
            opts = _options(v.options)
            tail = f" [{', '.join(opts)}]" if opts else ""
            self.out(depth + 1, f"{v.name} = {v.number}{tail};")
        if e.reserved_range:
            self.out(depth + 1, f"reserved {_ranges(e.reserved_range, False)};")
        if e.reserved_name:
            self.out(depth + 1, "reserved " + ", ".join(json.dumps(n) for n in e.reserved_name) + ";")
        self.out(depth, "}")

    def extends(self, fields, depth: int) -> None:
        by_extendee: dict[str, list] = {}
        for f in fields:
            by_extendee.setdefault(f.extendee, []).append(f)
        for extendee, members in by_extendee.items():
            self.out(depth, f"extend {extendee} {{")
            for f in members:
                self.field(f, depth + 1, {})
            self.out(depth, "}")
