"""Record batches (magic v2): layout, round trips, kafka-python as an independent oracle,
CRC handling, in-place patches, produce validation, control markers, and fuzzing.

Everything here works on real bytes; kafka-python 3.0.12's ``kafka.record`` package is a
separate implementation of the same format and checks both directions.
"""

from __future__ import annotations

import random
import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from kbroker.wire import records as rb
from kbroker.wire.errors import CorruptRecord, InvalidRecord, MalformedFrame, WireError
from kbroker.wire.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    LOG_OVERHEAD,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    Header,
    Record,
    RecordTooLarge,
    SimpleRecord,
    build_batch,
    build_control_batch,
    decode_records,
    iter_all_records,
    iter_batches,
    parse_control_record,
    parse_header,
    patch_base_offset,
    patch_partition_leader_epoch,
    recompute_crc,
    set_max_timestamp,
    validate_batches,
    verify_crc,
)
from kbroker.wire.varint import (
    BadVarint,
    encode_uvarint,
    encode_varint,
    encode_varlong,
    read_uvarint,
    read_varint,
    read_varlong,
    size_of_varint,
)

CODECS = [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]
CODEC_IDS = ["none", "gzip", "snappy", "lz4", "zstd"]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
T0 = 1_700_000_000_000


def sample_records(n=50, seed=1):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        key = None if i % 4 == 0 else b"key-%d" % i
        value = None if i % 7 == 3 else bytes(rnd.randrange(4) for _ in range(rnd.randrange(0, 300)))
        headers = [] if i % 3 else [("trace", b"abc%d" % i), ("nil", None), ("", b"")]
        out.append((key, value, headers, T0 + rnd.randrange(-5000, 5000)))
    return out


def as_tuples(recs):
    return [(r.key, r.value, [tuple(h) for h in r.headers], r.timestamp) for r in recs]


def expected(recs):
    return [(k, v, [tuple(h) for h in hs], ts) for k, v, hs, ts in recs]


# --------------------------------------------------------------------------- varints


