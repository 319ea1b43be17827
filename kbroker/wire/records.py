"""Record batches, message format v2 ("magic 2", KIP-98): parse, check, patch, decode, build.

This is the one place that knows the batch layout. The produce path only touches the header
(parse, CRC32C check, offset/epoch patch); single records are decoded only where semantics
demand it (compaction, control markers, tests) — see ARCHITECTURE.md, rule 5.

Batch layout (big-endian; the CRC32C covers ``attributes`` to the end of the batch)::

    offset  size  field
       0     8    base_offset              ┐ LOG_OVERHEAD (12)
       8     4    batch_length             ┘ bytes after this field
      12     4    partition_leader_epoch   (rewritten by the broker; outside the CRC)
      16     1    magic = 2
      17     4    crc (uint32, CRC32C)
      21     2    attributes               bits 0-2 codec, 3 timestamp type, 4 transactional,
                                           5 control, 6 delete horizon set (KIP-534)
      23     4    last_offset_delta
      27     8    base_timestamp           (the delete horizon when bit 6 is set)
      35     8    max_timestamp
      43     8    producer_id
      51     2    producer_epoch
      53     4    base_sequence
      57     4    records_count
      61     …    records, compressed as one block when the codec is not none

Each record: ``length`` varint, ``attributes`` int8 (unused), ``timestamp_delta`` varlong,
``offset_delta`` varint, key and value as varint length (−1 = null) + bytes, then a varint
header count and per header a varint-length UTF-8 key and a varint-length (−1 = null) value.

Errors: malformed bytes raise :class:`CorruptRecord` (CORRUPT_MESSAGE, 2); well-formed batches
that break a produce rule raise :class:`InvalidRecord` (INVALID_RECORD, 87); oversize batches
raise :class:`RecordTooLarge` (MESSAGE_TOO_LARGE, 10). Nothing else escapes on bad input.
Sans-I/O: no sockets, no clock — timestamps are always passed in.
"""

from __future__ import annotations

import struct
from typing import Iterator, NamedTuple, Sequence

from .crc import crc32c

from . import compression as _compression
from .compression import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    DEFAULT_MAX_DECOMPRESSED,
)
from .errors import CorruptRecord, InvalidRecord, WireError
from .varint import encode_varint, encode_varlong, read_varint, read_varlong

__all__ = [
    "ATTR_COMPRESSION_MASK",
    "ATTR_CONTROL",
    "ATTR_DELETE_HORIZON",
    "ATTR_TIMESTAMP_TYPE",
    "ATTR_TRANSACTIONAL",
    "BATCH_HEADER_SIZE",
    "BatchHeader",
    "COMPRESSION_GZIP",
    "COMPRESSION_LZ4",
    "COMPRESSION_NONE",
    "COMPRESSION_SNAPPY",
    "COMPRESSION_ZSTD",
    "CONTROL_TYPE_ABORT",
    "CONTROL_TYPE_COMMIT",
    "DEFAULT_MAX_DECOMPRESSED",
    "Header",
    "LOG_OVERHEAD",
    "MAGIC",
    "MIN_RECORD_SIZE",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "Record",
    "RecordTooLarge",
    "SimpleRecord",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "build_batch",
    "build_control_batch",
    "check_batch",
    "control_record_type",
    "decode_records",
    "increment_sequence",
    "iter_all_records",
    "iter_batches",
    "parse_control_record",
    "parse_header",
    "patch_base_offset",
    "patch_offset_and_epoch",
    "patch_partition_leader_epoch",
    "recompute_crc",
    "set_max_timestamp",
    "validate_batches",
    "verify_crc",
]

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12
MAGIC = 2
# batch_length counts the bytes after itself: a batch with no records has exactly this many.
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
# Smallest encoded record: length, attributes, timestamp delta, offset delta, key length,
# value length, header count — one byte each. Bounds records_count before any allocation.
MIN_RECORD_SIZE = 7

TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

# Control record types (the int16 after the version in a control record's key).
CONTROL_TYPE_ABORT = 0
CONTROL_TYPE_COMMIT = 1

_INT32_MAX = (1 << 31) - 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == BATCH_HEADER_SIZE

