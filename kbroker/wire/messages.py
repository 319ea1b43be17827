"""Every Kafka message as a Python class, built from the schema model.

Use by name (``messages.ProduceRequest``) or by API key (``request_class(0)``,
``response_class(0)``). Specs and classes are created on first access, so importing this
module costs next to nothing (a broker starts with about a third of the ~240 messages
built); codecs for a version are compiled on first use (see codegen.py).

    req = FetchRequest.decode(body, version)
    body = FetchResponse(throttle_time_ms=0, responses=[...]).encode(version)
"""
from __future__ import annotations

import struct

from .codegen import Message, build_classes, reader_for, writer_for
from .errors import MalformedFrame, WireError
from .model import MessageSpec, build_message, load_raw

__all__ = ["KafkaMessage", "get", "spec", "request_class", "request_spec", "response_class",
           "api_keys", "specs"]


class KafkaMessage(Message):
    """Base of all generated message and struct classes."""

    __slots__ = ()

    @classmethod
    def decode(cls, buf, version: int, pos: int = 0, end: int | None = None):
        """Decode one message from ``buf`` at ``version``; trailing bytes are ignored."""
        return cls.decode_from(buf, version, pos, end)[0]

    @classmethod
    def decode_from(cls, buf, version: int, pos: int = 0, end: int | None = None):
        """Decode and return ``(message, position after it)``. Reads only ``buf[pos:end]``;
        ``records`` fields come back as memoryview slices of ``buf`` (no copy).
        Raises ``MalformedFrame`` for bad bytes, ``UnsupportedVersion`` for a bad version."""
        reader = cls._decoders.get(version) or reader_for(cls, version)
        view = buf if type(buf) is memoryview else memoryview(buf)
        size = view.nbytes
        if end is None:
            end = size
        elif end != size:
            if not 0 <= end <= size:
                raise MalformedFrame(f"end {end} outside a buffer of {size} bytes")
            # the generated readers treat the end of the view as the end of the message
            view = view[:end]
        if not 0 <= pos <= end:
            raise MalformedFrame(f"start {pos} outside 0..{end}")
        try:
            return reader(view, pos, end)
        except WireError:
            raise
        except _DECODE_ERRORS as e:
            raise MalformedFrame(f"{cls._message.name} v{version}: {type(e).__name__}: {e}") from None

    def encode_into(self, out: bytearray, version: int, parts: list | None = None) -> None:
        """Append the encoding to ``out``. File regions in records fields are recorded in
        ``parts`` as ``(offset in out, region)`` when ``parts`` is a list, else read inline.
        A value the version cannot carry raises ``UnsupportedVersion``; a value that is not
        of its field's type raises ``WireError``. Either way ``out`` is left as it was."""
        cls = type(self)
        writer = cls._encoders.get(version) or writer_for(cls, version)
        start = len(out)
        nparts = len(parts) if parts is not None else 0
        try:
            writer(self, out, parts)
        except BaseException as e:
            del out[start:]
            if parts is not None:
                del parts[nparts:]
            if isinstance(e, _ENCODE_ERRORS) and not isinstance(e, WireError):
                raise WireError(f"cannot encode {cls._message.name} v{version}: "
                                f"{type(e).__name__}: {e}") from e
            raise

    def encode(self, version: int) -> bytes:
        out = bytearray()
        self.encode_into(out, version)
        return bytes(out)


# What a generated reader can raise on bad bytes (struct.error is not a ValueError); a
# RecursionError/MemoryError cannot come from the schemas (no recursive structs, counts
# bounded by the input size) but would still be the input's fault.
_DECODE_ERRORS = (struct.error, IndexError, ValueError, OverflowError, TypeError,
                  RecursionError, MemoryError)
_ENCODE_ERRORS = (struct.error, ValueError, OverflowError, TypeError, AttributeError)


_RAW = load_raw()           # definitions by name, each read on first use; specs likewise
_SPECS: dict[str, MessageSpec] = {}
_ALL_SPECS: dict[str, MessageSpec] | None = None
_CLASSES: dict[str, type] = {}
_BY_KEY: dict[tuple[int, str], str] = {
    (m["apiKey"], m["type"]): name for name, m in ((n, _RAW.light(n)) for n in _RAW)
    if m.get("apiKey") is not None and m["type"] in ("request", "response")}


def spec(name: str) -> MessageSpec:
    """The spec of message ``name`` (KeyError if there is none)."""
    s = _SPECS.get(name)
    if s is None:
        s = _SPECS[name] = build_message(_RAW[name])
    return s


def specs() -> dict[str, MessageSpec]:
    """Every message's spec by name (builds all of them)."""
    global _ALL_SPECS
    if _ALL_SPECS is None:
        _ALL_SPECS = {name: spec(name) for name in _RAW}
    return _ALL_SPECS


def get(name: str) -> type:
    """The class for message ``name`` (e.g. ``"MetadataResponse"``, ``"TopicRecord"``)."""
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = build_classes(spec(name), KafkaMessage)
    return cls


def built() -> list[type]:
    """The message classes built so far (by ``get``)."""
    return list(_CLASSES.values())


def request_class(api_key: int) -> type | None:
    name = _BY_KEY.get((api_key, "request"))
    return get(name) if name else None


def request_spec(api_key: int) -> MessageSpec | None:
    """The request's spec without building its class."""
    name = _BY_KEY.get((api_key, "request"))
    return spec(name) if name else None


def request_versions(api_key: int):
    """(request name, valid versions) from the schema data alone — what a registry needs to
    know, without building the message's spec (start-up builds only what requests use)."""
    name = _BY_KEY.get((api_key, "request"))
    if name is None:
        return None
    from .model import Versions
    return name, Versions.parse(_RAW.light(name).get("validVersions"))


def response_class(api_key: int) -> type | None:
    name = _BY_KEY.get((api_key, "response"))
    return get(name) if name else None


def api_keys() -> list[int]:
    return sorted({k for k, kind in _BY_KEY})


def __getattr__(name: str):
    if name in _RAW:
        return get(name)
    raise AttributeError(name)