@pytest.mark.parametrize(
    "n, encoded",
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"),
     (300, b"\xd8\x04"), (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f")],
)
def test_varint_known_encodings(n, encoded):
    assert encode_varint(n) == encoded
    assert read_varint(encoded, 0) == (n, len(encoded))
    assert size_of_varint(n) == len(encoded)


@given(st.integers(-(2**63), 2**63 - 1))
@FAST
def test_varlong_round_trip(n):
    enc = encode_varlong(n)
    assert len(enc) <= 10
    assert read_varlong(b"\xaa" + enc + b"\x00", 1) == (n, 1 + len(enc))


@given(st.integers(0, 2**32 - 1))
@FAST
def test_uvarint_round_trip(n):
    enc = encode_uvarint(n)
    assert read_uvarint(memoryview(enc), 0) == (n, len(enc))


@pytest.mark.parametrize(
    "reader, data",
    [
        (read_varint, b""),
        (read_varint, b"\x80"),
        (read_varint, b"\x80\x80\x80\x80\x80\x00"),  # 6 bytes
        (read_varint, b"\xff\xff\xff\xff\x1f"),  # 35 bits
        (read_uvarint, b"\xff\xff\xff\xff\x7f"),
        (read_varlong, b"\x80" * 10 + b"\x00"),
        (read_varlong, b"\xff" * 9 + b"\x7f"),  # 70 bits
    ],
)
def test_bad_varints_are_typed(reader, data):
    with pytest.raises(BadVarint) as info:
        reader(data, 0)
    # Usable from both the record layer and the message codecs.
    assert isinstance(info.value, CorruptRecord) and isinstance(info.value, MalformedFrame)


def test_varint_encoder_rejects_out_of_range():
    with pytest.raises(ValueError):
        encode_varint(2**31)
    with pytest.raises(ValueError):
        encode_uvarint(-1)


# --------------------------------------------------------------------------- layout


def test_header_layout_matches_the_format():
    b = build_batch(
        [(b"k", b"v", [], T0), (None, b"w", [], T0 + 7)],
        base_offset=42,
        producer_id=9,
        producer_epoch=3,
        base_sequence=11,
        is_transactional=True,
        partition_leader_epoch=5,
        compression=COMPRESSION_NONE,
    )
    assert struct.unpack_from(">q", b, 0)[0] == 42
    assert struct.unpack_from(">i", b, 8)[0] == len(b) - LOG_OVERHEAD
    assert struct.unpack_from(">i", b, 12)[0] == 5
    assert b[16] == 2
    assert struct.unpack_from(">I", b, 17)[0] == crc32c.crc32c(b[21:])
    assert struct.unpack_from(">h", b, 21)[0] == 0x10
    h = parse_header(b)
    assert isinstance(h, BatchHeader)
    assert h == BatchHeader(42, len(b) - 12, 5, 2, h.crc, 0x10, 1, T0, T0 + 7, 9, 3, 11, 2)
    assert (h.last_offset, h.next_offset, h.size) == (43, 44, len(b))
    assert (h.compression, h.timestamp_type, h.is_transactional, h.is_control) == (0, 0, True, False)
    assert h.last_sequence == 12 and not h.has_delete_horizon and h.has_producer_id
    assert BATCH_HEADER_SIZE == 61 and LOG_OVERHEAD == 12


def test_parse_header_accepts_all_buffer_types_and_positions():
    b = build_batch([(b"k", b"v", [], T0)])
    padded = b"\x00" * 7 + b
    for buf in (padded, bytearray(padded), memoryview(padded)):
        assert parse_header(buf, 7) == parse_header(b)
        verify_crc(buf, 7)


def test_parse_header_rejects_short_bad_magic_and_bad_length():
    b = bytearray(build_batch([(b"k", b"v", [], T0)]))
    with pytest.raises(CorruptRecord):
        parse_header(b[:60])
    parse_header(b[:61])  # a header alone is enough
    bad = bytearray(b)
    bad[16] = 1
    with pytest.raises(CorruptRecord):
        parse_header(bad)
    bad = bytearray(b)
    struct.pack_into(">i", bad, 8, 48)
    with pytest.raises(CorruptRecord):
        parse_header(bad)


@pytest.mark.parametrize(
    "base, delta, last",
    [(-1, 5, -1), (0, 0, 0), (10, 4, 14), (2**31 - 1, 0, 2**31 - 1), (2**31 - 1, 1, 0), (2**31 - 3, 5, 2)],
)
def test_last_sequence_wraps_like_kafka(base, delta, last):
    h = BatchHeader(0, 49, -1, 2, 0, 0, delta, 0, 0, 1, 0, base, delta + 1)
    assert h.last_sequence == last


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_round_trip_every_codec(codec):
    recs = sample_records(200)
    b = build_batch(recs, base_offset=1000, compression=codec, producer_id=77, producer_epoch=2, base_sequence=40)
    h = parse_header(b)
    verify_crc(b)
    assert h.compression == codec and h.records_count == 200 and h.last_offset_delta == 199
    assert h.base_timestamp == recs[0][3] and h.max_timestamp == max(r[3] for r in recs)
    out = decode_records(b, verify=True)
    assert as_tuples(out) == expected(recs)
    assert [r.offset for r in out] == list(range(1000, 1200))
    assert [r.offset_delta for r in out] == list(range(200))
    assert all(isinstance(h, Header) for r in out for h in r.headers)
    assert validate_batches(b) == [h]


@given(
    records=st.lists(
        st.tuples(
            st.none() | st.binary(max_size=40),
            st.none() | st.binary(max_size=200),
            st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3),
            st.integers(0, 2**42),
        ),
        max_size=25,
    ),
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(0, 2**62),
    ts_type=st.sampled_from([TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME]),
)
@FAST
def test_round_trip_property(records, codec, base_offset, ts_type):
    b = build_batch(records, base_offset=base_offset, compression=codec, timestamp_type=ts_type)
    verify_crc(b)
    h = parse_header(b)
    assert h.size == len(b) and h.records_count == len(records)
    out = decode_records(b)
    if ts_type == TIMESTAMP_LOG_APPEND_TIME:
        want = [(k, v, hs, h.max_timestamp) for k, v, hs, _ in records]
    else:
        want = records
    assert as_tuples(out) == expected(want)
    assert [r.offset for r in out] == list(range(base_offset, base_offset + len(records)))
    # a compactor-style rebuild from decoded records gives back the same records
    again = build_batch(out, base_offset=base_offset, compression=codec, timestamp_type=ts_type)
    assert as_tuples(decode_records(again)) == as_tuples(out)
    if ts_type == TIMESTAMP_CREATE_TIME:
        assert decode_records(again) == out


