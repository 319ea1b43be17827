"""Framing and request/response headers (sans-I/O).

A Kafka frame is an int32 size followed by that many bytes. ``FrameDecoder`` is fed
arbitrary chunks and yields whole frames; it refuses a negative or oversized size before
allocating anything. A request frame starts with a request header whose version follows
from the API's flexible versions (v2 when flexible, else v1; ``client_id`` is always a
classic nullable int16 string). Responses carry header v1 when flexible, else v0 — except
ApiVersions, whose response header is always v0 so that a client can read the error of a
version it does not share with the broker.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from . import messages
from .codegen import check_tag_count, r_uvarint, w_tags
from .errors import FrameTooLarge, MalformedFrame, UnsupportedVersion

DEFAULT_MAX_FRAME = 100 * 1024 * 1024  # socket.request.max.bytes
API_VERSIONS_KEY = 18

_size = struct.Struct(">i")
_prefix = struct.Struct(">hhi")
_int64 = struct.Struct(">q")


class FrameDecoder:
    """Turns a byte stream into frames. ``feed(data)`` returns the frames completed by it
    (as ``bytes``). Raises ``FrameTooLarge`` for a bad size prefix; after that the stream
    is unusable and the connection should close."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME):
        self.max_frame = max_frame
        self._buf = bytearray()
        self._need = -1  # size of the frame being collected, -1 while reading the prefix

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data) -> list[bytes]:
        self._buf += data
        frames = []
        buf = self._buf
        pos = 0
        while True:
            if self._need < 0:
                if len(buf) - pos < 4:
                    break
                size = _size.unpack_from(buf, pos)[0]
                if size < 0 or size > self.max_frame:
                    raise FrameTooLarge(f"frame size {size} outside 0..{self.max_frame}")
                self._need = size
                pos += 4
            if len(buf) - pos < self._need:
                break
            frames.append(bytes(buf[pos:pos + self._need]))
            pos += self._need
            self._need = -1
        if pos:
            del buf[:pos]
        return frames


@dataclass(slots=True)
class RequestHeader:
    """A decoded request header."""
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int
    unknown_tags: dict | None = None


# header versions of the (api key, version) pairs the schemas define, looked up once each:
# every request and response asks (pairs outside the schemas are answered uncached, so what
# a peer sends cannot grow these)
_REQUEST_HV: dict[tuple[int, int], int] = {}
_RESPONSE_HV: dict[tuple[int, int], int] = {}
# the request class of each (api key, version) pair the schemas define, looked up once
_REQUEST_CLASSES: dict[tuple[int, int], type] = {}
_client_id_size = struct.Struct(">h").unpack_from


def request_header_version(api_key: int, api_version: int) -> int:
    hv = _REQUEST_HV.get((api_key, api_version))
    if hv is not None:
        return hv
    cls = messages.request_class(api_key)
    if cls is None:
        return 1
    spec = cls._message
    hv = 2 if api_version in spec.flexible else 1
    if api_version in spec.valid:
        _REQUEST_HV[(api_key, api_version)] = hv
    return hv


def response_header_version(api_key: int, api_version: int) -> int:
    hv = _RESPONSE_HV.get((api_key, api_version))
    if hv is not None:
        return hv
    if api_key == API_VERSIONS_KEY:
        return 0
    cls = messages.response_class(api_key)
    if cls is None:
        return 0
    spec = cls._message
    hv = 1 if api_version in spec.flexible else 0
    if api_version in spec.valid:
        _RESPONSE_HV[(api_key, api_version)] = hv
    return hv


