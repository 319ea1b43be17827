"""Transactional-id expiration: which ids a coordinator forgets, and their tombstones.

Kafka's ``TransactionStateManager.removeExpiredTransactionalIds``, run every
``transaction.remove.expired.transaction.cleanup.interval.ms`` (1 h): a transactional id
whose state allows it -- ``Empty``, ``CompleteCommit`` or ``CompleteAbort``, never
``Ongoing`` nor a ``Prepare*`` -- and whose last update is at least
``transactional.id.expiration.ms`` old (``txnLastUpdateTimestamp <= now - expiration``,
wall clock, 7 days by default) is removed. The coordinator marks the id as being removed
(Kafka's ``prepareDead``: requests for it answer CONCURRENT_TRANSACTIONS meanwhile), appends
a tombstone (the id's key, no value) to its ``__transaction_state`` partition, acks=all,
without holding its lock while the tombstone replicates (requests for other ids go on), and
forgets the id once the tombstone is stored, if nothing replaced its state; a reload of the partition (a restart, a coordinator move) replays
the tombstone and does not bring the id back, and compaction later drops both.

Afterwards the id is unknown, as if never used: DescribeTransactions answers
``TRANSACTIONAL_ID_NOT_FOUND``, ListTransactions leaves it out, a request naming its old
producer id (AddPartitionsToTxn, EndTxn...) gets ``INVALID_PRODUCER_ID_MAPPING``, and
InitProducerId hands out a new producer id at epoch 0 (also to a KIP-360 request naming
the old id and epoch). The producer id itself is not given back: the partitions' producer
state forgets it on its own clock (``producer.id.expiration.ms``,
:mod:`kbroker.log.producer_expiry`).

Tombstones are grouped per ``__transaction_state`` partition into batches below the
partition's ``max.message.bytes``, as Kafka's builder fills a batch until it has no room.
Pure: :func:`expired_by_partition` and :func:`tombstone_batches` take the time and the
limits as arguments; :meth:`TransactionCoordinator.remove_expired_transactional_ids` does
the writes.
"""
from __future__ import annotations

from typing import Iterable

from kbroker.wire import records as wire_records

from . import records as trec
from .metadata import TransactionMetadata, TxnState

EXPIRABLE_STATES = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
# a v2 record's framing around its key: length, attributes, deltas, null value, no headers
_RECORD_OVERHEAD = 24
_BATCH_OVERHEAD = 61


def should_expire(meta: TransactionMetadata, now_ms: int, expiration_ms: int) -> bool:
    """Kafka's ``shouldExpire`` (and no transition of the id under way)."""
    return (not meta.pending and meta.state in EXPIRABLE_STATES
            and meta.last_update_ms <= now_ms - expiration_ms)


def expired_by_partition(metas: Iterable[TransactionMetadata], loaded: set[int], now_ms: int,
                         expiration_ms: int) -> dict[int, list[TransactionMetadata]]:
    """The ids to expire, by ``__transaction_state`` partition (only loaded partitions)."""
    out: dict[int, list[TransactionMetadata]] = {}
    for meta in metas:
        if meta.partition in loaded and should_expire(meta, now_ms, expiration_ms):
            out.setdefault(meta.partition, []).append(meta)
    return out


def tombstone_batches(metas: list[TransactionMetadata], now_ms: int,
                      max_batch_bytes: int) -> list[tuple[bytes, list[TransactionMetadata]]]:
    """One or more batches of tombstones for ``metas`` (each batch with the ids it removes),
    each below ``max_batch_bytes``; a single id always gets a batch."""
    out: list[tuple[bytes, list[TransactionMetadata]]] = []
    keys: list[bytes] = []
    group: list[TransactionMetadata] = []
    size = _BATCH_OVERHEAD

    def flush() -> None:
        out.append((wire_records.build_batch([(k, None, (), now_ms) for k in keys]), list(group)))
        keys.clear()
        group.clear()

    for meta in metas:
        key = trec.encode_key(meta.transactional_id)
        grow = len(key) + _RECORD_OVERHEAD
        if keys and size + grow > max_batch_bytes:
            flush()
            size = _BATCH_OVERHEAD
        keys.append(key)
        group.append(meta)
        size += grow
    if keys:
        flush()
    return out