def test_record_input_forms_and_none_timestamp():
    b = build_batch([SimpleRecord(b"a", b"1"), (b"b", b"2", None, None), SimpleRecord(None, None, [(b"h", b"x")], 5)])
    out = decode_records(b)
    assert [(r.key, r.value, r.headers) for r in out] == [
        (b"a", b"1", ()), (b"b", b"2", ()), (None, None, (Header("h", b"x"),))]
    assert parse_header(b).base_timestamp == -1 and parse_header(b).max_timestamp == 5


def test_offset_deltas_keep_gaps_for_compaction():
    recs = [(b"a", b"1", [], T0), (b"b", b"2", [], T0 + 1), (b"c", b"3", [], T0 + 2)]
    b = build_batch(recs, base_offset=100, offset_deltas=[0, 4, 9], last_offset_delta=12, compression=COMPRESSION_LZ4)
    h = parse_header(b)
    assert h.last_offset_delta == 12 and h.records_count == 3 and h.next_offset == 113
    assert [r.offset for r in decode_records(b)] == [100, 104, 109]
    # defaults to the last given delta
    assert parse_header(build_batch(recs, offset_deltas=[1, 2, 5])).last_offset_delta == 5
    with pytest.raises(ValueError):
        build_batch(recs, offset_deltas=[0, 0, 1])
    # Kafka's validation of *produced* batches rejects the gap; compaction output is not produced.
    with pytest.raises(InvalidRecord):
        validate_batches(b)


def test_empty_batch_after_compaction_and_delete_horizon():
    b = build_batch([], base_offset=50, last_offset_delta=9, producer_id=4, producer_epoch=1, base_sequence=0)
    h = parse_header(b)
    assert (h.records_count, h.last_offset_delta, h.size) == (0, 9, 61)
    assert decode_records(b) == []
    b = build_batch([(b"k", None, [], T0 + 100)], delete_horizon_ms=T0)
    h = parse_header(b)
    assert h.has_delete_horizon and h.delete_horizon_ms == T0 and h.base_timestamp == T0
    assert decode_records(b)[0].timestamp == T0 + 100 and decode_records(b)[0].timestamp_delta == 100


def test_iter_batches_and_iter_all_records_over_many_batches():
    batches = [build_batch(sample_records(5, seed=i), base_offset=i * 5, compression=CODECS[i % 5]) for i in range(8)]
    buf = b"".join(batches)
    seen = list(iter_batches(buf, verify=True))
    assert [pos for pos, _ in seen] == [sum(len(x) for x in batches[:i]) for i in range(8)]
    assert [h.base_offset for _, h in seen] == [0, 5, 10, 15, 20, 25, 30, 35]
    assert [r.offset for _, r in iter_all_records(buf)] == list(range(40))
    # end bounds the walk; a trailing partial batch raises unless allowed
    assert len(list(iter_batches(buf, 0, len(batches[0]) + len(batches[1])))) == 2
    assert len(list(iter_batches(buf, len(batches[0])))) == 7
    cut = buf[: len(buf) - 3]
    with pytest.raises(CorruptRecord) as info:
        list(iter_batches(cut))
    assert info.value.position == len(buf) - len(batches[-1])
    assert len(list(iter_batches(cut, allow_truncated_tail=True))) == 7
    assert len(list(iter_batches(buf[: len(buf) - len(batches[-1]) + 20], allow_truncated_tail=True))) == 7
    assert list(iter_batches(b"")) == []


