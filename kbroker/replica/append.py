"""The leader's append path: validate one partition's produce data and append it to the log
(Kafka's ``UnifiedLog.analyzeAndValidateRecords``, ``LogValidator`` and
``analyzeAndValidateProducerState``), and write transaction markers.

Rules it keeps:

- The hot path reads batch headers only; the log's append checks CRC32C, sizes and the
  compacted-topic key rule once. Single records are decoded only when a rule needs them:
  naming the offending records of a rejected timestamp or of a keyless record on a compacted
  topic (KIP-467 ``record_errors``), and a topic ``compression.type`` other than
  ``producer`` (the batch is rebuilt with the topic's codec).
- One batch per partition per request; ``acks=-1`` checks ``min.insync.replicas`` against
  the committed ISR before appending.
- CreateTime timestamps must fall inside KIP-937's window
  (``message.timestamp.before.max.ms`` / ``...after.max.ms``, or the older
  ``message.timestamp.difference.max.ms``); LogAppendTime topics get the broker's time.
- Idempotence and transactions (KIP-98): a batch with a producer id is checked against the
  partition's producer state (kbroker/log/producer_state.py): a duplicate of one of the
  producer's last five batches is answered with its original offsets and not stored again;
  a sequence gap is ``OUT_OF_ORDER_SEQUENCE_NUMBER``, an old epoch
  ``INVALID_PRODUCER_EPOCH``. Clients may not write control batches. The first
  transactional batch of a producer on a partition is checked with the transaction
  coordinator (``txn_verifier``, KIP-890 part 1).

Everything here is synchronous and touches only the partition's log: waking waiters,
advancing the high watermark and counting are the manager's part.
"""
from __future__ import annotations

import logging
from typing import Callable

from kbroker.log.producer_state import ProducerStateError
from kbroker.log.config import LogConfig
from kbroker.replica.partition import Partition
from kbroker.replica.results import LONG_MAX, AppendResult, ReplicaError, RunResult, error_from
from kbroker.replica.state import min_insync_ok
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire.errors import CorruptRecord, InvalidRecord

log = logging.getLogger(__name__)

# Topic compression.type → batch codec; "producer" keeps what the producer sent.
_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

# Produce errors Kafka answers with log_start_offset -1 (appendToLocalLog's first catch, and
# the internal-topic check before it); every other append error carries the partition's.
NO_LOG_START = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                          ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                          ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
                          ErrorCode.INVALID_TOPIC_EXCEPTION})

# Timestamp window defaults (Kafka 4: before = unlimited, after = one hour, KIP-937/KIP-1030).
_TS_BEFORE_DEFAULT = LONG_MAX
_TS_AFTER_DEFAULT = 3_600_000

_LOG_OVERHEAD = rec.LOG_OVERHEAD

ONE_BATCH = "produce requests must carry exactly one record batch per partition"


def _java_long(v: int) -> int:
    """``v`` as Java's 64-bit arithmetic leaves it (Kafka's messages print wrapped bounds)."""
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


def as_replica_error(exc: Exception) -> ReplicaError | None:
    """The ReplicaError an append failure answers with; None when it is not a Kafka error
    (a bug, not bad input: the caller raises it again)."""
    if isinstance(exc, ReplicaError):
        return exc
    if isinstance(exc, (CorruptRecord, InvalidRecord, rec.RecordTooLarge)):
        return ReplicaError(exc.error_code, str(exc))
    if not hasattr(exc, "error_code"):
        return None
    return error_from(exc)