def peek_request(frame) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a request frame."""
    if len(frame) < 8:
        raise MalformedFrame("request frame shorter than its header")
    return _prefix.unpack_from(frame, 0)


def decode_request_header(frame) -> tuple[RequestHeader, int]:
    """Parse the request header; returns it and the offset where the body starts.
    Unknown API keys are parsed as header v1 (the caller answers or closes)."""
    return _read_header(memoryview(frame))


def _read_header(view) -> tuple[RequestHeader, int]:
    if len(view) < 8:
        raise MalformedFrame("request frame shorter than its header")
    api_key, api_version, correlation_id = _prefix.unpack_from(view, 0)
    hv = _REQUEST_HV.get((api_key, api_version)) or request_header_version(api_key, api_version)
    pos = 8
    client_id = None
    tags = None
    try:
        if hv >= 1:
            n = _client_id_size(view, pos)[0]
            pos += 2
            if n >= 0:
                if pos + n > len(view):
                    raise MalformedFrame("client id overruns the frame")
                client_id = str(view[pos:pos + n], "utf-8")
                pos += n
            elif n != -1:
                raise MalformedFrame("negative client id length")
        if hv >= 2 and view[pos] == 0:      # no tagged fields: every client's header
            pos += 1
        elif hv >= 2:
            ntags, pos = r_uvarint(view, pos)
            check_tag_count(ntags)
            for _ in range(ntags):
                tag, pos = r_uvarint(view, pos)
                size, pos = r_uvarint(view, pos)
                if pos + size > len(view):
                    raise MalformedFrame("header tagged field overruns the frame")
                tags = tags or {}
                tags[tag] = bytes(view[pos:pos + size])
                pos += size
    except (IndexError, struct.error, UnicodeDecodeError) as e:
        raise MalformedFrame(f"bad request header: {e}") from None
    return RequestHeader(api_key, api_version, correlation_id, client_id, hv, tags), pos


def decode_request(frame):
    """Header and typed body of a request frame. Raises ``UnsupportedVersion`` for an
    unknown API key or version, ``MalformedFrame`` for bad bytes."""
    header, request, _ = decode_request_to_end(frame)
    return header, request


def decode_request_to_end(frame):
    """:func:`decode_request`, and where the body's decoding ended (``len(frame)`` unless
    the frame has bytes after the request, which are ignored)."""
    view = memoryview(frame)
    header, pos = _read_header(view)
    key = (header.api_key, header.api_version)
    cls = _REQUEST_CLASSES.get(key)
    if cls is None:
        cls = messages.request_class(header.api_key)
        if cls is None:
            raise UnsupportedVersion(f"unknown api key {header.api_key}")
        if header.api_version not in cls._message.valid:
            raise UnsupportedVersion(f"{cls._message.name} has no version {header.api_version}")
        _REQUEST_CLASSES[key] = cls
    request, end = cls.decode_from(view, header.api_version, pos)
    return header, request, end


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                   body) -> bytes:
    """A whole request frame (size prefix included) — used by tests and tools."""
    out = bytearray(b"\0\0\0\0")
    out += _prefix.pack(api_key, api_version, correlation_id)
    hv = request_header_version(api_key, api_version)
    if hv >= 1:
        if client_id is None:
            out += b"\xff\xff"
        else:
            b = client_id.encode()
            out += struct.pack(">h", len(b)) + b
    if hv >= 2:
        out.append(0)
    body.encode_into(out, api_version)
    _size.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_response(api_key: int, api_version: int, correlation_id: int, body) -> list:
    """A whole response frame as a list of parts: ``bytes`` and, where a records field holds
    a file region, the region itself (for ``os.sendfile``). The size prefix covers all."""
    out = bytearray(b"\0\0\0\0")
    out += _size.pack(correlation_id)
    if response_header_version(api_key, api_version) >= 1:
        out.append(0)
    regions: list = []
    body.encode_into(out, api_version, regions)
    if not regions:
        _size.pack_into(out, 0, len(out) - 4)
        return [bytes(out)]
    _size.pack_into(out, 0, len(out) - 4 + sum(r.length for _, r in regions))
    parts: list = []
    start = 0
    for offset, region in regions:
        parts.append(bytes(out[start:offset]))
        parts.append(region)
        start = offset
    parts.append(bytes(out[start:]))
    return [p for p in parts if not isinstance(p, bytes) or p]


class ResponseStamp:
    """A response frame encoded once and stamped for each answer of a run whose answers
    differ only in their correlation ids and some consecutive int64 fields (a connection's
    run of Produce answers for one partition: their offsets). ``body`` holds ``markers`` in
    those fields: distinct int64 values whose bytes appear nowhere else in the encoding
    (``ValueError`` when they are not found once, one after another, or the body has a file
    region). :meth:`stamp` then writes the frame with a correlation id and the fields'
    values, the bytes :func:`encode_response` gives for the same body."""

    __slots__ = ("_frame", "_at", "_count", "_fields")

    def __init__(self, api_key: int, api_version: int, body, markers) -> None:
        parts = encode_response(api_key, api_version, 0, body)
        if len(parts) != 1:
            raise ValueError("a stamped response holds no file region")
        frame = parts[0]
        at = frame.find(b"".join(_int64.pack(m) for m in markers))
        if at < 0 or any(frame.count(_int64.pack(m)) != 1 for m in markers):
            raise ValueError(f"markers {markers} not found exactly once, one after another")
        self._frame = frame
        self._at = at
        self._count = len(markers)
        self._fields = struct.Struct(">" + "q" * len(markers))

    def stamp(self, out: bytearray, correlation_id: int, values) -> None:
        """Append the frame to ``out`` with ``correlation_id`` and the first of
        ``values``, as many as the markers, in their order."""
        start = len(out)
        out += self._frame
        _size.pack_into(out, start + 4, correlation_id)
        self._fields.pack_into(out, start + self._at, *values[:self._count])


def decode_response(frame, api_key: int, api_version: int):
    """(correlation_id, body) of a response frame (without its size prefix)."""
    cls = messages.response_class(api_key)
    if cls is None:
        raise UnsupportedVersion(f"unknown api key {api_key}")
    if api_version not in cls._message.valid:
        raise UnsupportedVersion(f"{cls._message.name} has no version {api_version}")
    view = memoryview(frame)
    if len(view) < 4:
        raise MalformedFrame("response shorter than its header")
    correlation_id = _size.unpack_from(view, 0)[0]
    pos = 4
    if response_header_version(api_key, api_version) >= 1:
        try:
            ntags, pos = r_uvarint(view, pos)
            check_tag_count(ntags)
            for _ in range(ntags):
                _, pos = r_uvarint(view, pos)
                size, pos = r_uvarint(view, pos)
                if size > len(view) - pos:
                    raise MalformedFrame("response header tagged field overruns the frame")
                pos += size
        except IndexError:
            raise MalformedFrame("truncated response header") from None
    return correlation_id, cls.decode(view, api_version, pos)


__all__ = ["FrameDecoder", "RequestHeader", "decode_request_header", "decode_request",
           "decode_request_to_end",
           "encode_request", "encode_response", "decode_response", "ResponseStamp", "peek_request",
           "request_header_version", "response_header_version", "DEFAULT_MAX_FRAME", "w_tags"]
