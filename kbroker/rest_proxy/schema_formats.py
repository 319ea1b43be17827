"""The ``protobuf`` and ``jsonschema`` embedded formats through the broker's schema
registry, as Confluent's REST Proxy writes and reads them (issue 35, with issue 28's
registry called in process).

- **Producing.** As for ``avro`` (``avro.py``): each side's schema is named by
  ``key_schema``/``value_schema`` (text, registered under ``<topic>-key``/``<topic>-value``
  with ``schemaType`` PROTOBUF or JSON, or found there) or by
  ``key_schema_id``/``value_schema_id``. A ``protobuf`` key or value is the message's JSON
  (protobuf's JSON mapping: field or json names, enums by name, 64-bit integers as numbers
  or strings) of the schema's **first message**, as Confluent's proxy takes it; it is
  written in Confluent's wire format: magic byte 0, the schema id (4 bytes, big-endian),
  the message-index list (``[0]`` written as the single byte 0) and the message's binary
  encoding. A ``jsonschema`` key or value is any JSON value that validates against the
  schema (``jsonschema``, the schema's draft, its references resolved), written as magic
  byte, id and the value's compact UTF-8 JSON.
- **Consuming.** A record in that wire format is read with the schema its id names (for
  Protobuf, the message its index list names) and answered as JSON: Protobuf's JSON
  mapping (json names) with fields that have no presence printed at their defaults, so
  every field of the message appears; JSON Schema's value as stored. Bytes in another shape
  fail the poll (500 50002), as for avro.

The message classes come from the registry's own parse of the schema, turned into
``FileDescriptorProto``s by ``kbroker.schema_registry.types.protobuf_serialized`` (the
same descriptors ``format=serialized`` answers) in a ``DescriptorPool`` per schema id;
well-known imports are the ``protobuf`` package's (and confluent-kafka's for
``confluent/meta.proto``) own files; ``google/type/*.proto`` needs
googleapis-common-protos installed, and ``confluent/type/decimal.proto`` is not available
(both answer 42207 naming the file). No second parser, no second rule: registration,
compatibility and ids are the registry service's.

Errors: a schema that does not parse 422 42205 (before anything is registered: the
registry's parse), a schema id of another type 422 42205, a key or value that does not fit
its schema 422 42203 (Confluent's JSON conversion code), no registry 422 42207, an unknown
id the registry's 404 40403.
"""
from __future__ import annotations

import importlib
import json
import struct

from . import errors
from .avro import MAGIC, registry_call, service_of
from .errors import RestError

SCHEMA_TYPES = {"protobuf": "PROTOBUF", "jsonschema": "JSON"}