# --------------------------------------------------------------------------- kafka-python oracle


def kp_build(recs, codec, *, producer=(-1, -1, -1), transactional=False, offsets=None):
    builder = DefaultRecordBatchBuilder(2, codec, transactional, *producer, batch_size=10**8)
    for i, (k, v, hs, ts) in enumerate(recs):
        builder.append(i if offsets is None else offsets[i], ts, k, v, hs)
    return bytes(builder.build())


def kp_read(b):
    batch = DefaultRecordBatch(bytearray(b))
    assert batch.validate_crc()
    return batch, [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_kafka_python_batches_decode_identically(codec):
    recs = sample_records(120, seed=codec)
    kb = kp_build(recs, codec, producer=(1234, 5, 60), transactional=True)
    h = parse_header(kb)
    verify_crc(kb)
    assert validate_batches(kb) == [h]
    kbatch, krecs = kp_read(kb)
    assert h.compression == kbatch.compression_type == codec  # kafka-python compressed it
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.is_transactional) == (1234, 5, 60, True)
    assert (h.base_timestamp, h.max_timestamp, h.last_offset_delta) == (
        kbatch.first_timestamp, kbatch.max_timestamp, kbatch.last_offset_delta)
    assert h.last_sequence == kbatch.last_sequence
    ours = decode_records(kb)
    assert [(r.offset, r.timestamp, r.key, r.value, [tuple(x) for x in r.headers]) for r in ours] == krecs
    assert as_tuples(ours) == expected(recs)


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_our_batches_read_back_by_kafka_python(codec):
    recs = sample_records(120, seed=10 + codec)
    b = build_batch(recs, base_offset=7, compression=codec, producer_id=3, producer_epoch=0, base_sequence=2**31 - 10)
    kbatch, krecs = kp_read(b)
    assert kbatch.compression_type == codec and kbatch.base_offset == 7 and kbatch.next_offset == 127
    assert kbatch.last_sequence == parse_header(b).last_sequence == 109
    assert [(k, v, hs, ts) for _, ts, k, v, hs in krecs] == expected(recs)
    assert [o for o, *_ in krecs] == list(range(7, 127))


def test_kafka_python_memory_records_over_our_batches():
    batches = [build_batch(sample_records(10, seed=i), base_offset=10 * i, compression=CODECS[i % 5]) for i in range(5)]
    mr = MemoryRecords(b"".join(batches))
    offsets = []
    while mr.has_next():
        offsets.extend(r.offset for r in mr.next_batch())
    assert offsets == list(range(50))


def test_kafka_python_memory_records_builder_output_parses():
    builder = MemoryRecordsBuilder(2, COMPRESSION_GZIP, batch_size=10**6, offset=0)
    for i in range(30):
        builder.append(T0 + i, b"k%d" % i, b"v" * 50, [("h", b"1")])
    builder.close()
    buf = bytes(builder.buffer())
    [(pos, h)] = list(iter_batches(buf, verify=True))
    assert h.compression == COMPRESSION_GZIP
    assert [r.key for _, r in iter_all_records(buf)] == [b"k%d" % i for i in range(30)]


