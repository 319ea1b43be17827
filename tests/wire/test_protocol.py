"""Framing and headers: the rules of ``kbroker.wire.protocol`` one by one."""
from __future__ import annotations

import struct

import pytest

from kbroker.wire import messages, protocol
from kbroker.wire.errors import FrameTooLarge, MalformedFrame, UnsupportedVersion, WireError


def test_request_header_versions_follow_flexible_versions():
    assert protocol.request_header_version(3, 8) == 1      # Metadata v8: classic
    assert protocol.request_header_version(3, 9) == 2      # Metadata v9: flexible
    assert protocol.request_header_version(18, 2) == 1     # ApiVersions v2
    assert protocol.request_header_version(18, 3) == 2     # ApiVersions v3
    assert protocol.request_header_version(7, 0) == 1      # ControlledShutdown: removed in Kafka 4


def test_response_header_versions():
    assert protocol.response_header_version(3, 8) == 0
    assert protocol.response_header_version(3, 9) == 1
    # ApiVersions always answers with header v0, even for flexible bodies
    for v in range(0, 5):
        assert protocol.response_header_version(18, v) == 0


def test_request_header_fields_and_tags():
    body = messages.MetadataRequest(topics=None)
    frame = protocol.encode_request(3, 12, -5, "cli\u00e9nt", body)[4:]
    header, pos = protocol.decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 12, -5)
    assert header.client_id == "cli\u00e9nt" and header.header_version == 2
    assert header.unknown_tags is None
    # a header with a tagged field (e.g. a client sending one we do not know)
    cid = b"c"
    raw = struct.pack(">hhih", 3, 12, 1, 1) + cid + b"\x01\x05\x02hi" + bytes(frame[pos:])
    header2, pos2 = protocol.decode_request_header(raw)
    assert header2.unknown_tags == {5: b"hi"}
    _, decoded = protocol.decode_request(raw)
    assert decoded == body


def test_null_client_id_and_removed_apis():
    frame = protocol.encode_request(3, 1, 9, None, messages.MetadataRequest())[4:]
    header, _ = protocol.decode_request_header(frame)
    assert header.client_id is None
    # ControlledShutdown (7), the only API with request header v0, is gone from Kafka 4's
    # definitions (KIP-896/KRaft): a request for it is not decodable
    frame = struct.pack(">hhih", 7, 0, 9, -1) + struct.pack(">i", 4)
    with pytest.raises(WireError):
        protocol.decode_request(frame)


def test_bad_headers():
    with pytest.raises(MalformedFrame):
        protocol.peek_request(b"\0\x03\0")
    with pytest.raises(MalformedFrame):  # client id longer than the frame
        protocol.decode_request_header(struct.pack(">hhih", 3, 1, 1, 10) + b"abc")
    with pytest.raises(MalformedFrame):  # client id length below -1
        protocol.decode_request_header(struct.pack(">hhih", 3, 1, 1, -2))
    with pytest.raises(MalformedFrame):  # client id not UTF-8
        protocol.decode_request_header(struct.pack(">hhih", 3, 1, 1, 2) + b"\xff\xfe")
    with pytest.raises(MalformedFrame):  # header tag overruns
        protocol.decode_request_header(struct.pack(">hhih", 3, 12, 1, -1) + b"\x01\x00\x09ab")


def test_unknown_api_or_version_keeps_the_header():
    """The server must still answer: the header parses, only the body is refused."""
    frame = struct.pack(">hhih", 18, 99, 77, 3) + b"cli" + b"\0"
    header, _ = protocol.decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (18, 99, 77, "cli")
    with pytest.raises(UnsupportedVersion):
        protocol.decode_request(frame)
    frame = struct.pack(">hhih", 999, 0, 78, -1)
    header, _ = protocol.decode_request_header(frame)
    assert header.correlation_id == 78
    with pytest.raises(UnsupportedVersion):
        protocol.decode_request(frame)


def test_response_round_trip_with_header_tags_skipped():
    resp = messages.MetadataResponse(throttle_time_ms=3)
    raw = b"".join(protocol.encode_response(3, 12, 11, resp))[4:]
    assert raw[4] == 0  # header v1: empty tag section
    corr, back = protocol.decode_response(raw, 3, 12)
    assert corr == 11 and back == resp
    tagged = raw[:4] + b"\x01\x02\x01z" + raw[5:]
    assert protocol.decode_response(tagged, 3, 12)[1] == resp
    with pytest.raises(MalformedFrame):
        protocol.decode_response(raw[:4] + b"\x01\x02\x50z", 3, 12)
    with pytest.raises(UnsupportedVersion):
        protocol.decode_response(raw, 3, 99)