def _zigzag(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (value, next position)."""
    shift = result = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated message-index varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


def message_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """Confluent's message-index list at ``pos`` (a count, then that many indexes, all
    zig-zag varints; a count of 0 stands for ``[0]``): (indexes, next position)."""
    count, pos = _zigzag(data, pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > 100:
        raise ValueError(f"message-index count {count} out of range")
    out = []
    for _ in range(count):
        i, pos = _zigzag(data, pos)
        out.append(i)
    return out, pos


def _header(data: bytes, what: str) -> int:
    if len(data) < 5 or data[0] != MAGIC:
        raise RestError(500, errors.KAFKA_ERROR, f"Kafka error: the {what} is not in the schema "
                        "registry's wire format (magic byte 0 and a schema id)")
    return struct.unpack(">I", data[1:5])[0]


def _well_known_files(path: str, seen: set[str], out: list) -> None:
    """The serialized files of a well-known import and of what it imports, in order."""
    if path in seen:
        return
    seen.add(path)
    if path.startswith("confluent/"):
        module = "confluent_kafka.schema_registry." + path[:-len(".proto")].replace("/", ".") + "_pb2"
    else:
        module = path[:-len(".proto")].replace("/", ".") + "_pb2"
    try:
        descriptor = importlib.import_module(module).DESCRIPTOR
    except ImportError:
        raise errors.unprocessable(f"the well-known file {path!r} is not available to the "
                                   "gateway's protobuf format", errors.SERIALIZATION) from None
    for dep in descriptor.dependencies:
        _well_known_files(dep.name, seen, out)
    out.append(descriptor.serialized_pb)


class ProtobufCodec:
    """The message classes of one Protobuf schema id."""

    def __init__(self, schema_id: int, schema):
        from google.protobuf import descriptor_pool
        from kbroker.schema_registry.types.protobuf import WELL_KNOWN
        from kbroker.schema_registry.types.protobuf_serialized import file_descriptors
        self.schema_id = schema_id
        self.pool = descriptor_pool.DescriptorPool()
        seen: set[str] = set()
        files: list[bytes] = []
        for f in schema.files.values():
            for imp in f.imports:
                if imp in WELL_KNOWN:
                    _well_known_files(imp, seen, files)
        try:
            for raw in files:
                self.pool.AddSerializedFile(raw)
            self.files = file_descriptors(schema, name=f"kbroker-rest/schema-{schema_id}.proto")
            for fd in self.files:
                self.pool.Add(fd)
        except Exception as e:  # noqa: BLE001 - the pool's refusals name the problem
            raise errors.unprocessable(f"Invalid schema {schema_id}: {e}",
                                       errors.INVALID_SCHEMA) from None
        self.main = self.files[-1]
        if not self.main.message_type:
            raise errors.unprocessable(f"Invalid schema {schema_id}: it defines no message",
                                       errors.INVALID_SCHEMA)
        self._classes: dict[tuple[int, ...], type] = {}

    def message_class(self, indexes: list[int]):
        key = tuple(indexes)
        cls = self._classes.get(key)
        if cls is None:
            from google.protobuf.message_factory import GetMessageClass
            names, level = [], self.main.message_type
            for i in indexes:
                if not 0 <= i < len(level):
                    raise ValueError(f"message index {i} out of range")
                names.append(level[i].name)
                level = level[i].nested_type
            full = ".".join(([self.main.package] if self.main.package else []) + names)
            cls = self._classes[key] = GetMessageClass(self.pool.FindMessageTypeByName(full))
        return cls

    def encode(self, value, what: str) -> bytes | None:
        if value is None:
            return None
        from google.protobuf import json_format
        if not isinstance(value, dict):
            raise errors.unprocessable(f"Conversion of JSON to Protobuf failed for {what}: "
                                       "a message is a JSON object", errors.JSON_CONVERSION)
        try:
            message = json_format.ParseDict(value, self.message_class([0])())
            body = message.SerializeToString()
        except Exception as e:  # noqa: BLE001 - json_format raises ParseError and others
            raise errors.unprocessable(f"Conversion of JSON to Protobuf failed for {what}: {e}",
                                       errors.JSON_CONVERSION) from None
        return struct.pack(">bI", MAGIC, self.schema_id) + b"\x00" + body

    def decode(self, data: bytes, what: str):
        from google.protobuf import json_format
        try:
            indexes, pos = message_indexes(data, 5)
            message = self.message_class(indexes).FromString(data[pos:])
            return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
        except Exception as e:  # noqa: BLE001 - bytes that do not match their schema
            raise RestError(500, errors.KAFKA_ERROR, f"Kafka error: the {what} does not decode "
                            f"with schema {self.schema_id}: {e}") from None


class JsonSchemaCodec:
    """The validator of one JSON Schema id."""

    def __init__(self, schema_id: int, schema):
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT7
        self.schema_id = schema_id
        resources = [(url, Resource.from_contents(doc, default_specification=DRAFT7))
                     for url, doc in schema.documents.items() if url]
        self.validator = schema.draft(schema.raw, registry=Registry().with_resources(resources))

    def encode(self, value, what: str) -> bytes | None:
        if value is None:
            return None
        from jsonschema.exceptions import best_match
        problem = best_match(self.validator.iter_errors(value))
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path)
            raise errors.unprocessable(f"Conversion of JSON to Object failed for {what}: "
                                       f"{problem.message} at #/{where}", errors.JSON_CONVERSION)
        body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return struct.pack(">bI", MAGIC, self.schema_id) + body

    def decode(self, data: bytes, what: str):
        try:
            return json.loads(data[5:])
        except (ValueError, UnicodeDecodeError) as e:
            raise RestError(500, errors.KAFKA_ERROR, f"Kafka error: the {what} is not JSON "
                            f"after its schema id {self.schema_id}: {e}") from None


class TypedSchemas:
    """One gateway's codecs by schema id (an id never changes meaning)."""

    def __init__(self):
        self._by_id: dict[int, object] = {}

    async def codec(self, server, fmt: str, schema_id: int):
        got = self._by_id.get(schema_id)
        if got is None:
            schema_type, parsed = await registry_call(service_of(server).parsed_by_id, schema_id)
            if schema_type == "PROTOBUF":
                got = ProtobufCodec(schema_id, parsed)
            elif schema_type == "JSON":
                got = JsonSchemaCodec(schema_id, parsed)
            else:
                got = schema_type
            if len(self._by_id) > 10_000:
                self._by_id.clear()
            self._by_id[schema_id] = got
        wanted = SCHEMA_TYPES[fmt]
        if isinstance(got, str) or (wanted == "PROTOBUF") != isinstance(got, ProtobufCodec):
            kind = got if isinstance(got, str) else (
                "PROTOBUF" if isinstance(got, ProtobufCodec) else "JSON")
            raise errors.unprocessable(f"schema {schema_id} is a {kind} schema, not one of the "
                                       f"{fmt} format", errors.INVALID_SCHEMA)
        return got

    async def for_request(self, server, fmt: str, topic: str, side: str, body: dict):
        """(id, codec) of ``side`` ('key' or 'value') of a produce request."""
        text, sid = body.get(f"{side}_schema"), body.get(f"{side}_schema_id")
        if text is not None:
            if not isinstance(text, str):
                text = json.dumps(text)
            service = service_of(server)
            got = await registry_call(service.register, f"{topic}-{side}",
                                      {"schema": text, "schemaType": SCHEMA_TYPES[fmt]})
            sid = got["id"]
        elif isinstance(sid, bool) or not isinstance(sid, int):
            raise errors.unprocessable(f"{side}_schema_id must be an integer")
        return sid, await self.codec(server, fmt, sid)

    async def decode(self, server, fmt: str, data, what: str):
        if data is None:
            return None
        data = bytes(data)
        codec = await self.codec(server, fmt, _header(data, what))
        return codec.decode(data, what)