def test_log_append_time_is_seen_by_kafka_python():
    b = bytearray(build_batch(sample_records(10), compression=COMPRESSION_SNAPPY))
    set_max_timestamp(b, 0, T0 + 99_999, log_append_time=True)
    verify_crc(b)
    h = parse_header(b)
    assert h.timestamp_type == TIMESTAMP_LOG_APPEND_TIME and h.max_timestamp == T0 + 99_999
    kbatch, krecs = kp_read(b)
    assert kbatch.timestamp_type == 1
    assert {ts for _, ts, *_ in krecs} == {T0 + 99_999}
    assert {r.timestamp for r in decode_records(b)} == {T0 + 99_999}


def test_control_batch_read_by_kafka_python():
    b = build_control_batch(commit=True, producer_id=8, producer_epoch=2, base_offset=30, timestamp=T0,
                            coordinator_epoch=4)
    kbatch = DefaultRecordBatch(bytearray(b))
    assert kbatch.validate_crc() and kbatch.is_control_batch and kbatch.is_transactional
    [rec] = list(kbatch)
    assert rec.commit and rec.version == 0 and rec.offset == 30


# --------------------------------------------------------------------------- CRC and patches


def test_every_single_byte_flip_in_crc_region_is_detected():
    b = build_batch(sample_records(6), compression=COMPRESSION_NONE)
    rnd = random.Random(5)
    positions = list(range(21, len(b)))  # all of them: the batch is small
    assert len(positions) > 100
    for i in positions:
        bad = bytearray(b)
        bad[i] ^= 1 << rnd.randrange(8)
        with pytest.raises(CorruptRecord):
            verify_crc(bad)
        with pytest.raises(WireError):
            validate_batches(bad)


def test_crc_field_itself_and_truncation():
    b = bytearray(build_batch(sample_records(3)))
    for i in range(17, 21):
        bad = bytearray(b)
        bad[i] ^= 0xFF
        with pytest.raises(CorruptRecord):
            verify_crc(bad)
    with pytest.raises(CorruptRecord):
        verify_crc(b[:-1])


def test_patches_outside_crc_keep_it_valid():
    b = bytearray(build_batch(sample_records(20), compression=COMPRESSION_ZSTD))
    crc_before = parse_header(b).crc
    patch_base_offset(b, 0, 2**40 + 3)
    patch_partition_leader_epoch(b, 0, 17)
    verify_crc(b)
    h = parse_header(b)
    assert (h.base_offset, h.partition_leader_epoch, h.crc) == (2**40 + 3, 17, crc_before)
    assert decode_records(b)[5].offset == 2**40 + 8
    # works through a writable memoryview at an offset too
    buf = bytearray(5) + b
    view = memoryview(buf)
    patch_base_offset(view, 5, 9)
    patch_partition_leader_epoch(view, 5, 1)
    verify_crc(buf, 5)
    assert DefaultRecordBatch(bytearray(buf[5:])).base_offset == 9


def test_set_max_timestamp_recomputes_crc_and_keeps_base_timestamp():
    b = bytearray(build_batch(sample_records(4), compression=COMPRESSION_GZIP, is_transactional=True,
                              producer_id=1, producer_epoch=0, base_sequence=0))
    before = parse_header(b)
    set_max_timestamp(b, 0, T0 + 5, log_append_time=True)
    verify_crc(b)
    h = parse_header(b)
    assert h.max_timestamp == T0 + 5 and h.timestamp_type == TIMESTAMP_LOG_APPEND_TIME
    assert h.base_timestamp == before.base_timestamp  # like Kafka's DefaultRecordBatch.setMaxTimestamp
    assert h.compression == COMPRESSION_GZIP and h.is_transactional  # other attribute bits kept
    set_max_timestamp(b, 0, T0 + 6, log_append_time=False)
    verify_crc(b)
    assert parse_header(b).timestamp_type == TIMESTAMP_CREATE_TIME
    assert decode_records(b)[0].timestamp == sample_records(4)[0][3]


def test_recompute_crc_after_editing_covered_bytes():
    b = bytearray(build_batch(sample_records(4)))
    struct.pack_into(">q", b, 43, 555)  # producer id
    with pytest.raises(CorruptRecord):
        verify_crc(b)
    recompute_crc(b, 0)
    verify_crc(b)
    assert parse_header(b).producer_id == 555


