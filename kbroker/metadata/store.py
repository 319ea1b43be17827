"""The metadata log on disk: ``<data dir>/__cluster_metadata-0``.

Stored with the log store (``PartitionLog``) as Kafka's KRaft metadata log is: v2 record
batches, one batch per controller operation (so an operation is replayed whole or not at
all, KIP-868's atomic batches), each record with a null key and a value framed like
Kafka's ``MetadataRecordSerde``::

    unsigned varint  frame version (1)
    unsigned varint  record type   (the record's api key: TopicRecord = 2, ...)
    unsigned varint  record version
    ...              the record body at that version (always flexible)

Record versions follow the finalized ``metadata.version`` as Kafka's ``MetadataVersion``
chooses them (:func:`record_version`): ``PartitionRecord``/``PartitionChangeRecord`` v1 from
3.7-IV2 (``Directories``, KIP-858) and v2 from 4.0-IV1 (ELR fields, KIP-966);
``RegisterBrokerRecord`` v2 from 3.4-IV0, v3 from 3.7-IV2 (``LogDirs``) and v4 from 4.3-IV0
(``CordonedLogDirs``, KIP-1066); ``BrokerRegistrationChangeRecord`` v2 when it carries
``LogDirs``, v3 when it carries ``CordonedLogDirs`` (4.3-IV0 on). ``ClearElrRecord`` (28) is
written when ELR is turned off or ``min.insync.replicas`` changes; ``RegisterControllerRecord``
(27) and ``UnregisterControllerRecord`` (29, 4.4-IV2) are read (and replay as no-ops), never
written: kbroker's controllers are the quorum's voters. Other records are written
at the version of :data:`RECORD_TYPES`; without a metadata version (bootstrap), at that one.

Every append is fsynced before it is replayed (an admin operation is acknowledged only
once durable). The ``LogManager`` owns the partition like any other (recovery after a crash cuts a
torn tail off; the clean-shutdown marker covers it); it must not be mistaken for a topic
partition by anything that walks the logs (``is_metadata_log``).
With a quorum (``kbroker.metadata.quorum``) the Raft driver owns this partition: batches
carry the Raft epoch that wrote them as partition leader epoch, each leader's
``LeaderChangeMessage`` is a control batch (skipped by ``read_all``), and ``quorum-state`` and
``*.checkpoint`` snapshots live beside the segments. Logs written by the single-node
controller (epoch 0, no control records) are read by the quorum as they are.
"""
from __future__ import annotations

from typing import Callable, Iterator, Sequence

from kbroker.wire import messages
from kbroker.wire.varint import BadVarint, encode_uvarint, read_uvarint

METADATA_TOPIC = "__cluster_metadata"
METADATA_DIR = METADATA_TOPIC + "-0"
FRAME_VERSION = 1

# record type (api key) -> (message name, version we write)
RECORD_TYPES: dict[int, tuple[str, int]] = {
    0: ("RegisterBrokerRecord", 4),
    1: ("UnregisterBrokerRecord", 0),
    2: ("TopicRecord", 0),
    3: ("PartitionRecord", 2),
    4: ("ConfigRecord", 0),
    5: ("PartitionChangeRecord", 2),
    7: ("FenceBrokerRecord", 0),
    8: ("UnfenceBrokerRecord", 0),
    9: ("RemoveTopicRecord", 0),
    10: ("DelegationTokenRecord", 0),
    12: ("FeatureLevelRecord", 0),
    14: ("ClientQuotaRecord", 0),
    15: ("ProducerIdsRecord", 0),
    17: ("BrokerRegistrationChangeRecord", 1),
    18: ("AccessControlEntryRecord", 0),
    19: ("RemoveAccessControlEntryRecord", 0),
    20: ("NoOpRecord", 0),
    26: ("RemoveDelegationTokenRecord", 0),
    11: ("UserScramCredentialRecord", 0),
    22: ("RemoveUserScramCredentialRecord", 0),
    27: ("RegisterControllerRecord", 0),       # read only: kbroker's controllers do not register
    28: ("ClearElrRecord", 0),
    29: ("UnregisterControllerRecord", 0),     # read only (4.4-IV2, KIP-1073's unregistration)
}
_TYPE_OF = {name: (key, version) for key, (name, version) in RECORD_TYPES.items()}


