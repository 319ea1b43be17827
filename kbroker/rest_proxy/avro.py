"""The ``avro`` embedded format through the broker's schema registry (``kbroker.schema_registry``,
issue 28), as Confluent's REST Proxy does it with its registry.

- **Producing.** A request names each side's schema by ``key_schema``/``value_schema``
  (the schema text: registered under the topic's subject, ``<topic>-key`` /
  ``<topic>-value``, Confluent's TopicNameStrategy — or found there when already
  registered) or by ``key_schema_id``/``value_schema_id``; the answer carries the ids. Each
  key and value is Avro's JSON encoding of a datum of that schema (unions as
  ``{"type": value}``), written in Confluent's wire format: magic byte 0, the schema id
  (4 bytes, big-endian), the Avro binary datum.
- **Consuming.** A record in that wire format is read with the schema its id names and
  answered in Avro's JSON encoding; anything else is an error of the poll (the position
  stays, nothing is skipped).

The registry is the service of this same process, called in process (``server.schema_registry``
with ``kbroker.schema.registry.listen`` set); without it the format answers 422 (42207).
Avro datum encoding is fastavro's (the registry's own pin). Errors: an invalid schema 422
42205, a datum that does not fit its schema 422 42203, an unknown schema id the registry's
404 (40403), a registry that does not answer in time 408 40801.
"""
from __future__ import annotations

import io
import json
import struct

import trio

from . import errors
from .errors import RestError

MAGIC = 0
REGISTRY_TIMEOUT_S = 30.0


def service_of(server):
    sr = getattr(server, "schema_registry", None)
    service = getattr(sr, "service", None) if sr is not None else None
    if service is None:
        raise errors.unprocessable("the schema-based formats need the schema registry: set "
                                   "kbroker.schema.registry.listen (or --schema-registry)",
                                   errors.SERIALIZATION)
    return service


async def registry_call(fn, *args, **kwargs):
    """A call of the registry service with its errors as the gateway answers them: an
    invalid schema 422 42205, the registry's other codes as they are (409, 40403...), a
    registry that does not answer in time 408 40801."""
    from kbroker.schema_registry.errors import RegistryError
    try:
        with trio.fail_after(REGISTRY_TIMEOUT_S):
            return await fn(*args, **kwargs)
    except trio.TooSlowError:
        raise RestError(408, 40801, "Schema registration or lookup timed out") from None
    except RegistryError as e:
        code = errors.INVALID_SCHEMA if e.code in (42201, 42205) else e.code
        raise RestError(e.status, code, e.message) from None


class Schemas:
    """Parsed schemas by id, for one gateway (ids never change meaning)."""

    def __init__(self):
        self._by_id: dict[int, object] = {}

    def _parse(self, text: str):
        import fastavro
        try:
            return fastavro.parse_schema(json.loads(text))
        except Exception as e:  # noqa: BLE001 - fastavro raises several types for bad schemas
            raise errors.unprocessable(f"Invalid schema: {e}", errors.INVALID_SCHEMA) from None

    async def _call(self, fn, *args):
        return await registry_call(fn, *args)

    async def by_id(self, server, schema_id: int):
        parsed = self._by_id.get(schema_id)
        if parsed is None:
            service = service_of(server)
            got = await self._call(service.schema_by_id, schema_id)
            if got.get("schemaType", "AVRO") != "AVRO":
                raise errors.unprocessable(f"schema {schema_id} is not an Avro schema",
                                           errors.INVALID_SCHEMA)
            parsed = self._by_id[schema_id] = self._parse(got["schema"])
        return parsed

    async def for_request(self, server, topic: str, side: str, body: dict) -> tuple[int, object]:
        """(id, parsed schema) of ``side`` ('key' or 'value') of a produce request."""
        text, sid = body.get(f"{side}_schema"), body.get(f"{side}_schema_id")
        if text is not None:
            if not isinstance(text, str):
                text = json.dumps(text)
            self._parse(text)                         # 42205 before anything is registered
            service = service_of(server)
            got = await self._call(service.register, f"{topic}-{side}", {"schema": text})
            sid = got["id"]
        elif isinstance(sid, bool) or not isinstance(sid, int):
            raise errors.unprocessable(f"{side}_schema_id must be an integer")
        return sid, await self.by_id(server, sid)


def encode(schema_id: int, parsed, value, what: str) -> bytes | None:
    if value is None:
        return None
    import fastavro
    try:
        datum = next(fastavro.json_reader(io.StringIO(json.dumps(value)), parsed))
        out = io.BytesIO()
        out.write(struct.pack(">bI", MAGIC, schema_id))
        fastavro.schemaless_writer(out, parsed, datum)
    except Exception as e:  # noqa: BLE001 - a datum that does not fit: the caller's error
        raise errors.unprocessable(f"Conversion of JSON to Avro failed for {what}: {e}",
                                   errors.JSON_CONVERSION) from None
    return out.getvalue()


async def decode(server, schemas: Schemas, data: bytes | None, what: str):
    if data is None:
        return None
    data = bytes(data)
    if len(data) < 5 or data[0] != MAGIC:
        raise RestError(500, errors.KAFKA_ERROR, f"Kafka error: the {what} is not in the schema "
                        "registry's wire format (magic byte 0 and a schema id)")
    (schema_id,) = struct.unpack(">I", data[1:5])
    parsed = await schemas.by_id(server, schema_id)
    import fastavro
    try:
        datum = fastavro.schemaless_reader(io.BytesIO(data[5:]), parsed)
        out = io.StringIO()
        fastavro.json_writer(out, parsed, [datum])
        return json.loads(out.getvalue())
    except Exception as e:  # noqa: BLE001 - bytes that do not match their schema
        raise RestError(500, errors.KAFKA_ERROR,
                        f"Kafka error: the {what} does not decode with schema {schema_id}: {e}") from None