# --------------------------------------------------------------------------- produce validation


def test_validate_accepts_several_whole_batches():
    batches = [build_batch(sample_records(5, seed=i), compression=CODECS[i]) for i in range(5)]
    headers = validate_batches(b"".join(batches), max_batch_bytes=max(len(x) for x in batches))
    assert [h.size for h in headers] == [len(x) for x in batches]


def test_validate_rejections():
    good = build_batch(sample_records(3), producer_id=1, producer_epoch=0, base_sequence=0)
    with pytest.raises(InvalidRecord):
        validate_batches(b"")
    with pytest.raises(CorruptRecord):
        validate_batches(good + good[:30])
    with pytest.raises(CorruptRecord):
        validate_batches(good[:-1])
    with pytest.raises(RecordTooLarge) as info:
        validate_batches(good, max_batch_bytes=len(good) - 1)
    assert info.value.error_code == 10 and isinstance(info.value, WireError)
    assert validate_batches(good, max_batch_bytes=len(good))

    def edited(offset, fmt, value):
        b = bytearray(good)
        struct.pack_into(fmt, b, offset, value)
        recompute_crc(b, 0)
        return bytes(b)

    for bad in (edited(57, ">i", 2), edited(23, ">i", 5)):  # count and last offset delta disagree
        with pytest.raises(InvalidRecord):
            validate_batches(bad)
    zero = bytearray(edited(57, ">i", 0))
    struct.pack_into(">i", zero, 23, -1)
    recompute_crc(zero, 0)
    with pytest.raises(InvalidRecord):
        validate_batches(zero)
    # more records claimed than the bytes can hold (count and delta consistent)
    huge = bytearray(edited(57, ">i", 10**6))
    struct.pack_into(">i", huge, 23, 10**6 - 1)
    recompute_crc(huge, 0)
    with pytest.raises(CorruptRecord):
        validate_batches(huge)
    # unknown codec bits
    with pytest.raises(CorruptRecord):
        validate_batches(edited(21, ">h", 5))
    # old message formats are refused, not misparsed
    old = bytearray(good)
    old[16] = 1
    with pytest.raises(InvalidRecord):
        validate_batches(old)


def test_validate_client_origin_rules():
    control = build_control_batch(commit=False, producer_id=1, producer_epoch=0, timestamp=T0)
    assert validate_batches(control)[0].is_control  # broker-written markers pass by default
    with pytest.raises(InvalidRecord):
        validate_batches(control, from_client=True)
    no_seq = build_batch(sample_records(2), producer_id=5, producer_epoch=0, base_sequence=-1)
    validate_batches(no_seq)
    with pytest.raises(InvalidRecord):
        validate_batches(no_seq, from_client=True)
    validate_batches(build_batch(sample_records(2)), from_client=True)


# --------------------------------------------------------------------------- control batches


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch_round_trip(commit):
    b = build_control_batch(commit=commit, producer_id=99, producer_epoch=7, base_offset=12, timestamp=T0,
                            coordinator_epoch=3, partition_leader_epoch=2)
    h = parse_header(b)
    verify_crc(b)
    assert h.is_control and h.is_transactional and h.records_count == 1 and h.base_sequence == -1
    assert (h.producer_id, h.producer_epoch, h.partition_leader_epoch, h.base_offset) == (99, 7, 2, 12)
    [rec] = decode_records(b)
    assert rec.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert rec.value == struct.pack(">hi", 0, 3)
    assert parse_control_record(rec) == (commit, 3)