_OFF_PARTITION_LEADER_EPOCH = 12
_OFF_MAGIC = 16
_OFF_CRC = 17
_OFF_ATTRIBUTES = 21
_OFF_MAX_TIMESTAMP = 35

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_CONTROL_KEY = struct.Struct(">hh")
_TXN_MARKER_VALUE = struct.Struct(">hi")


class RecordTooLarge(WireError):
    """A batch is larger than the configured limit (``max.message.bytes``): MESSAGE_TOO_LARGE."""

    error_code = 10


def increment_sequence(sequence: int, increment: int) -> int:
    """Producer sequences are int32 that wrap from 2**31-1 back to 0 (Kafka's rule)."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


class BatchHeader(NamedTuple):
    """The decoded fixed 61-byte header of one v2 batch (see the module docstring for layout)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return TIMESTAMP_LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else TIMESTAMP_CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: with the attribute bit set, base_timestamp holds the delete horizon."""
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, including base_offset and batch_length."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


class Header(NamedTuple):
    """One record header: a UTF-8 key (never null) and a nullable byte value."""

    key: str
    value: bytes | None


class Record(NamedTuple):
    """One decoded record with absolute offset and timestamp.

    ``timestamp`` is the batch's max timestamp when the batch uses LogAppendTime (every record
    of such a batch carries the broker's append time), else base timestamp + delta.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0
    offset_delta: int = 0
    timestamp_delta: int = 0


class SimpleRecord(NamedTuple):
    """Input to :func:`build_batch`; same field order as the plain 4-tuple form."""

    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str | bytes, bytes | None]] = ()
    timestamp: int = NO_TIMESTAMP


def _corrupt(message: str, position: int | None = None) -> CorruptRecord:
    exc = CorruptRecord(message)
    exc.position = position  # where the offending batch starts, for log recovery
    return exc


# --------------------------------------------------------------------------- header level


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """Decode the 61-byte header at ``pos``; does not require the rest of the batch."""
    if pos < 0 or len(buf) - pos < BATCH_HEADER_SIZE:
        raise _corrupt(f"batch header truncated at {pos}", pos)
    header = tuple.__new__(BatchHeader, _HEADER.unpack_from(buf, pos))
    if header[3] != MAGIC:
        raise _corrupt(f"unsupported batch magic {header[3]} at {pos}", pos)
    if header[1] < _MIN_BATCH_LENGTH:
        raise _corrupt(f"batch length {header[1]} at {pos} is below the header size", pos)
    return header


def _batch_end(buf, pos: int, header: BatchHeader) -> int:
    end = pos + LOG_OVERHEAD + header.batch_length
    if end > len(buf):
        raise _corrupt(f"batch at {pos} is truncated: needs {end - pos} bytes, has {len(buf) - pos}", pos)
    return end


def verify_crc(buf, pos: int = 0, header: BatchHeader | None = None) -> None:
    """Check the batch's CRC32C (attributes through the end of the batch), without copying."""
    if header is None:
        header = parse_header(buf, pos)
    end = _batch_end(buf, pos, header)
    if crc32c(memoryview(buf)[pos + _OFF_ATTRIBUTES : end]) != header.crc:
        raise _corrupt(f"batch at {pos} (base offset {header.base_offset}) fails its CRC32C check", pos)


def recompute_crc(buf, pos: int) -> None:
    """Rewrite the CRC of the batch at ``pos`` in place after changing CRC-covered bytes."""
    header = parse_header(buf, pos)
    end = _batch_end(buf, pos, header)
    _UINT32.pack_into(buf, pos + _OFF_CRC, crc32c(memoryview(buf)[pos + _OFF_ATTRIBUTES : end]))


def patch_base_offset(buf, pos: int, base_offset: int) -> None:
    """Assign the batch's base offset in place (outside the CRC: no recompute needed)."""
    _INT64.pack_into(buf, pos, base_offset)


def patch_partition_leader_epoch(buf, pos: int, epoch: int) -> None:
    """Stamp the leader epoch in place (outside the CRC: no recompute needed)."""
    _INT32.pack_into(buf, pos + _OFF_PARTITION_LEADER_EPOCH, epoch)


# base offset, batch length, partition leader epoch: the header's first 16 bytes
_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")