def append_records(part: Partition, records, *, required_acks: int, now_ms: int, origin: str,
                   txn_verifier: Callable | None) -> tuple[AppendResult, int | None]:
    """Validate and append one partition's produce data on the leader. Returns the answer
    and the bytes appended (None: a duplicate, nothing stored). Raises ReplicaError or the
    log's typed errors."""
    config = part.config
    if records is None or len(records) == 0:
        raise ReplicaError(ErrorCode.INVALID_RECORD, ONE_BATCH, log_start_offset=-1)
    # Header walk only (no CRC): the log's append checks CRC32C, sizes and keys once, on
    # the header parsed here (one parse per batch on the produce path)
    headers = _batch_headers(records)
    if headers is not None and len(headers) > 1:
        # Kafka checks this on the request (ProduceRequest.validateRecords): no log start
        raise ReplicaError(ErrorCode.INVALID_RECORD, ONE_BATCH, log_start_offset=-1)
    if required_acks == -1 and not min_insync_ok(len(part.replication.isr),
                                                 config.min_insync_replicas):
        raise ReplicaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                           f"ISR {len(part.isr)} < min.insync.replicas {config.min_insync_replicas}")
    log_append_time = config.log_append_time
    if headers and headers[0][9] >= 0:     # (has_producer_id, without the call)
        dup = check_producer_state(part, headers[0], origin, txn_verifier)
        if dup is not None:
            # Kafka answers a duplicate with the batch's stored (max) timestamp as its
            # log append time, whatever the topic's timestamp type
            return AppendResult(
                base_offset=dup.first_offset, last_offset=dup.last_offset,
                log_append_time_ms=dup.timestamp,
                log_start_offset=part.log.log_start_offset), None
    elif headers and headers[0][5] & rec.ATTR_CONTROL and origin == "client":
        raise ReplicaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
    if headers and not log_append_time and headers[0][1] + _LOG_OVERHEAD <= config.max_message_bytes:
        check_timestamps(part, records, headers[0], now_ms)
    target = _CODECS.get(config.compression_type)
    sent = records
    header = headers[0] if headers else None
    if header is not None and target is not None and header[5] & rec.ATTR_COMPRESSION_MASK != target:
        records = recompress(records, header, target, config)
        header = None       # a new batch: the log parses its header
    try:
        info = part.log.append(records, leader_epoch=part.leader_epoch,
                               log_append_time=now_ms if log_append_time else None,
                               now_ms=now_ms, header=header)
    except InvalidRecord:
        if headers and config.compact:
            # the log refused a keyless record: name the records as Kafka does
            raise_record_errors(part, sent, headers[0], now_ms, check_timestamps=False)
        raise
    return AppendResult(
        base_offset=info.base_offset, last_offset=info.last_offset,
        log_append_time_ms=info.log_append_time if log_append_time else -1,
        log_start_offset=info.log_start_offset), len(records)


def append_run(part: Partition, batches: list, *, now_ms: int) -> RunResult | None:
    """The batches of several Produce requests for one partition, appended in one write (a
    connection's run of pipelined requests: :func:`kbroker.api.produce.handle_run`); each
    batch's answer in order (:class:`RunResult`). Only batches :func:`append_records`
    would store as they are, each the whole of its request's data: one batch, no producer
    id (an idempotent batch is checked against the producer state the batch before it
    left), not a control batch, the producer's codec kept by the topic's
    ``compression.type``, CreateTime timestamps inside the window
    (:func:`check_timestamps`' bounds, taken once). ``None`` when one is not, or when the
    log refuses the run (it writes nothing then): the caller appends the requests one by
    one, which answers each exactly as Kafka does."""
    config = part.config
    target = _CODECS.get(config.compression_type)
    append_time = config.log_append_time
    limits = None if append_time else timestamp_limits(part, now_ms)
    headers = []
    for records in batches:
        try:
            h = rec.parse_header(records, 0)
        except CorruptRecord:
            return None
        if h[1] + _LOG_OVERHEAD != len(records) or h[9] >= 0 or h[5] & rec.ATTR_CONTROL:
            return None
        if target is not None and h[5] & rec.ATTR_COMPRESSION_MASK != target:
            return None
        if limits is not None and not timestamps_inside(h, *limits):
            return None
        headers.append(h)
    try:
        info = part.log.append(bytearray().join(batches), leader_epoch=part.leader_epoch,
                               log_append_time=now_ms if append_time else None, now_ms=now_ms,
                               headers=headers)
    except Exception as exc:
        if not hasattr(exc, "error_code"):
            raise
        return None             # refused before anything was written (kbroker.log.partition)
    answered_time = now_ms if append_time else -1
    log_start = info.log_start_offset
    answers = []
    offset = info.base_offset
    for h in headers:
        answers.append((offset, answered_time, log_start))
        offset += h[6] + 1
    return RunResult(answers, offset - 1)