def is_metadata_log(topic: str) -> bool:
    return topic == METADATA_TOPIC


def record_version(record, metadata_version: int | None) -> int:
    """The version Kafka writes ``record`` at under ``metadata_version`` (module docstring)."""
    name = type(record).__name__
    latest = _TYPE_OF[name][1]
    if name == "BrokerRegistrationChangeRecord":
        if record.cordoned_log_dirs is not None and (metadata_version is None or metadata_version >= 30):
            return 3
        return 2 if record.log_dirs else 1
    if metadata_version is None:
        return latest
    if name in ("PartitionRecord", "PartitionChangeRecord"):
        return 2 if metadata_version >= 23 else 1 if metadata_version >= 17 else 0
    if name == "RegisterBrokerRecord":
        return (4 if metadata_version >= 30 else 3 if metadata_version >= 17
                else 2 if metadata_version >= 8 else 1)
    return latest


def encode_record(record, metadata_version: int | None = None) -> bytes:
    """The framed value of one metadata record, at the version ``metadata_version`` calls for."""
    key = _TYPE_OF[type(record).__name__][0]
    version = record_version(record, metadata_version)
    return (encode_uvarint(FRAME_VERSION) + encode_uvarint(key) + encode_uvarint(version)
            + record.encode(version))


def decode_record(value) -> object:
    """A metadata record object from its framed value (ValueError if it is not one)."""
    view = memoryview(value)
    try:
        frame, pos = read_uvarint(view, 0)
        key, pos = read_uvarint(view, pos)
        version, pos = read_uvarint(view, pos)
    except BadVarint as e:
        raise ValueError(f"bad metadata record frame: {e}") from e
    if frame != FRAME_VERSION:
        raise ValueError(f"unknown metadata frame version {frame}")
    entry = RECORD_TYPES.get(key)
    if entry is None:
        raise ValueError(f"unknown metadata record type {key}")
    return messages.get(entry[0]).decode(view, version, pos)


class MetadataLog:
    """Append-only store of metadata records. ``read_all()`` yields ``(offset, record)``;
    ``append(records)`` writes them as one fsynced batch and returns their offsets."""

    def __init__(self, log, clock: Callable[[], int]):
        self.log = log            # a kbroker.log.PartitionLog
        self._clock = clock

    @classmethod
    def open(cls, logs, clock: Callable[[], int]) -> "MetadataLog":
        """The metadata log kept by the broker's LogManager (loaded, recovered if needed)."""
        from kbroker.log.config import LogConfig
        config = LogConfig(flush_messages=1, segment_bytes=64 * 1024 * 1024,
                           retention_ms=-1, retention_bytes=-1, max_message_bytes=32 * 1024 * 1024)
        return cls(logs.get_or_create(METADATA_TOPIC, 0, config), clock)

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    def read_all(self) -> Iterator[tuple[int, object]]:
        from kbroker.wire import records as rb
        for header, data in self.log.batches(0):
            if header.is_control:
                continue
            for rec in rb.decode_records(data, 0, header):
                if rec.value is None:
                    continue
                yield rec.offset, decode_record(rec.value)

    def append(self, records: Sequence) -> list[int]:
        from kbroker.wire import records as rb
        if not records:
            return []
        now = self._clock()
        batch = rb.build_batch([(None, encode_record(r), (), now) for r in records],
                               partition_leader_epoch=0)
        info = self.log.append(batch, leader_epoch=0)
        self.log.high_watermark = self.log.log_end_offset   # flush.messages=1: already fsynced
        return list(range(info.base_offset, info.last_offset + 1))

    def statistics(self) -> dict:
        return {"end_offset": self.end_offset, "size": self.log.size}