def patch_offset_and_epoch(buf, pos: int, header: BatchHeader, base_offset: int,
                           epoch: int) -> None:
    """:func:`patch_base_offset` and :func:`patch_partition_leader_epoch` in one write
    (the batch length between them written back as ``header`` has it)."""
    _OFFSET_LENGTH_EPOCH.pack_into(buf, pos, base_offset, header[1], epoch)


def set_max_timestamp(buf, pos: int, max_timestamp: int, *, log_append_time: bool) -> None:
    """Set max timestamp and the timestamp-type bit, then recompute the CRC.

    Mirrors Kafka's ``DefaultRecordBatch.setMaxTimestamp``: base timestamp is left alone (it may
    hold the KIP-534 delete horizon, and readers of LogAppendTime batches use max timestamp for
    every record), and nothing is rewritten when neither value changes.
    """
    header = parse_header(buf, pos)
    _batch_end(buf, pos, header)
    attributes = header.attributes & ~ATTR_TIMESTAMP_TYPE
    if log_append_time:
        attributes |= ATTR_TIMESTAMP_TYPE
    if attributes == header.attributes and max_timestamp == header.max_timestamp:
        return
    _INT16.pack_into(buf, pos + _OFF_ATTRIBUTES, attributes)
    _INT64.pack_into(buf, pos + _OFF_MAX_TIMESTAMP, max_timestamp)
    recompute_crc(buf, pos)


