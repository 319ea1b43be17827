"""The records of ``__transaction_state``: where a transactional id lives and its key/value bytes.

Kafka's format (``TransactionLog``), so the topic can be read by Kafka's tools and the other
way round:

- key   = int16 key version (0) + ``TransactionLogKey`` (the transactional id);
- value = int16 value version (0) + ``TransactionLogValue`` (producer id and epoch, timeout,
  status byte, partitions, timestamps), or null: a tombstone (an expired transactional id).

Status bytes are Kafka's: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7. Version 1 values (KIP-890,
flexible, with the tagged fields ``PreviousProducerId``, ``NextProducerId``,
``NextProducerEpoch`` and ``ClientTransactionVersion``) are written once the cluster
finalized ``transaction.version`` ≥ 1, version 0 before (as Kafka's ``TransactionLog``).
The partition of an id is ``abs(javaHashCode(id)) % transaction.state.log.num.partitions``.
Pure data: no I/O.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from kbroker.group.records import java_string_hash
from kbroker.wire import messages

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0
_H = struct.Struct(">h")


def partition_for(transactional_id: str, num_partitions: int) -> int:
    h = java_string_hash(transactional_id)
    h = 0 if h == -(1 << 31) else abs(h)
    return h % num_partitions


class TxnLogValue(NamedTuple):
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: tuple            # ((topic, partition), ...) sorted
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


def encode_key(transactional_id: str) -> bytes:
    return _H.pack(KEY_VERSION) + messages.TransactionLogKey(
        transactional_id=transactional_id).encode(KEY_VERSION)


def decode_key(buf) -> str | None:
    """The transactional id, or None for a key version this broker does not know."""
    if buf is None or len(buf) < 2:
        return None
    (version,) = _H.unpack_from(buf, 0)
    if version != 0:
        return None
    return messages.TransactionLogKey.decode(buf, 0, 2).transactional_id


def encode_value(v: TxnLogValue, version: int = VALUE_VERSION) -> bytes:
    V = messages.TransactionLogValue
    by_topic: dict[str, list[int]] = {}
    for topic, p in v.partitions:
        by_topic.setdefault(topic, []).append(p)
    parts = None
    if by_topic or v.status != 0:
        parts = [V.PartitionsSchema(topic=t, partition_ids=sorted(ps))
                 for t, ps in sorted(by_topic.items())]
    msg = V(producer_id=v.producer_id, producer_epoch=v.producer_epoch,
            transaction_timeout_ms=v.timeout_ms, transaction_status=v.status,
            transaction_partitions=parts, transaction_last_update_timestamp_ms=v.last_update_ms,
            transaction_start_timestamp_ms=v.start_ms)
    if version >= 1:
        msg.previous_producer_id = v.previous_producer_id
        msg.next_producer_id = v.next_producer_id
        msg.client_transaction_version = v.client_transaction_version
    return _H.pack(version) + msg.encode(version)


def decode_value(buf) -> TxnLogValue | None:
    """None for a tombstone; raises ValueError for an unknown version."""
    if buf is None:
        return None
    (version,) = _H.unpack_from(buf, 0)
    if version not in (0, 1):
        raise ValueError(f"TransactionLogValue version {version} unknown")
    m = messages.TransactionLogValue.decode(buf, version, 2)
    parts = tuple(sorted((p.topic, i) for p in (m.transaction_partitions or ())
                         for i in p.partition_ids))
    return TxnLogValue(m.producer_id, m.producer_epoch, m.transaction_timeout_ms,
                       m.transaction_status, parts, m.transaction_last_update_timestamp_ms,
                       m.transaction_start_timestamp_ms,
                       getattr(m, "previous_producer_id", -1) if version >= 1 else -1,
                       getattr(m, "next_producer_id", -1) if version >= 1 else -1,
                       getattr(m, "client_transaction_version", 0) if version >= 1 else 0)