def _batch_headers(records) -> tuple | list | None:
    """The headers of the batches in ``records`` (None: not a clean sequence of batches; the
    log's validation names the problem). One batch filling the data exactly, the case of
    every well-behaved producer, is found by its header alone."""
    try:
        first = rec.parse_header(records, 0)
        if first[1] + _LOG_OVERHEAD == len(records):
            return (first,)
        return [h for _, h in rec.iter_batches(records)]
    except CorruptRecord:
        return None


def check_producer_state(part: Partition, header, origin: str, txn_verifier: Callable | None):
    """Kafka's ``analyzeAndValidateProducerState`` for one batch: the duplicate's
    metadata, or None to append; raises ReplicaError."""
    client = origin == "client"
    if client:
        if header.attributes & rec.ATTR_CONTROL:
            raise ReplicaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
        if header.base_sequence < 0:
            raise ReplicaError(ErrorCode.INVALID_RECORD,
                               f"batch of producer {header.producer_id} has no sequence number")
    ps = part.log.producer_state
    try:
        dup = ps.check_append(header, client=client)
    except ProducerStateError as exc:
        if exc.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
            # as Kafka, which logs the append's exception: a producer's sequence gap is
            # data lost between it and the log, or state this replica does not keep
            log.warning("%s-%d: %s", part.topic, part.index, exc.message)
        raise ReplicaError(exc.error_code, exc.message) from None
    if dup is not None:
        return dup
    if client and header.attributes & rec.ATTR_TRANSACTIONAL and \
            not ps.has_ongoing(header.producer_id, header.producer_epoch):
        code = (ErrorCode.INVALID_TXN_STATE if txn_verifier is None else
                txn_verifier(header.producer_id, header.producer_epoch, part.topic, part.index))
        if code:
            raise ReplicaError(code, f"producer {header.producer_id} has no ongoing "
                                     f"transaction with {part.topic}-{part.index}")
    return None


def append_marker(part: Partition, *, producer_id: int, producer_epoch: int, commit: bool,
                  coordinator_epoch: int, now_ms: int) -> int:
    """Append a commit/abort marker (WriteTxnMarkers' per-partition work); returns its
    offset. Raises ReplicaError (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED...)."""
    try:
        part.log.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
    except ProducerStateError as exc:
        raise ReplicaError(exc.error_code, exc.message) from None
    batch = rec.build_control_batch(commit=commit, producer_id=producer_id,
                                    producer_epoch=producer_epoch, timestamp=now_ms,
                                    coordinator_epoch=coordinator_epoch)
    try:
        info = part.log.append(batch, leader_epoch=part.leader_epoch, now_ms=now_ms)
    except Exception as exc:
        if not hasattr(exc, "error_code"):
            raise
        raise error_from(exc) from None
    return info.base_offset


def recompress(records, header, codec: int, config: LogConfig) -> bytes:
    """Topic ``compression.type`` other than ``producer``: rebuild the batch with the
    topic's codec, keeping offsets deltas, timestamps, headers and producer state
    (Kafka's LogValidator does the same; the only produce path that decodes records)."""
    if header.size > config.max_message_bytes:
        raise ReplicaError(ErrorCode.MESSAGE_TOO_LARGE,
                           f"batch of {header.size} bytes exceeds max.message.bytes "
                           f"{config.max_message_bytes}")
    try:
        rec.verify_crc(records, 0, header)
        decoded = rec.decode_records(records, 0, header)
    except CorruptRecord as exc:
        raise ReplicaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    return rec.build_batch(
        decoded, compression=codec, timestamp_type=header.timestamp_type,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, is_transactional=header.is_transactional,
        offset_deltas=[r.offset_delta for r in decoded],
        last_offset_delta=header.last_offset_delta)


def timestamp_window(props: dict) -> tuple[int, int]:
    """(before, after) in ms: KIP-937's before/after settings, or the older
    ``message.timestamp.difference.max.ms`` when it is set."""
    diff = props.get("message.timestamp.difference.max.ms")
    if diff is not None and int(diff) < LONG_MAX:
        return int(diff), int(diff)
    return (int(props.get("message.timestamp.before.max.ms", _TS_BEFORE_DEFAULT)),
            int(props.get("message.timestamp.after.max.ms", _TS_AFTER_DEFAULT)))


