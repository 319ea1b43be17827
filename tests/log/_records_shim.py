"""Stand-in for ``kbroker.wire.records`` while that module is being written.

Only installed by ``conftest.py`` when the real module cannot be imported; it
implements the agreed API for uncompressed magic-v2 batches so the log store can be
tested on its own.  Delete once ``kbroker/wire/records.py`` has landed.
"""
from __future__ import annotations

import struct
import sys
import types
from typing import NamedTuple

import crc32c

from kbroker.wire.errors import CorruptRecord, InvalidRecord

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12
COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD = range(5)
TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME = 0, 1
_H = struct.Struct(">qiibIhiqqqhii")


class BatchHeader(NamedTuple):
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

    compression = property(lambda s: s.attributes & 7)
    timestamp_type = property(lambda s: (s.attributes >> 3) & 1)
    is_transactional = property(lambda s: bool(s.attributes & 0x10))
    is_control = property(lambda s: bool(s.attributes & 0x20))
    last_offset = property(lambda s: s.base_offset + s.last_offset_delta)
    size = property(lambda s: s.batch_length + LOG_OVERHEAD)
    next_offset = property(lambda s: s.base_offset + s.last_offset_delta + 1)


class Header(NamedTuple):
    key: str
    value: bytes | None


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple


def parse_header(buf, pos=0):
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise CorruptRecord("short header")
    h = BatchHeader(*_H.unpack_from(buf, pos))
    if h.magic != 2:
        raise CorruptRecord(f"magic {h.magic}")
    if h.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecord("batch length too small")
    return h


def verify_crc(buf, pos=0, header=None):
    h = header or parse_header(buf, pos)
    if len(buf) - pos < h.size:
        raise CorruptRecord("truncated batch")
    if crc32c.crc32c(bytes(memoryview(buf)[pos + 21:pos + h.size])) != h.crc:
        raise CorruptRecord("crc mismatch")


def iter_batches(buf, pos=0, end=None, *, verify=False):
    end = len(buf) if end is None else end
    while pos < end:
        h = parse_header(buf, pos)
        if pos + h.size > end:
            raise CorruptRecord("truncated batch")
        if verify:
            verify_crc(buf, pos, h)
        yield pos, h
        pos += h.size


def validate_batches(buf, *, max_batch_bytes=None):
    out = []
    for _, h in iter_batches(buf, verify=True):
        if h.compression != 0:
            raise InvalidRecord("shim: compressed batches unsupported")
        out.append(h)
    if not out:
        raise CorruptRecord("no batches")
    return out


def patch_base_offset(buf, pos, base_offset):
    struct.pack_into(">q", buf, pos, base_offset)


def patch_partition_leader_epoch(buf, pos, epoch):
    struct.pack_into(">i", buf, pos + 12, epoch)


def _recrc(buf, pos):
    h = parse_header(buf, pos)
    struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(memoryview(buf)[pos + 21:pos + h.size])))


def set_max_timestamp(buf, pos, max_timestamp, *, log_append_time):
    h = parse_header(buf, pos)
    attrs = (h.attributes | 0x08) if log_append_time else (h.attributes & ~0x08)
    struct.pack_into(">h", buf, pos + 21, attrs)
    struct.pack_into(">q", buf, pos + 35, max_timestamp)
    _recrc(buf, pos)


def _zz(n):
    return (n << 1) ^ (n >> 63)


def _varint(n, out):
    n = _zz(n)
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def _read_varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


def _bytes(v, out):
    if v is None:
        _varint(-1, out)
    else:
        _varint(len(v), out)
        out += v


def build_batch(records, *, base_offset=0, compression=0, timestamp_type=0, producer_id=-1,
                producer_epoch=-1, base_sequence=-1, is_transactional=False,
                partition_leader_epoch=-1, is_control=False, offset_deltas=None,
                last_offset_delta=None):
    assert compression == 0
    records = list(records)
    deltas = list(offset_deltas) if offset_deltas is not None else list(range(len(records)))
    base_ts = min((r[3] for r in records), default=0)
    max_ts = max((r[3] for r in records), default=-1)
    body = bytearray()
    for (key, value, headers, ts), d in zip(records, deltas):
        rec = bytearray([0])
        _varint(ts - base_ts, rec)
        _varint(d, rec)
        _bytes(key, rec)
        _bytes(value, rec)
        _varint(len(headers or ()), rec)
        for hk, hv in headers or ():
            _bytes(hk.encode(), rec)
            _bytes(hv, rec)
        _varint(len(rec), body)
        body += rec
    attrs = compression | (timestamp_type << 3) | (0x10 if is_transactional else 0) | (0x20 if is_control else 0)
    length = BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body)
    buf = bytearray(_H.pack(base_offset, length, partition_leader_epoch, 2, 0, attrs,
                            max(deltas, default=0) if last_offset_delta is None else last_offset_delta, base_ts, max_ts, producer_id,
                            producer_epoch, base_sequence, len(records))) + body
    _recrc(buf, 0)
    return bytes(buf)


def build_control_batch(*, commit, producer_id, producer_epoch, base_offset=0, timestamp,
                        coordinator_epoch=0, partition_leader_epoch=-1):
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch([(key, value, (), timestamp)], base_offset=base_offset,
                       producer_id=producer_id, producer_epoch=producer_epoch,
                       is_transactional=True, is_control=True,
                       partition_leader_epoch=partition_leader_epoch)


def parse_control_record(record):
    _, kind = struct.unpack(">hh", record.key[:4])
    _, epoch = struct.unpack(">hi", record.value[:6])
    return kind == 1, epoch


def decode_records(buf, pos=0, header=None):
    h = header or parse_header(buf, pos)
    assert h.compression == 0
    buf = bytes(memoryview(buf)[pos:pos + h.size])
    p = BATCH_HEADER_SIZE
    out = []
    for _ in range(h.records_count):
        ln, p = _read_varint(buf, p)
        end = p + ln
        p += 1
        tsd, p = _read_varint(buf, p)
        od, p = _read_varint(buf, p)
        kl, p = _read_varint(buf, p)
        key = None if kl < 0 else buf[p:p + kl]
        p += max(kl, 0)
        vl, p = _read_varint(buf, p)
        value = None if vl < 0 else buf[p:p + vl]
        p += max(vl, 0)
        nh, p = _read_varint(buf, p)
        hdrs = []
        for _ in range(nh):
            hkl, p = _read_varint(buf, p)
            hk = buf[p:p + hkl].decode()
            p += hkl
            hvl, p = _read_varint(buf, p)
            hv = None if hvl < 0 else buf[p:p + hvl]
            p += max(hvl, 0)
            hdrs.append(Header(hk, hv))
        ts = h.max_timestamp if h.timestamp_type == 1 else h.base_timestamp + tsd
        out.append(Record(h.base_offset + od, ts, key, value, tuple(hdrs)))
        p = end
    return out


def install():
    mod = types.ModuleType("kbroker.wire.records")
    mod.__dict__.update({k: v for k, v in globals().items() if not k.startswith("__")})
    sys.modules["kbroker.wire.records"] = mod
    import kbroker.wire
    kbroker.wire.records = mod