def test_parse_control_record_rejects_non_markers():
    def rec(key, value):
        return Record(0, 0, key, value, ())

    with pytest.raises(InvalidRecord):
        parse_control_record(rec(b"\x00", struct.pack(">hi", 0, 1)))
    with pytest.raises(InvalidRecord):
        parse_control_record(rec(struct.pack(">hh", 0, 2), struct.pack(">hi", 0, 1)))  # LEADER_CHANGE
    with pytest.raises(InvalidRecord):
        parse_control_record(rec(struct.pack(">hh", 0, 1), b"\x00\x00"))
    # newer versions are read for their leading fields, as Kafka does
    assert parse_control_record(rec(struct.pack(">hh", 1, 1) + b"x", struct.pack(">hi", 1, 9) + b"y")) == (True, 9)


# --------------------------------------------------------------------------- bounds


def _raw_batch(records_area: bytes, count: int, codec=COMPRESSION_NONE, last_offset_delta=None) -> bytearray:
    """A batch around a hand-written records area (valid CRC)."""
    b = bytearray(build_batch([]))
    struct.pack_into(">h", b, 21, codec)
    struct.pack_into(">i", b, 23, count - 1 if last_offset_delta is None else last_offset_delta)
    struct.pack_into(">i", b, 57, count)
    b += records_area
    struct.pack_into(">i", b, 8, len(b) - 12)
    recompute_crc(b, 0)
    return b


def _record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


GOOD_BODY = b"\x00\x00\x00" + encode_varint(1) + b"k" + encode_varint(1) + b"v" + b"\x00"


@pytest.mark.parametrize(
    "area, count",
    [
        (_record(GOOD_BODY), 2),  # count larger than what is there
        (_record(GOOD_BODY) * 2, 1),  # bytes left over
        (_record(GOOD_BODY) * 10**3, 10**9),  # absurd count, rejected before looping
        (_record(GOOD_BODY)[:-1], 1),  # truncated record
        (encode_varint(len(GOOD_BODY) + 1) + GOOD_BODY + b"\x00", 1),  # record shorter than declared
        (_record(b"\x00\x00\x00" + encode_varint(-2) + encode_varint(-1) + b"\x00"), 1),  # key length -2
        (_record(b"\x00\x00\x00" + encode_varint(50) + b"k" + encode_varint(-1) + b"\x00"), 1),  # key too long
        (_record(b"\x00\x00\x00\x01" + encode_varint(-7) + b"\x00"), 1),  # value length -7
        (_record(b"\x00\x00\x00\x01\x01" + encode_varint(-1)), 1),  # header count -1
        (_record(b"\x00\x00\x00\x01\x01" + encode_varint(1000) + b"\x00\x00"), 1),  # header count huge
        (_record(b"\x00\x00\x00\x01\x01\x02" + encode_varint(-1) + b"\x01"), 1),  # null header key
        (_record(b"\x00\x00\x00\x01\x01\x02" + encode_varint(2) + b"\xff\xfe" + b"\x01"), 1),  # bad UTF-8
        (_record(b"\x00\x00\x00\x01\x01\x02\x00" + encode_varint(-3)), 1),  # header value -3
        (b"\xff\xff\xff\xff\xff\xff\x01" + b"\x00" * 10, 1),  # over-long varint
        (encode_varint(-5) + b"\x00" * 10, 1),  # negative record length
    ],
)
def test_decode_records_rejects_malformed_records(area, count):
    b = _raw_batch(area, count)
    with pytest.raises(CorruptRecord):
        decode_records(b)


def test_hand_written_good_record_decodes():
    second = b"\x00" + encode_varlong(-3) + encode_varint(1) + GOOD_BODY[3:]
    b = _raw_batch(_record(GOOD_BODY) + _record(second), 2)
    struct.pack_into(">q", b, 27, T0)
    recompute_crc(b, 0)
    assert [(r.key, r.value, r.offset, r.timestamp) for r in decode_records(b)] == [
        (b"k", b"v", 0, T0), (b"k", b"v", 1, T0 - 3)]