def partition_window(part: Partition) -> tuple[int, int]:
    """:func:`timestamp_window` of the partition's configuration, read from its properties
    once per configuration (a new configuration replaces the dict), not once per batch."""
    props = part.props
    window = part.timestamp_window
    if window is None or window[0] is not props:
        window = part.timestamp_window = (props, *timestamp_window(props))
    return window[1], window[2]


def timestamp_bounds(before: int, after: int, now_ms: int) -> tuple[int, int]:
    """(lowest, highest) acceptable CreateTime timestamp for a (before, after) window."""
    lo = now_ms - before if before < LONG_MAX else -LONG_MAX
    hi = now_ms + after if after < LONG_MAX else LONG_MAX
    return lo, hi


def timestamp_limits(part: Partition, now_ms: int) -> tuple[int, int] | None:
    """(lowest, highest) CreateTime timestamp the partition accepts now; None when its
    window is unlimited both ways."""
    window = part.timestamp_window
    if window is not None and window[0] is part.props:
        before, after = window[1], window[2]
    else:
        before, after = partition_window(part)
    if before >= LONG_MAX and after >= LONG_MAX:
        return None
    return timestamp_bounds(before, after, now_ms)


def timestamps_inside(header, lo: int, hi: int) -> bool:
    """Whether a batch's base and max timestamps lie in [``lo``, ``hi``] (a batch with a
    delete horizon has only its max timestamp to check)."""
    last = header[8]
    first = last if header[5] & rec.ATTR_DELETE_HORIZON else header[7]
    return lo <= first <= hi and lo <= last <= hi


def check_timestamps(part: Partition, records, header, now_ms: int) -> None:
    """Batch-level check (base and max timestamp); on failure the records are named
    (:func:`raise_record_errors`)."""
    limits = timestamp_limits(part, now_ms)
    if limits is None or timestamps_inside(header, *limits):
        return
    raise_record_errors(part, records, header, now_ms, check_timestamps=True)


def raise_record_errors(part: Partition, records, header, now_ms: int, *,
                        check_timestamps: bool) -> None:
    """Kafka's LogValidator record checks, run only once a batch-level check failed:
    decode the batch and raise INVALID_TIMESTAMP (any timestamp error) or INVALID_RECORD
    with every offending record in ``record_errors`` (a keyless record on a compacted
    topic first, else a timestamp out of the window) and Kafka's messages. Returns when
    no record is at fault."""
    tp = f"{part.topic}-{part.index}"
    before, after = partition_window(part)
    lo, hi = timestamp_bounds(before, after, now_ms)
    errors: list[tuple[int, str]] = []
    bad_timestamp = False
    try:
        rec.verify_crc(records, 0, header)  # a corrupt batch is CORRUPT_MESSAGE first
        decoded = rec.decode_records(records, 0, header)
    except CorruptRecord as exc:
        raise ReplicaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    for i, r in enumerate(decoded):
        if part.config.compact and r.key is None and not header.is_control:
            errors.append((i, "Compacted topic cannot accept message without key in "
                              f"topic partition {tp}"))
        elif check_timestamps and r.timestamp != -1 and not lo <= r.timestamp <= hi:
            bad_timestamp = True
            errors.append((i, f"Timestamp {r.timestamp} of message with offset "
                              f"{header.base_offset + r.offset_delta} is out of range. The "
                              f"timestamp should be within [{_java_long(now_ms - before)}, "
                              f"{_java_long(now_ms + after)}]"))
    first = header.max_timestamp if header.has_delete_horizon else header.base_timestamp
    if not errors and check_timestamps and first >= 0 and header.max_timestamp >= 0 \
            and not (lo <= first <= hi and lo <= header.max_timestamp <= hi):
        # every record is in the window but the header's timestamps are not: refuse
        # rather than store a max timestamp no record has
        bad_timestamp = True
        errors.append((0, f"Batch timestamps [{header.base_timestamp}, "
                          f"{header.max_timestamp}] do not match its records"))
    if not errors:
        return
    if bad_timestamp:
        raise ReplicaError(ErrorCode.INVALID_TIMESTAMP,
                           "One or more records have been rejected due to invalid timestamp",
                           errors)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    raise ReplicaError(ErrorCode.INVALID_RECORD,
                       f"One or more records have been rejected due to {len(errors)} record "
                       f"errors in total, and only showing the first three errors at most: "
                       f"[{shown}]", errors)
