"""Hostile input: only ``WireError`` subclasses come out of the wire layer.

The frame decoder, the request-header decoder, every request decoder (and every response
decoder, which the broker's own client paths use) are fed random bytes, truncations and
single-byte corruptions of valid encodings. Anything other than ``FrameTooLarge``,
``MalformedFrame`` or ``UnsupportedVersion`` is a bug. Crafted frames with huge counts and
lengths must fail before allocating (checked with ``tracemalloc``), and a decoder told to
stop at ``end`` must never read past it.
"""
from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kbroker.wire import messages, protocol
from kbroker.wire.errors import FrameTooLarge, MalformedFrame, UnsupportedVersion, WireError

from .test_codec_roundtrip import message_strategy, versions_of

EXPECTED = (FrameTooLarge, MalformedFrame, UnsupportedVersion)
REQUESTS = sorted(n for n, s in messages.specs().items() if s.kind == "request")
RESPONSES = sorted(n for n, s in messages.specs().items() if s.kind == "response")
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def only_wire_errors(fn, *args):
    try:
        return fn(*args)
    except EXPECTED:
        return None
    except WireError as e:  # pragma: no cover - a new subclass would need adding above
        pytest.fail(f"unexpected WireError subclass {type(e).__name__}: {e}")


# --------------------------------------------------------------------------- frames and headers

@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=40), max_size=10), max_frame=st.integers(0, 64))
def test_frame_decoder_random_stream(chunks, max_frame):
    dec = protocol.FrameDecoder(max_frame)
    stream = b"".join(chunks)
    got = []
    try:
        for c in chunks:
            got += dec.feed(c)
    except FrameTooLarge:
        return
    # whatever came out is a prefix of the stream, split by its own size prefixes
    pos = 0
    for frame in got:
        n = int.from_bytes(stream[pos:pos + 4], "big", signed=True)
        assert 0 <= n <= max_frame and stream[pos + 4:pos + 4 + n] == frame
        pos += 4 + n
    assert dec.buffered == len(stream) - pos


@pytest.mark.parametrize("size", [-1, -(1 << 31), 101, 1 << 30, (1 << 31) - 1])
def test_frame_decoder_rejects_bad_sizes_before_allocating(size):
    dec = protocol.FrameDecoder(100)
    with pytest.raises(FrameTooLarge):
        dec.feed(struct.pack(">i", size) + b"x")


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=64))
def test_request_header_decoder_random(data):
    only_wire_errors(protocol.decode_request_header, data)
    only_wire_errors(protocol.decode_request, data)


@settings(max_examples=200, deadline=None)
@given(api_key=st.sampled_from(messages.api_keys()), version=st.integers(-2, 20),
       tail=st.binary(max_size=48))
def test_whole_request_frames_random_body(api_key, version, tail):
    frame = struct.pack(">hhi", api_key, version, 1) + tail
    only_wire_errors(protocol.decode_request, frame)


@settings(max_examples=200, deadline=None)
@given(api_key=st.integers(-5, 300), version=st.integers(-2, 20), tail=st.binary(max_size=32))
def test_response_decoder_random(api_key, version, tail):
    only_wire_errors(protocol.decode_response, tail, api_key, version)


# --------------------------------------------------------------------------- every decoder

@pytest.mark.parametrize("name", REQUESTS + RESPONSES)
@FUZZ
@given(data=st.data())
def test_decoders_random_bytes(name, data):
    cls = messages.get(name)
    version = data.draw(st.sampled_from(versions_of(name)))
    buf = data.draw(st.binary(max_size=80))
    only_wire_errors(cls.decode, buf, version)


@pytest.mark.parametrize("name", REQUESTS)
@FUZZ
@given(data=st.data())
def test_decoders_truncated_and_corrupted(name, data):
    cls = messages.get(name)
    version = data.draw(st.sampled_from(versions_of(name)))
    good = data.draw(message_strategy(name, version)).encode(version)
    # every truncation fails cleanly, and a decoder told to stop early never reads past end
    for cut in range(len(good)):
        with pytest.raises(MalformedFrame):
            cls.decode(good[:cut], version)
        with pytest.raises(MalformedFrame):
            cls.decode_from(good, version, 0, cut)
    # corruptions: whatever a flipped byte does, only wire errors come out
    if good:
        i = data.draw(st.integers(0, len(good) - 1))
        b = data.draw(st.integers(0, 255))
        bad = good[:i] + bytes([b]) + good[i + 1:]
        only_wire_errors(cls.decode, bad, version)
        only_wire_errors(cls.decode, bad + data.draw(st.binary(max_size=8)), version)