def test_produce_records_are_not_copied():
    cls = messages.ProduceRequest
    batch = bytes(range(256)) * 64
    req = cls(acks=1, timeout_ms=10, topic_data=[cls.TopicProduceData(
        name="t", partition_data=[cls.PartitionProduceData(index=0, records=batch)])])
    for version in (3, 8, 9, 11):
        frame = protocol.encode_request(0, version, 1, "c", req)[4:]
        _, body = protocol.decode_request(frame)
        records = body.topic_data[0].partition_data[0].records
        assert isinstance(records, memoryview)
        assert records.obj is frame, "records must be a view of the frame, not a copy"
        assert records == batch


def test_encode_response_parts_and_size_prefix():
    class Region:
        def __init__(self, n):
            self.length = n

        def read_bytes(self):
            return b"R" * self.length

    cls = messages.FetchResponse
    resp = cls(responses=[cls.FetchableTopicResponse(topic="t", partitions=[
        cls.PartitionData(partition_index=0, records=Region(1000)),
        cls.PartitionData(partition_index=1, records=None),
        cls.PartitionData(partition_index=2, records=Region(0))])])
    parts = protocol.encode_response(1, 11, 5, resp)
    size = int.from_bytes(parts[0][:4], "big")
    total = sum(len(p) if isinstance(p, bytes) else p.length for p in parts)
    assert size == total - 4
    assert all(p for p in parts if isinstance(p, bytes))  # no empty byte parts
    inline = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in parts)
    assert protocol.decode_response(inline[4:], 1, 11)[1].responses[0].partitions[0].records == b"R" * 1000


def test_encode_errors_are_typed_and_leave_the_buffer_alone():
    from kbroker.wire.errors import WireError
    out = bytearray(b"keep")
    with pytest.raises(WireError):
        messages.MetadataRequest(topics=[messages.MetadataRequest.MetadataRequestTopic(name=None)]).encode_into(out, 1)
    with pytest.raises(WireError):
        messages.ProduceRequest(acks=1 << 20).encode_into(out, 3)
    with pytest.raises(UnsupportedVersion):  # a value the version cannot carry
        messages.MetadataRequest(allow_auto_topic_creation=False).encode_into(out, 3)
    assert out == b"keep"


def test_frame_decoder_limits():
    dec = protocol.FrameDecoder(max_frame=10)
    assert dec.feed(b"\0\0\0\x0a" + b"x" * 10 + b"\0\0\0\0") == [b"x" * 10, b""]
    with pytest.raises(FrameTooLarge):
        dec.feed(b"\0\0\0\x0b")
    dec = protocol.FrameDecoder(max_frame=10)
    assert dec.feed(b"\0\0") == [] and dec.buffered == 2
    assert dec.feed(memoryview(b"\0\x01z")) == [b"z"] and dec.buffered == 0


def _produce_answer(base_offset: int, append_time: int, log_start: int):
    R = messages.ProduceResponse
    return R(responses=[R.TopicProduceResponse(name="t", partition_responses=[
        R.PartitionProduceResponse(index=3, base_offset=base_offset,
                                   log_append_time_ms=append_time,
                                   log_start_offset=log_start)])], throttle_time_ms=0)


@pytest.mark.parametrize("version", [5, 8, 9, 12])
def test_a_response_stamp_writes_what_encode_response_writes(version):
    markers = (-0x7f6e5d4c3b2a1908, -0x708192a3b4c5d6e7, -0x1f2e3d4c5b6a7988)
    stamp = protocol.ResponseStamp(0, version, _produce_answer(*markers), markers)
    out = bytearray()
    rows = [(7, 0, -1, 0), (-3, 2**63 - 1, 1_700_000_000_000, 5), (2**31 - 1, -2**63, 9, 2**62)]
    for corr, *values in rows:
        stamp.stamp(out, corr, values)
    assert bytes(out) == b"".join(
        protocol.encode_response(0, version, corr, _produce_answer(*values))[0]
        for corr, *values in rows)


def test_a_response_stamp_refuses_a_marker_not_there_exactly_once():
    with pytest.raises(ValueError, match="not found exactly once"):
        protocol.ResponseStamp(0, 9, _produce_answer(1, 2, 3), (4,))
    with pytest.raises(ValueError, match="not found exactly once"):     # twice
        protocol.ResponseStamp(0, 9, _produce_answer(-5, -5, 3), (-5,))
    with pytest.raises(ValueError, match="one after another"):          # not consecutive
        protocol.ResponseStamp(0, 9, _produce_answer(-5, -6, -7), (-5, -7))
