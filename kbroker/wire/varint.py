"""Variable-length integers as Kafka writes them (protobuf-style base-128, little-endian groups).

Two families:

* unsigned (``uvarint``): plain base-128, at most 5 bytes for a 32-bit value. Used by flexible
  message versions for compact lengths and tagged fields (KIP-482).
* signed (``varint``/``varlong``): the value is zigzag-mapped first (0, -1, 1, -2, ... →
  0, 1, 2, 3, ...) so small negative numbers stay short; at most 5 bytes for int32 and 10 bytes
  for int64. Used inside v2 records (KIP-98).

Readers take ``(buf, pos)`` and return ``(value, new_pos)``. ``buf`` may be ``bytes``,
``bytearray`` or ``memoryview`` — indexing any of them yields an ``int``. A reader that runs
past the end, reads too many bytes, or decodes a value outside the target width raises
:class:`BadVarint`, which is both a :class:`CorruptRecord` (record code) and a
:class:`MalformedFrame` (message codecs), so either layer can catch it as its own.
"""

from __future__ import annotations

from .errors import CorruptRecord, MalformedFrame

__all__ = [
    "BadVarint",
    "encode_uvarint",
    "encode_uvarlong",
    "encode_varint",
    "encode_varlong",
    "read_uvarint",
    "read_uvarlong",
    "read_varint",
    "read_varlong",
    "size_of_uvarint",
    "size_of_varint",
    "size_of_varlong",
    "zigzag",
    "unzigzag",
]

_U32 = 1 << 32
_U64 = 1 << 64


class BadVarint(CorruptRecord, MalformedFrame):
    """A variable-length integer is truncated, too long, or out of range."""


def zigzag(n: int) -> int:
    """Map a signed integer onto the naturals: 0→0, -1→1, 1→2, -2→3 …"""
    return (n << 1) ^ -1 if n < 0 else n << 1


def unzigzag(z: int) -> int:
    return (z >> 1) ^ -(z & 1)


def encode_uvarint(n: int) -> bytes:
    """Unsigned 32-bit varint."""
    if not 0 <= n < _U32:
        raise ValueError(f"uvarint out of range: {n}")
    return _encode_unsigned(n)


def encode_uvarlong(n: int) -> bytes:
    """Unsigned 64-bit varint."""
    if not 0 <= n < _U64:
        raise ValueError(f"uvarlong out of range: {n}")
    return _encode_unsigned(n)


def encode_varint(n: int) -> bytes:
    """Zigzag-encoded signed 32-bit varint."""
    if not -(1 << 31) <= n < (1 << 31):
        raise ValueError(f"varint out of range: {n}")
    return _encode_unsigned(zigzag(n))


def encode_varlong(n: int) -> bytes:
    """Zigzag-encoded signed 64-bit varint."""
    if not -(1 << 63) <= n < (1 << 63):
        raise ValueError(f"varlong out of range: {n}")
    return _encode_unsigned(zigzag(n))


def _encode_unsigned(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def size_of_uvarint(n: int) -> int:
    """Bytes :func:`encode_uvarint`/:func:`encode_uvarlong` would write for ``n`` (``n >= 0``)."""
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def size_of_varint(n: int) -> int:
    return size_of_uvarint(zigzag(n))


size_of_varlong = size_of_varint


def _read_unsigned(buf, pos: int, max_bytes: int, limit: int, what: str) -> tuple[int, int]:
    try:
        b = buf[pos]
    except IndexError:
        raise BadVarint(f"{what} truncated at byte {pos}") from None
    if b < 0x80:  # the common one-byte case
        if pos < 0:
            raise BadVarint(f"{what} at negative position {pos}")
        return b, pos + 1
    if pos < 0:
        raise BadVarint(f"{what} at negative position {pos}")
    value = b & 0x7F
    shift = 7
    end = pos + max_bytes
    pos += 1
    while True:
        if pos >= end:
            raise BadVarint(f"{what} longer than {max_bytes} bytes")
        try:
            b = buf[pos]
        except IndexError:
            raise BadVarint(f"{what} truncated at byte {pos}") from None
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if value >= limit:
        raise BadVarint(f"{what} exceeds its width")
    return value, pos


def read_uvarint(buf, pos: int) -> tuple[int, int]:
    """Read an unsigned 32-bit varint (≤ 5 bytes)."""
    return _read_unsigned(buf, pos, 5, _U32, "uvarint")


def read_uvarlong(buf, pos: int) -> tuple[int, int]:
    """Read an unsigned 64-bit varint (≤ 10 bytes)."""
    return _read_unsigned(buf, pos, 10, _U64, "uvarlong")


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Read a zigzag signed 32-bit varint (≤ 5 bytes)."""
    z, pos = _read_unsigned(buf, pos, 5, _U32, "varint")
    return (z >> 1) ^ -(z & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Read a zigzag signed 64-bit varint (≤ 10 bytes)."""
    z, pos = _read_unsigned(buf, pos, 10, _U64, "varlong")
    return (z >> 1) ^ -(z & 1), pos
