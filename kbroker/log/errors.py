"""Typed errors of the log store.

Batch-level problems found in bytes from a client are the wire layer's
:class:`~kbroker.wire.errors.CorruptRecord` / :class:`~kbroker.wire.errors.InvalidRecord`;
the errors here are about the log itself.  Each carries the Kafka error code the
broker answers with, so an API module can map ``exc.error_code`` directly.
"""


class LogError(Exception):
    """Base class of every log-store error."""

    error_code = -1  # UNKNOWN_SERVER_ERROR


class OffsetOutOfRange(LogError):
    """The requested offset is below the log start offset or above the log end offset."""

    error_code = 1

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int):
        super().__init__(
            f"offset {offset} outside [{log_start_offset}, {log_end_offset}]"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class RecordBatchTooLarge(LogError):
    """A single append does not fit in an empty segment (RECORD_LIST_TOO_LARGE)."""

    error_code = 18


class LogClosed(LogError):
    """The partition log was closed or deleted; the caller holds a stale handle."""

    error_code = 56  # KAFKA_STORAGE_ERROR


class KafkaStorageError(LogError):
    """A log directory or file cannot be read or written. ``log_dir`` is set when the error
    was reported to the log dir failure channel (:mod:`kbroker.log.failure`): that directory
    has failed."""

    error_code = 56

    def __init__(self, message: str = "", *, log_dir=None):
        super().__init__(message)
        self.log_dir = log_dir


class PolicyViolation(LogError):
    """An operation the log's configuration forbids (e.g. DeleteRecords on a compacted topic)."""

    error_code = 44


class UnexpectedAppendOffset(LogError):
    """A follower append whose offsets do not continue the log (Kafka's
    UnexpectedAppendOffsetException): the first batch starts below the log end offset.
    The replica fetcher treats it as a sign to truncate or restart fetching."""

    error_code = -1  # not an API error in Kafka either

    def __init__(self, message: str, first_offset: int, last_offset: int):
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class OffsetsOutOfOrder(UnexpectedAppendOffset):
    """A follower append whose batches do not have strictly increasing offsets
    (Kafka's OffsetsOutOfOrderException)."""