def iter_batches(
    buf, pos: int = 0, end: int | None = None, *, verify: bool = False, allow_truncated_tail: bool = False
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each consecutive batch in ``buf[pos:end]``.

    A batch that is cut short raises :class:`CorruptRecord` (its ``position`` attribute says
    where it starts), unless ``allow_truncated_tail`` — then a partial last batch simply ends the
    walk, as a consumer reading a size-limited fetch response expects. ``verify`` also checks
    each batch's CRC32C.
    """
    limit = len(buf) if end is None else end
    if limit > len(buf):
        raise _corrupt(f"end {limit} is past the buffer ({len(buf)} bytes)", pos)
    while pos < limit:
        if limit - pos < BATCH_HEADER_SIZE:
            if allow_truncated_tail:
                return
            raise _corrupt(f"batch header truncated at {pos}", pos)
        header = parse_header(buf, pos)
        nxt = pos + LOG_OVERHEAD + header.batch_length
        if nxt > limit:
            if allow_truncated_tail:
                return
            raise _corrupt(f"batch at {pos} is truncated: needs {nxt - pos} bytes, has {limit - pos}", pos)
        if verify:
            verify_crc(buf, pos, header)
        yield pos, header
        pos = nxt


def validate_batches(buf, *, max_batch_bytes: int | None = None, from_client: bool = False) -> list[BatchHeader]:
    """Check a Produce request's ``records`` field; return the headers of its batches.

    Kafka's rules (ProduceRequest, UnifiedLog.analyzeAndValidateRecords, LogValidator):
    at least one batch; every batch whole, magic 2, within ``max_batch_bytes``
    (:class:`RecordTooLarge`), CRC32C intact (:class:`CorruptRecord`), and with
    ``records_count == last_offset_delta + 1 > 0`` (:class:`InvalidRecord`). With
    ``from_client`` also Kafka's client-origin rules: no control batches, and a batch with a
    producer id carries a sequence number (off by default so broker-written control batches can
    go through the same check). Kafka additionally requires exactly one batch per partition for
    Produce v3+; the caller checks ``len(result) == 1``.
    """
    n = len(buf)
    if n == 0:
        raise InvalidRecord("a produce request must carry at least one record batch")
    view = memoryview(buf)
    headers: list[BatchHeader] = []
    pos = 0
    while pos < n:
        if n - pos < BATCH_HEADER_SIZE:
            raise _corrupt(f"batch header truncated at {pos}", pos)
        magic = view[pos + _OFF_MAGIC]
        if magic in (0, 1):
            raise InvalidRecord(f"message format v{magic} is not accepted; only magic 2 batches")
        header = parse_header(view, pos)
        size = LOG_OVERHEAD + header.batch_length
        if pos + size > n:
            raise _corrupt(f"batch at {pos} is truncated: needs {size} bytes, has {n - pos}", pos)
        check_batch(view, pos, header, max_batch_bytes=max_batch_bytes, from_client=from_client)
        headers.append(header)
        pos += size
    return headers


def check_batch(buf, pos: int, header: BatchHeader, *, max_batch_bytes: int | None = None,
                from_client: bool = False) -> None:
    """:func:`validate_batches`' checks of one whole batch at ``pos`` whose header was
    parsed already (``parse_header``) and whose bytes are all in ``buf``: size limit,
    CRC32C, codec, record count, and the client-origin rules. The produce path parses a
    batch's header once and hands it here (issue 32)."""
    size = LOG_OVERHEAD + header[1]
    if max_batch_bytes is not None and size > max_batch_bytes:
        raise RecordTooLarge(f"batch of {size} bytes exceeds the limit of {max_batch_bytes} bytes")
    if crc32c(buf[pos + _OFF_ATTRIBUTES : pos + size]) != header[4]:
        raise _corrupt(f"batch at {pos} fails its CRC32C check", pos)
    attributes = header[5]
    codec = attributes & ATTR_COMPRESSION_MASK
    if codec > COMPRESSION_ZSTD:
        raise _corrupt(f"batch at {pos} uses unknown compression codec {codec}", pos)
    count = header[12]
    if count <= 0:
        raise InvalidRecord(f"batch at {pos} reports {count} records")
    if header[6] + 1 != count:
        raise InvalidRecord(
            f"batch at {pos} is inconsistent: last offset delta {header[6]}, {count} records"
        )
    if codec == COMPRESSION_NONE and count * MIN_RECORD_SIZE > header[1] - _MIN_BATCH_LENGTH:
        raise _corrupt(f"batch at {pos} claims {count} records but is too short to hold them", pos)
    if from_client:
        if attributes & ATTR_CONTROL:
            raise InvalidRecord("clients may not write control batches")
        if header[9] >= 0 and header[11] < 0:
            raise InvalidRecord(f"batch with producer id {header[9]} has no sequence number")


# --------------------------------------------------------------------------- record level


def decode_records(
    buf,
    pos: int = 0,
    header: BatchHeader | None = None,
    *,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    verify: bool = False,
) -> list[Record]:
    """Decode every record of the one batch at ``pos``, decompressing when needed.

    Bounded: ``records_count`` must fit in the (decompressed) bytes, decompression stops at
    ``max_decompressed`` bytes, every length is checked against what remains of its record, and
    each record must use exactly its declared length. ``verify`` also checks the CRC first.
    """
    if header is None:
        header = parse_header(buf, pos)
    end = _batch_end(buf, pos, header)
    if verify:
        verify_crc(buf, pos, header)
    area = memoryview(buf)[pos + BATCH_HEADER_SIZE : end]
    codec = header.attributes & ATTR_COMPRESSION_MASK
    if codec == COMPRESSION_NONE:
        data = bytes(area)
    else:
        try:
            data = _compression.decompress(codec, area, max_size=max_decompressed)
        except CorruptRecord as exc:
            exc.position = pos
            raise
    count = header.records_count
    if count < 0 or count * MIN_RECORD_SIZE > len(data):
        raise _corrupt(f"batch at {pos} claims {count} records in {len(data)} bytes", pos)
    try:
        return _decode_records(data, count, header)
    except CorruptRecord as exc:
        exc.position = pos
        raise
    except (IndexError, UnicodeDecodeError) as exc:
        raise _corrupt(f"batch at {pos} has a malformed record: {exc}", pos) from None


def _decode_records(data: bytes, count: int, header: BatchHeader) -> list[Record]:
    base_offset = header.base_offset
    base_ts = header.base_timestamp
    append_ts = header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE else None
    new = tuple.__new__
    out: list[Record] = []
    append = out.append
    n = len(data)
    p = 0
    # One- and two-byte zigzag varints (by far the common sizes) are read inline; longer ones,
    # and their error handling, go through varint.py. Reading past the end raises IndexError,
    # which decode_records turns into CorruptRecord.
    for _ in range(count):
        b = data[p]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            length, p = read_varint(data, p)
        rec_end = p + length
        if length < MIN_RECORD_SIZE - 1 or rec_end > n:
            raise CorruptRecord(f"record length {length} is invalid at byte {p} of the records area")
        attributes = data[p]
        p += 1
        b = data[p]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            ts_delta = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            ts_delta, p = read_varlong(data, p)
        b = data[p]
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            off_delta = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            off_delta, p = read_varint(data, p)
        # key
        b = data[p]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            klen, p = read_varint(data, p)
        if klen < 0:
            if klen != -1:
                raise CorruptRecord(f"negative key length {klen}")
            key = None
        else:
            if p + klen > rec_end:
                raise CorruptRecord(f"key of {klen} bytes runs past its record")
            key = data[p : p + klen]
            p += klen
        # value
        b = data[p]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            vlen = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            vlen, p = read_varint(data, p)
        if vlen < 0:
            if vlen != -1:
                raise CorruptRecord(f"negative value length {vlen}")
            value = None
        else:
            if p + vlen > rec_end:
                raise CorruptRecord(f"value of {vlen} bytes runs past its record")
            value = data[p : p + vlen]
            p += vlen
        # headers
        b = data[p]
        if b < 0x80:
            hcount = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            hcount, p = read_varint(data, p)
        if hcount == 0:
            headers: tuple[Header, ...] = ()
        else:
            if hcount < 0 or hcount * 2 > rec_end - p:
                raise CorruptRecord(f"invalid record header count {hcount}")
            hs = []
            for _ in range(hcount):
                hklen, p = read_varint(data, p)
                if hklen < 0 or p + hklen > rec_end:
                    raise CorruptRecord(f"invalid header key length {hklen}")
                hkey = data[p : p + hklen].decode("utf-8")
                p += hklen
                hvlen, p = read_varint(data, p)
                if hvlen < 0:
                    if hvlen != -1:
                        raise CorruptRecord(f"negative header value length {hvlen}")
                    hval = None
                else:
                    if p + hvlen > rec_end:
                        raise CorruptRecord(f"header value of {hvlen} bytes runs past its record")
                    hval = data[p : p + hvlen]
                    p += hvlen
                hs.append(new(Header, (hkey, hval)))
            headers = tuple(hs)
        if p != rec_end:
            raise CorruptRecord(f"record declared {length} bytes but used {length + p - rec_end}")
        append(
            new(
                Record,
                (
                    base_offset + off_delta,
                    base_ts + ts_delta if append_ts is None else append_ts,
                    key,
                    value,
                    headers,
                    attributes,
                    off_delta,
                    ts_delta,
                ),
            )
        )
    if p != n:
        raise CorruptRecord(f"{n - p} bytes left over after the batch's {count} records")
    return out


def iter_all_records(
    buf, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED, verify: bool = False
) -> Iterator[tuple[BatchHeader, Record]]:
    """Every record of every batch in ``buf``, with its batch header."""
    for pos, header in iter_batches(buf, verify=verify):
        for record in decode_records(buf, pos, header, max_decompressed=max_decompressed):
            yield header, record


# --------------------------------------------------------------------------- building


def _encode_bytes(out: bytearray, b) -> None:
    if b is None:
        out += b"\x01"  # zigzag(-1)
    else:
        out += encode_varint(len(b))
        out += b


def _encode_record(offset_delta: int, timestamp_delta: int, key, value, headers) -> bytes:
    body = bytearray(b"\x00")  # record attributes: unused in v2
    body += encode_varlong(timestamp_delta)
    body += encode_varint(offset_delta)
    _encode_bytes(body, key)
    _encode_bytes(body, value)
    body += encode_varint(len(headers))
    for hkey, hval in headers:
        if isinstance(hkey, str):
            hkey = hkey.encode("utf-8")
        body += encode_varint(len(hkey))
        body += hkey
        _encode_bytes(body, hval)
    return encode_varint(len(body)) + body


def _normalise(record) -> tuple:
    if isinstance(record, Record):
        return record.key, record.value, record.headers, record.timestamp
    key, value, headers, timestamp = record
    return key, value, headers or (), NO_TIMESTAMP if timestamp is None else timestamp


def build_batch(
    records: Sequence,
    *,
    base_offset: int = 0,
    compression: int = COMPRESSION_NONE,
    timestamp_type: int = TIMESTAMP_CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_control: bool = False,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Encode one v2 batch with a valid CRC.

    ``records`` are ``(key, value, headers, timestamp)`` tuples, :class:`SimpleRecord` or decoded
    :class:`Record` (so a compactor can rebuild a batch from what it decoded). Headers are
    ``(key, value)`` pairs with a ``str`` or UTF-8 ``bytes`` key. A timestamp of ``None`` means
    −1 (none). ``offset_deltas`` keeps original offsets when rebuilding a batch with gaps;
    ``last_offset_delta`` overrides the default (last delta, or 0 for an empty batch — Kafka keeps
    empty batches after compaction to retain producer state). ``delete_horizon_ms`` sets the
    KIP-534 attribute and stores the horizon as base timestamp.
    """
    items = [_normalise(r) for r in records]
    if offset_deltas is None:
        deltas: Sequence[int] = range(len(items))
    else:
        if len(offset_deltas) != len(items):
            raise ValueError("offset_deltas must have one entry per record")
        if any(b <= a for a, b in zip(offset_deltas, offset_deltas[1:])) or (offset_deltas and offset_deltas[0] < 0):
            raise ValueError("offset_deltas must be non-negative and strictly increasing")
        deltas = offset_deltas
    if last_offset_delta is None:
        last_offset_delta = deltas[-1] if items else 0
    elif items and last_offset_delta < deltas[-1]:
        raise ValueError("last_offset_delta is below the last record's offset delta")

    timestamps = [item[3] for item in items]
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    else:
        base_timestamp = timestamps[0] if items else NO_TIMESTAMP
    max_timestamp = max(timestamps) if items else NO_TIMESTAMP

    area = b"".join(
        _encode_record(delta, ts - base_timestamp, key, value, headers)
        for delta, (key, value, headers, ts) in zip(deltas, items)
    )
    if compression != COMPRESSION_NONE:
        area = _compression.compress(compression, area, compression_level)

    attributes = compression & ATTR_COMPRESSION_MASK
    if timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON

    out = bytearray(BATCH_HEADER_SIZE + len(area))
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        _MIN_BATCH_LENGTH + len(area),
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(items),
    )
    out[BATCH_HEADER_SIZE:] = area
    _UINT32.pack_into(out, _OFF_CRC, crc32c(memoryview(out)[_OFF_ATTRIBUTES:]))
    return bytes(out)


def build_control_batch(
    *,
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    base_offset: int = 0,
    timestamp: int,
    coordinator_epoch: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transaction marker (KIP-98): a transactional control batch holding one control record.

    Key: version int16 (0) + type int16 (0 abort, 1 commit). Value: version int16 (0) +
    coordinator epoch int32.
    """
    key = _CONTROL_KEY.pack(0, CONTROL_TYPE_COMMIT if commit else CONTROL_TYPE_ABORT)
    value = _TXN_MARKER_VALUE.pack(0, coordinator_epoch)
    return build_batch(
        [(key, value, (), timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def control_record_type(record: Record) -> int:
    """The type of a control record (0 abort, 1 commit, others are KRaft's); version ignored."""
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise InvalidRecord("control record key is shorter than 4 bytes")
    version, ctype = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecord(f"control record key has negative version {version}")
    return ctype


def parse_control_record(record: Record) -> tuple[bool, int]:
    """``(is_commit, coordinator_epoch)`` of a transaction marker record.

    Like Kafka, versions above 0 are read for their leading fields (forward compatible).
    """
    ctype = control_record_type(record)
    if ctype not in (CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT):
        raise InvalidRecord(f"control record type {ctype} is not a transaction marker")
    value = record.value
    if value is None or len(value) < _TXN_MARKER_VALUE.size:
        raise InvalidRecord("transaction marker value is shorter than 6 bytes")
    version, coordinator_epoch = _TXN_MARKER_VALUE.unpack_from(value)
    if version < 0:
        raise InvalidRecord(f"transaction marker has negative version {version}")
    return ctype == CONTROL_TYPE_COMMIT, coordinator_epoch
