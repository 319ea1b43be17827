"""The shapes the replica layer takes and gives: fetch requests and answers per partition,
append answers, the per-partition error, and Kafka's special values (ListOffsets timestamps,
isolation levels, the internal topics).

Plain data, no I/O: the API modules build :class:`FetchSpec` and read :class:`FetchResult`,
:class:`AppendResult` and :class:`ReplicaError`; the follower fetcher turns each partition
of a Fetch answer back into a :class:`FetchResult`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from kbroker.wire.error_codes import ErrorCode

LONG_MAX = (1 << 63) - 1
# Kafka lets only the admin client id write these (Topic.isInternal).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

# ListOffsets special timestamps (Kafka's ListOffsetsRequest constants).
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6

READ_UNCOMMITTED = 0
READ_COMMITTED = 1


class ReplicaError(Exception):
    """A per-partition failure with the Kafka error code to answer with.

    ``record_errors`` lists ``(batch_index, message)`` for Produce v8+ (KIP-467); with
    record errors ``message`` is the answer's ``error_message`` (Kafka's
    RecordValidationException), otherwise it is for logs only. ``log_start_offset`` is what
    a Produce answer carries (None: not known yet, ``ReplicaManager.append`` fills it in
    as Kafka does)."""

    def __init__(self, error_code: int, message: str | None = None,
                 record_errors: Iterable[tuple[int, str | None]] = (),
                 log_start_offset: int | None = None):
        super().__init__(message or ErrorCode(error_code).name)
        self.error_code = int(error_code)
        self.message = message
        self.record_errors = list(record_errors)
        self.log_start_offset = log_start_offset


def error_from(exc: Exception) -> ReplicaError:
    """Map a log/wire exception that carries ``error_code`` to a ReplicaError."""
    if isinstance(exc, ReplicaError):
        return exc
    code = getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
    return ReplicaError(code, str(exc) or None)


@dataclass
class AppendResult:
    """The result of appending to one partition."""
    base_offset: int
    last_offset: int
    log_append_time_ms: int      # -1 for CreateTime topics
    log_start_offset: int
    # acks=all: the answer for the appended batch as of the append (check_replicated's),
    # None when it must wait for the followers
    replicated: int | None = None
    # the append moved the high watermark and woke parked fetches (or acks=all produces)
    # waiting for it: the Produce's answer lets them go first (kbroker/server/connection.py)
    woke_readers: bool = False


@dataclass
class RunResult:
    """The result of appending a run of Produce requests' batches to one partition
    (:func:`kbroker.replica.append.append_run`): each batch's answer as (base offset, log
    append time or -1, log start offset), in order."""
    answers: list
    last_offset: int
    # as AppendResult's: the connection lets woken fetches answer first
    woke_readers: bool = False


@dataclass
class FetchSpec:
    """One partition of a fetch request. ``last_fetched_epoch`` and ``log_start_offset``
    are only sent by followers (Fetch v12 / v5+)."""

    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1


@dataclass
class FetchResult:
    """The result of reading from one partition."""
    topic: str
    partition: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: Any = None                         # FileRegion or None
    aborted_transactions: list | None = None    # [] under read_committed, else None
    leader_epoch: int = -1
    diverging_epoch: tuple[int, int] | None = None   # (epoch, end offset), follower fetches

    @property
    def size(self) -> int:
        return self.records.length if self.records is not None else 0
