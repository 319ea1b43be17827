"""One transactional id's state (Kafka's ``TransactionMetadata`` / ``TransactionState``).

States and the transitions the coordinator makes::

    Empty / CompleteCommit / CompleteAbort --AddPartitions/AddOffsets--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
    Ongoing --EndTxn(abort) / timeout / fencing--> PrepareAbort --markers--> CompleteAbort
    any completed state --InitProducerId--> Empty (epoch bumped)

With transaction version 2 (KIP-890 part 2; ``client_transaction_version`` = 2) every
EndTxn bumps the epoch: Prepare* is stored with ``producer_epoch + 1`` (the markers carry
it) and ``last_producer_epoch`` = the client's epoch; when that bump reaches
``MAX_EPOCH`` the Prepare* names a ``next_producer_id`` and Complete* moves the id to it
at epoch 0 (``previous_producer_id`` = the old one). An abort from Empty or Complete* is
allowed too (a TV2 client cannot know whether its produce requests opened a transaction).

Every transition is a new ``TransactionLogValue`` appended to ``__transaction_state``; the
in-memory state changes only once the record is in the log (records, then replay). The
epoch is bumped by InitProducerId, and by the coordinator when it aborts a transaction
that timed out or that a new producer instance fences (so the old instance is fenced);
an epoch about to overflow moves the transactional id to a new producer id (KIP-360).
Pure data; no I/O.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum

from .records import TxnLogValue

MAX_EPOCH = 32767


class TxnState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name admin APIs report (ListTransactions, DescribeTransactions)."""
        return _NAMES[self]

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


_NAMES = {TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing",
          TxnState.PREPARE_COMMIT: "PrepareCommit", TxnState.PREPARE_ABORT: "PrepareAbort",
          TxnState.COMPLETE_COMMIT: "CompleteCommit", TxnState.COMPLETE_ABORT: "CompleteAbort",
          TxnState.DEAD: "Dead", TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence"}
STATE_BY_NAME = {v: k for k, v in _NAMES.items()}


@dataclass
class TransactionMetadata:
    """A transactional id's state: producer, epoch, partitions and status."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: frozenset = frozenset()
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_epoch: int = -1       # the epoch before the last bump (KIP-360 retries)
    previous_producer_id: int = -1      # the id before an epoch overflow
    next_producer_id: int = -1          # TV2: the id a Prepare* at an exhausted epoch moves to
    client_transaction_version: int = 0  # 2 once a TV2 client (EndTxn v5, Produce v12+) used it
    partition: int = 0                  # of __transaction_state
    pending: bool = field(default=False, compare=False)   # a transition is being written

    def to_value(self) -> TxnLogValue:
        return TxnLogValue(self.producer_id, self.producer_epoch, self.timeout_ms,
                           int(self.state), tuple(sorted(self.partitions)),
                           self.last_update_ms, self.start_ms, self.previous_producer_id,
                           self.next_producer_id, self.client_transaction_version)

    @classmethod
    def from_value(cls, transactional_id: str, v: TxnLogValue, partition: int) -> "TransactionMetadata":
        return cls(transactional_id, v.producer_id, v.producer_epoch, v.timeout_ms,
                   TxnState(v.status), frozenset(v.partitions), v.start_ms, v.last_update_ms,
                   previous_producer_id=v.previous_producer_id, next_producer_id=v.next_producer_id,
                   client_transaction_version=v.client_transaction_version, partition=partition)

    def copy(self, **changes) -> "TransactionMetadata":
        return dataclasses.replace(self, **changes)

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    def matches_producer(self, producer_id: int, producer_epoch: int) -> bool:
        """KIP-360: the id/epoch an InitProducerId says the producer has is ours (current
        or, for a retried bump, the one before it)."""
        if producer_id == self.producer_id:
            return producer_epoch in (self.producer_epoch, self.last_producer_epoch)
        return producer_id == self.previous_producer_id and producer_epoch >= 0
