"""Typed errors raised by the sans-I/O wire layer.

Every problem found in bytes that came from a peer is one of these, never a bare
``struct.error``/``IndexError``: the server maps them to a Kafka error code or to a
closed connection, and the fuzz tests check that nothing else escapes.
"""


class WireError(Exception):
    """Base class: the bytes cannot be understood (or produced) as Kafka protocol."""


class FrameTooLarge(WireError):
    """A size prefix is negative or above the configured maximum (``socket.request.max.bytes``)."""


class MalformedFrame(WireError):
    """A frame, header or message body is truncated or internally inconsistent."""


class UnsupportedVersion(WireError):
    """A message was asked for at a version outside its valid range, or a set field
    cannot be carried at the requested version."""


class CorruptRecord(WireError):
    """A record batch fails structural or CRC32C checks (Kafka's CORRUPT_MESSAGE, code 2)."""

    error_code = 2


class InvalidRecord(WireError):
    """A record batch is well formed but its content breaks a rule (INVALID_RECORD, code 87)."""

    error_code = 87
