"""Compression codecs for record batches: round trips, interop with other implementations,
the xerial snappy framing, caps on output size, and typed errors for bad input."""

from __future__ import annotations

import gzip
import os
import struct

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kcodec

from kbroker.wire.compression import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    XERIAL_MAGIC,
    compress,
    decompress,
)
from kbroker.wire.errors import CorruptRecord

CODECS = [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]
IDS = ["gzip", "snappy", "lz4", "zstd"]
BIG = 1 << 30
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def payload(n=200_000):
    return (os.urandom(500) + b"\x00" * 1500) * (n // 2000) + b"tail"


@pytest.mark.parametrize("codec", [COMPRESSION_NONE, *CODECS], ids=["none", *IDS])
def test_round_trip(codec):
    data = payload()
    packed = compress(codec, data)
    if codec:
        assert len(packed) < len(data)
    assert decompress(codec, packed, max_size=len(data)) == data
    assert decompress(codec, memoryview(bytearray(packed)), max_size=BIG) == data
    assert decompress(codec, compress(codec, b""), max_size=BIG) == b""


@given(st.binary(max_size=5000), st.sampled_from(CODECS))
@FAST
def test_round_trip_property(data, codec):
    assert decompress(codec, compress(codec, data), max_size=len(data)) == data


@pytest.mark.parametrize("codec, level", [(COMPRESSION_GZIP, 1), (COMPRESSION_GZIP, 9), (COMPRESSION_LZ4, 9),
                                          (COMPRESSION_ZSTD, 1), (COMPRESSION_ZSTD, 19)])
def test_levels(codec, level):
    data = payload(20_000)
    assert decompress(codec, compress(codec, data, level), max_size=BIG) == data


# --------------------------------------------------------------------------- interop


def test_gzip_interop_with_stdlib():
    data = payload(50_000)
    assert gzip.decompress(compress(COMPRESSION_GZIP, data)) == data
    assert decompress(COMPRESSION_GZIP, gzip.compress(data), max_size=BIG) == data


def test_gzip_concatenated_members_and_trailing_bytes():
    # java.util.zip.GZIPInputStream reads on into further members and ignores other trailers
    a, b = b"first member " * 10, b"second member " * 10
    both = gzip.compress(a) + gzip.compress(b)
    assert decompress(COMPRESSION_GZIP, both, max_size=BIG) == a + b
    assert decompress(COMPRESSION_GZIP, gzip.compress(a) + b"\x00\x00junk", max_size=BIG) == a


def test_snappy_interop_with_kafka_python():
    data = payload(100_000)
    # kafka-python writes the xerial framing by default (like the Java client)
    assert decompress(COMPRESSION_SNAPPY, kcodec.snappy_encode(data), max_size=BIG) == data
    assert decompress(COMPRESSION_SNAPPY, kcodec.snappy_encode(data, xerial_compatible=False), max_size=BIG) == data
    assert kcodec.snappy_decode(compress(COMPRESSION_SNAPPY, data)) == data


def test_lz4_interop_and_kafka_frame_flags():
    data = payload(300_000)
    packed = compress(COMPRESSION_LZ4, data)
    assert kcodec.lz4_decode(packed) == data
    assert lz4.frame.decompress(packed) == data
    assert decompress(COMPRESSION_LZ4, kcodec.lz4_encode(data), max_size=BIG) == data
    # Kafka's Lz4BlockInputStream requires version 01 and independent blocks; 64 KiB blocks.
    assert packed[:4] == b"\x04\x22\x4d\x18"
    flg, bd = packed[4], packed[5]
    assert flg >> 6 == 1 and flg & 0x20 and not flg & 0x03
    assert (bd >> 4) & 7 == 4


def test_lz4_concatenated_frames():
    a, b = b"a" * 1000, b"b" * 1000
    assert decompress(COMPRESSION_LZ4, lz4.frame.compress(a) + lz4.frame.compress(b), max_size=BIG) == a + b


def test_zstd_interop_frames_without_size_multi_frame_and_skippable():
    data = payload(100_000)
    assert zstandard.ZstdDecompressor().decompress(compress(COMPRESSION_ZSTD, data)) == data
    assert decompress(COMPRESSION_ZSTD, kcodec.zstd_encode(data), max_size=BIG) == data
    no_size = zstandard.ZstdCompressor(write_content_size=False, write_checksum=True).compress(data)
    assert decompress(COMPRESSION_ZSTD, no_size, max_size=BIG) == data
    assert decompress(COMPRESSION_ZSTD, no_size + no_size, max_size=BIG) == data + data
    skippable = struct.pack("<II", 0x184D2A53, 3) + b"xyz"
    assert decompress(COMPRESSION_ZSTD, skippable + no_size, max_size=BIG) == data


# --------------------------------------------------------------------------- xerial snappy


def xerial(chunks: list[bytes], *, raw_blocks: list[bytes] | None = None) -> bytes:
    """Frame raw snappy blocks the way snappy-java's SnappyOutputStream does."""
    blocks = raw_blocks if raw_blocks is not None else [snappy.compress(c) for c in chunks]
    out = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    for block in blocks:
        out += struct.pack(">i", len(block)) + block
    return out


def test_xerial_framing_hand_built():
    chunks = [b"hello " * 100, os.urandom(3000), b"", b"z" * 40_000]
    framed = xerial(chunks)
    assert framed.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert decompress(COMPRESSION_SNAPPY, framed, max_size=BIG) == b"".join(chunks)
    assert decompress(COMPRESSION_SNAPPY, xerial([]), max_size=BIG) == b""
    # agrees with kafka-python's own xerial reader
    assert kcodec.snappy_decode(framed) == b"".join(chunks)


@pytest.mark.parametrize(
    "framed",
    [
        XERIAL_MAGIC + b"\x00\x00\x00\x01",  # header cut short
        xerial([b"abc" * 50])[:-1],  # last block cut short
        xerial([b"abc" * 50]) + b"\x00\x00",  # a dangling partial length
        xerial([], raw_blocks=[b"\xff\xff\xff\xff"]),  # block is not snappy
        XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", -5),  # negative length
        XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", 2**31 - 1) + b"ab",  # length past the end
    ],
)
def test_xerial_framing_errors(framed):
    with pytest.raises(CorruptRecord):
        decompress(COMPRESSION_SNAPPY, framed, max_size=BIG)


def test_xerial_output_cap_counts_all_chunks():
    framed = xerial([b"\x00" * 60_000] * 10)
    assert len(decompress(COMPRESSION_SNAPPY, framed, max_size=600_000)) == 600_000
    with pytest.raises(CorruptRecord):
        decompress(COMPRESSION_SNAPPY, framed, max_size=599_999)


# --------------------------------------------------------------------------- bombs and garbage


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
def test_decompression_bomb_is_capped(codec):
    bomb = compress(codec, b"\x00" * (64 << 20))
    assert len(bomb) < (64 << 20) // 16  # snappy tops out near 21:1
    with pytest.raises(CorruptRecord):
        decompress(codec, bomb, max_size=1 << 20)
    exact = compress(codec, b"\x00" * 1000)
    assert len(decompress(codec, exact, max_size=1000)) == 1000
    with pytest.raises(CorruptRecord):
        decompress(codec, exact, max_size=999)


def test_uncompressed_cap():
    with pytest.raises(CorruptRecord):
        decompress(COMPRESSION_NONE, b"12345", max_size=4)


def test_snappy_raw_length_preamble_checked_before_allocating():
    # a raw snappy block claiming 2**32-1 output bytes is refused on its preamble
    with pytest.raises(CorruptRecord):
        decompress(COMPRESSION_SNAPPY, b"\xff\xff\xff\xff\x0f\x00", max_size=1 << 20)


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
def test_every_truncation_is_an_error(codec):
    packed = compress(codec, payload(20_000))
    for cut in range(0, len(packed), max(1, len(packed) // 300)):
        with pytest.raises(CorruptRecord):
            decompress(codec, packed[:cut], max_size=BIG)


@given(st.binary(max_size=200), st.sampled_from(CODECS))
@FAST
def test_garbage_only_raises_corrupt_record(data, codec):
    try:
        out = decompress(codec, data, max_size=1 << 16)
    except CorruptRecord:
        return
    assert len(out) <= 1 << 16


@given(st.sampled_from(CODECS), st.data())
@FAST
def test_mutated_streams_only_raise_corrupt_record(codec, data):
    packed = bytearray(compress(codec, b"some compressible text " * 200))
    for _ in range(data.draw(st.integers(1, 4))):
        packed[data.draw(st.integers(0, len(packed) - 1))] = data.draw(st.integers(0, 255))
    try:
        decompress(codec, bytes(packed), max_size=1 << 16)
    except CorruptRecord:
        pass


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 99])
def test_unknown_codec(codec):
    with pytest.raises(CorruptRecord):
        decompress(codec, b"abc", max_size=BIG)
    with pytest.raises(CorruptRecord):
        compress(codec, b"abc")