def test_decompressed_size_is_capped():
    recs = [(None, b"\x00" * 100_000, [], T0) for _ in range(30)]
    for codec in CODECS[1:]:
        b = build_batch(recs, compression=codec)
        assert len(decode_records(b)) == 30
        with pytest.raises(CorruptRecord):
            decode_records(b, max_decompressed=1_000_000)


def test_decode_records_truncated_batch_and_garbage_compressed_area():
    b = build_batch(sample_records(3), compression=COMPRESSION_GZIP)
    with pytest.raises(CorruptRecord):
        decode_records(b[:-1])
    for codec in CODECS[1:]:
        with pytest.raises(CorruptRecord):
            decode_records(_raw_batch(b"this is not compressed", 1, codec=codec))
    with pytest.raises(CorruptRecord):
        decode_records(_raw_batch(_record(GOOD_BODY), 1, codec=6))


# --------------------------------------------------------------------------- fuzzing

ALLOWED = (CorruptRecord, InvalidRecord, WireError)


def _exercise(buf) -> None:
    """Feed ``buf`` to every entry point; only typed wire errors may come out."""
    for fn in (
        lambda: parse_header(buf),
        lambda: list(iter_batches(buf, verify=True)),
        lambda: list(iter_batches(buf, allow_truncated_tail=True)),
        lambda: validate_batches(buf),
        lambda: decode_records(buf, max_decompressed=1 << 20),
        lambda: list(iter_all_records(buf, max_decompressed=1 << 20)),
    ):
        try:
            fn()
        except ALLOWED:
            pass


def _decode_allowing_errors(buf):
    try:
        return decode_records(buf, max_decompressed=1 << 20)
    except ALLOWED:
        return None


VALID = {codec: build_batch(sample_records(8, seed=3), compression=codec) for codec in CODECS}


@given(st.binary(max_size=300))
@FAST
def test_fuzz_random_bytes(data):
    _exercise(data)
    # random bytes behind a plausible header exercise the record decoder itself
    _exercise(_raw_batch(data, 3))


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_fuzz_every_truncation(codec):
    b = VALID[codec]
    for cut in range(1, len(b)):
        piece = b[:cut]
        with pytest.raises(CorruptRecord):
            list(iter_batches(piece))
        with pytest.raises(WireError):
            validate_batches(piece)
        with pytest.raises(CorruptRecord):
            decode_records(piece)
        assert list(iter_batches(piece, allow_truncated_tail=True)) == []


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_fuzz_truncated_records_area_in_a_consistent_batch(codec):
    """The batch length and CRC agree, but the (compressed) records area is cut short."""
    b = VALID[codec]
    area = b[BATCH_HEADER_SIZE:]
    count = parse_header(b).records_count
    for cut in range(len(area)):
        with pytest.raises(CorruptRecord):
            decode_records(_raw_batch(area[:cut], count, codec=codec))


@given(codec=st.sampled_from(CODECS), data=st.data())
@settings(max_examples=300, deadline=None)
def test_fuzz_single_byte_mutations(codec, data):
    b = bytearray(VALID[codec])
    i = data.draw(st.integers(0, len(b) - 1))
    b[i] = data.draw(st.integers(0, 255))
    _exercise(bytes(b))
    # with the CRC fixed up the mutation reaches the record decoder past validate_batches
    if i >= 21 and len(b) >= 61 and b[16] == 2:
        try:
            recompute_crc(b, 0)
        except CorruptRecord:
            return
        _exercise(bytes(b))


@given(st.lists(st.tuples(st.integers(61, 400), st.integers(0, 255)), min_size=1, max_size=8))
@FAST
def test_fuzz_mutations_inside_uncompressed_records(edits):
    b = bytearray(build_batch(sample_records(12, seed=9)))
    for i, v in edits:
        if i < len(b):
            b[i] = v
    recompute_crc(b, 0)
    out = _decode_allowing_errors(b)
    assert out is None or isinstance(out, list)
    _exercise(bytes(b))
