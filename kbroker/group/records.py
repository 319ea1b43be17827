"""The records of ``__consumer_offsets``: which partition a group lives on, and the
key/value bytes of offset commits and group metadata.

Format (Kafka's, so a Kafka tool reading our log — or we reading Kafka's — agree):

- key   = int16 record type + the key struct (its only version, 0). Types 0 and 1 are an
  offset commit key (``LegacyOffsetCommitKey`` / ``OffsetCommitKey``: group, topic,
  partition); type 2 is a ``GroupMetadataKey`` (group). Kafka 4's definitions call the type
  the key's ``apiKey`` (older releases called it the key version; the bytes are the same).
- value = int16 value version + the value struct at that version, or null (a tombstone,
  which compaction keeps until the delete horizon and which deletes the key on replay).

We write ``OffsetCommitValue`` v3 (v1 when an explicit expire timestamp is set, the only
version that can carry it) and ``GroupMetadataValue`` v3 (static members, KIP-345). Any
known version is accepted on replay. Pure data: no I/O.
"""
from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

from kbroker.wire import messages

from .record_base import CoordinatorRecord, encode_key as _encode_key

__all__ = [
    "partition_for", "java_string_hash", "OffsetKey", "GroupKey", "decode_key",
    "offset_commit_record", "offset_tombstone", "group_metadata_record", "group_tombstone",
    "decode_offset_value", "decode_group_value", "CoordinatorRecord",
]

_H = struct.Struct(">h")

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRE = 1
GROUP_VALUE_VERSION = 3


def java_string_hash(s: str) -> int:
    """``java.lang.String.hashCode``: 31-polynomial over UTF-16 code units, int32 wrap."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@functools.lru_cache(maxsize=4096)      # every group request asks; the hash is a Python loop
def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
    (``Utils.abs`` maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(group_id)
    h = 0 if h == -(1 << 31) else abs(h)
    return h % num_partitions


@dataclass(frozen=True)
class OffsetKey:
    """The key of a committed offset record."""
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    """The key of a group metadata record."""
    group: str


def _encode(version: int, msg) -> bytes:
    return _H.pack(version) + msg.encode(version)


def decode_key(buf):
    """Decode a record key: ``OffsetKey``, ``GroupKey``, a consumer group record's
    ``ConsumerKey`` (types 3-8, 16), a share group record's ``ShareKey`` (types 10-15), a
    streams group record's ``StreamsKey`` (17, 19-23); None for record types this broker
    does not understand, which replay skips."""
    if buf is None or len(buf) < 2:
        return None
    (record_type,) = _H.unpack_from(buf, 0)
    if record_type in (0, 1):
        k = messages.OffsetCommitKey.decode(buf, 0, 2)
        return OffsetKey(k.group, k.topic, k.partition)
    if record_type == 2:
        k = messages.GroupMetadataKey.decode(buf, 0, 2)
        return GroupKey(k.group)
    from .consumer import records as crec
    if record_type in crec.RECORD_TYPES:
        return crec.decode_key(record_type, buf)
    from .share import records as shrec
    if record_type in shrec.RECORD_TYPES:
        return shrec.decode_key(record_type, buf)
    from .streams import records as srec
    if record_type in srec.RECORD_TYPES:
        return srec.decode_key(record_type, buf)
    return None


def offset_commit_record(partition: int, group: str, topic: str, part: int, *, offset: int,
                         leader_epoch: int, metadata: str, commit_timestamp: int,
                         expire_timestamp: int | None) -> CoordinatorRecord:
    key = OffsetKey(group, topic, part)
    kbytes = _encode_key(OFFSET_KEY_VERSION,
                         messages.OffsetCommitKey(group=group, topic=topic, partition=part))
    if expire_timestamp is not None:
        value = messages.OffsetCommitValue(offset=offset, metadata=metadata,
                                           commit_timestamp=commit_timestamp,
                                           expire_timestamp=expire_timestamp)
        vbytes = _encode(OFFSET_VALUE_VERSION_WITH_EXPIRE, value)
    else:
        value = messages.OffsetCommitValue(offset=offset, leader_epoch=leader_epoch,
                                           metadata=metadata, commit_timestamp=commit_timestamp)
        vbytes = _encode(OFFSET_VALUE_VERSION, value)
    return CoordinatorRecord(partition, kbytes, vbytes, key)


def offset_tombstone(partition: int, group: str, topic: str, part: int) -> CoordinatorRecord:
    kbytes = _encode_key(OFFSET_KEY_VERSION,
                         messages.OffsetCommitKey(group=group, topic=topic, partition=part))
    return CoordinatorRecord(partition, kbytes, None, OffsetKey(group, topic, part))


def group_metadata_record(partition: int, group: str, value) -> CoordinatorRecord:
    """``value`` is a ``messages.GroupMetadataValue``."""
    kbytes = _encode_key(GROUP_KEY_VERSION, messages.GroupMetadataKey(group=group))
    return CoordinatorRecord(partition, kbytes, _encode(GROUP_VALUE_VERSION, value), GroupKey(group))


def group_tombstone(partition: int, group: str) -> CoordinatorRecord:
    kbytes = _encode_key(GROUP_KEY_VERSION, messages.GroupMetadataKey(group=group))
    return CoordinatorRecord(partition, kbytes, None, GroupKey(group))


# --- records of the member-epoch group types (consumer, share, streams groups) -------------
# Keys and values of KIP-848-era records have one version, 0; their builders and decoders live
# in each type's records.py and share these two.

def _decode_value(cls, buf, valid: range):
    if buf is None:
        return None
    (version,) = _H.unpack_from(buf, 0)
    if version not in valid:
        raise ValueError(f"{cls.__name__} version {version} unknown")
    return cls.decode(buf, version, 2), version


def decode_offset_value(buf):
    """``(OffsetCommitValue, version)``, or None for a tombstone."""
    return _decode_value(messages.OffsetCommitValue, buf, range(0, 5))


def decode_group_value(buf):
    """``(GroupMetadataValue, version)``, or None for a tombstone."""
    return _decode_value(messages.GroupMetadataValue, buf, range(0, 5))
