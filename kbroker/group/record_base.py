"""What every ``__consumer_offsets`` record shares, whatever group type writes it: the
record to append (``CoordinatorRecord``) and the framing of keys and version-0 values
(int16 record type or value version, then the struct). The classic records
(``group/records.py``) and each group type's records (``consumer``, ``share``, ``streams``)
are built on it. Pure data: no I/O."""
from __future__ import annotations

import struct
from dataclasses import dataclass

_H = struct.Struct(">h")


@dataclass(frozen=True)
class CoordinatorRecord:
    """One record to append: ``partition`` of ``__consumer_offsets``, key bytes, value
    bytes (None = tombstone), and the decoded key for replay without re-parsing."""
    partition: int
    key: bytes
    value: bytes | None
    parsed_key: object                     # OffsetKey | GroupKey | consumer.records.ConsumerKey
    parsed_value: object = None            # the value struct, when the writer has it


def encode_key(record_type: int, msg) -> bytes:
    return _H.pack(record_type) + msg.encode(0)


def v0_record(partition: int, record_type: int, key_msg, value, parsed_key) -> CoordinatorRecord:
    """A record whose key struct and value struct (None = tombstone) are written at
    version 0, with its decoded key and value kept for replay."""
    vbytes = None if value is None else _H.pack(0) + value.encode(0)
    return CoordinatorRecord(partition, encode_key(record_type, key_msg), vbytes, parsed_key,
                             parsed_value=value)


def decode_v0_value(cls, name: str, buf):
    """The value struct ``cls`` (named ``name`` in errors) at version 0, or None for a
    tombstone; another version is refused (ValueError)."""
    if buf is None:
        return None
    (version,) = _H.unpack_from(buf, 0)
    if version != 0:
        raise ValueError(f"{name} version {version} unknown")
    return cls.decode(buf, 0, 2)