def test_decode_from_rejects_bad_bounds():
    cls = messages.ApiVersionsRequest
    good = cls(client_software_name="a", client_software_version="b").encode(3)
    for pos, end in [(-1, None), (0, len(good) + 1), (5, 2), (len(good) + 3, None)]:
        with pytest.raises(MalformedFrame):
            cls.decode_from(good, 3, pos, end)


def test_unknown_versions_are_typed():
    with pytest.raises(UnsupportedVersion):
        messages.ProduceRequest.decode(b"", 999)
    with pytest.raises(UnsupportedVersion):
        messages.ProduceRequest().encode(-1)
    frame = struct.pack(">hhi", 12345, 0, 1) + b"\xff\xff"
    with pytest.raises(UnsupportedVersion):
        protocol.decode_request(frame)


# --------------------------------------------------------------------------- allocation bounds

def _peak(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def _crafted() -> list[tuple[str, int, bytes]]:
    huge32 = struct.pack(">i", (1 << 31) - 1)
    uv = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])  # 2**32 - 1 as an unsigned varint
    return [
        # Metadata v1: topics array with a count of 2**31-1 in an 8-byte body
        ("MetadataRequest", 1, huge32 + b"\0\0\0\0"),
        # Metadata v12 (flexible): compact topics count 2**32-2
        ("MetadataRequest", 12, uv + b"\0" * 8),
        # Produce v3: transactional id null, acks, timeout, topic count huge
        ("ProduceRequest", 3, b"\xff\xff\x00\x01\x00\x00\x03\xe8" + huge32),
        # Produce v9: one topic whose name claims 2**32-2 bytes
        ("ProduceRequest", 9, b"\x00\x00\x01\x00\x00\x03\xe8\x02" + uv + b"abc"),
        # Produce v3: records claiming 2**31-1 bytes
        ("ProduceRequest", 3, b"\xff\xff\x00\x01\x00\x00\x03\xe8\x00\x00\x00\x01\x00\x01t"
         b"\x00\x00\x00\x01\x00\x00\x00\x00" + huge32 + b"xx"),
        # Fetch v4: int32 array of huge length inside a partition
        ("FetchRequest", 4, b"\xff\xff\xff\xff" * 3 + b"\x00" + huge32),
        # CreateTopics v5: a huge tagged-field count and size
        ("CreateTopicsRequest", 5, b"\x01\x00\x00\x00\x00\x00" + uv + uv + uv),
        # ApiVersions v3: string length varint that never ends
        ("ApiVersionsRequest", 3, b"\xff" * 64),
        # OffsetCommit v2: group id with negative length
        ("OffsetCommitRequest", 2, b"\x80\x00" + b"\0" * 20),
    ]


@pytest.mark.parametrize("name,version,body", _crafted())
def test_huge_counts_fail_fast_without_allocating(name, version, body):
    cls = messages.get(name)
    cls.decode(cls().encode(version), version)  # compile the codec outside the measurement

    def run():
        with pytest.raises(MalformedFrame):
            cls.decode(body, version)
    assert _peak(run) < 64 * 1024


def test_header_with_huge_client_id_fails_fast():
    frame = struct.pack(">hhih", 3, 1, 7, 32767) + b"abc"
    assert _peak(lambda: only_wire_errors(protocol.decode_request_header, frame)) < 64 * 1024
    with pytest.raises(MalformedFrame):
        protocol.decode_request_header(frame)


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(REQUESTS), data=st.data())
def test_random_bytes_never_allocate_much(name, data):
    """Any input of n bytes costs at most a small multiple of n to reject (or decode)."""
    cls = messages.get(name)
    version = data.draw(st.sampled_from(versions_of(name)))
    buf = data.draw(st.binary(min_size=1, max_size=64))
    only_wire_errors(cls.decode, buf, version)  # compile the codec outside the measurement
    assert _peak(lambda: only_wire_errors(cls.decode, buf, version)) < 64 * 1024


def test_known_tagged_field_cannot_read_past_its_size():
    cls = messages.ApiVersionsResponse
    good = cls(error_code=0, api_keys=[], throttle_time_ms=0, finalized_features_epoch=5).encode(3)
    # error code, empty compact array, throttle time, then: 1 tag, tag 1, size 8, int64
    assert good[7:10] == b"\x01\x01\x08"
    assert cls.decode(good, 3).finalized_features_epoch == 5
    short = good[:9] + b"\x04" + good[10:14]  # the int64 now claims only 4 bytes
    with pytest.raises(MalformedFrame):
        cls.decode(short, 3)
    # the same bytes followed by more data: still the tag's size bounds the read
    with pytest.raises(MalformedFrame):
        cls.decode(short + b"\0" * 8, 3)
