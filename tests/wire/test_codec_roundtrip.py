"""Round trip of every message at every valid version, with values drawn from the model.

Strategies are derived from the schema model (``kbroker.wire.model``): every field present
at the version gets a value of its type, ``None`` where the version allows it, tagged
fields in flexible versions, and unknown tags that must survive decode → encode. Other
wire tests import ``message_strategy`` from here.

Also checked: the frame size prefix equals the bytes after it (requests and responses,
including file regions spliced for sendfile), ``encode_into`` appends exactly the encoding,
and a ``FrameDecoder`` fed a stream split at every point yields the same frames.
"""
from __future__ import annotations

import uuid
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kbroker.wire import messages, protocol
from kbroker.wire.model import FieldSpec, MessageSpec, StructSpec

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1), "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
}
ALL_MESSAGES = sorted(messages.specs())
SETTINGS = settings(max_examples=15, deadline=None, derandomize=False,
                    suppress_health_check=list(HealthCheck))


def _primitive(ftype: str, max_items: int) -> st.SearchStrategy:
    if ftype in INT_RANGES:
        lo, hi = INT_RANGES[ftype]
        return st.integers(lo, hi)
    if ftype == "bool":
        return st.booleans()
    if ftype == "float64":
        return st.floats(allow_nan=False)
    if ftype == "string":
        return st.text(max_size=8)
    if ftype in ("bytes", "records"):
        return st.binary(max_size=12)
    if ftype == "uuid":
        return st.uuids(allow_nil=True) if max_items else st.just(uuid.UUID(int=0))
    raise AssertionError(f"unknown primitive {ftype}")


def _unknown_tags(s: StructSpec) -> st.SearchStrategy:
    known = {f.tag for f in s.fields if f.tag is not None}
    tags = st.integers(0, 300).filter(lambda t: t not in known)
    return st.one_of(st.none(), st.dictionaries(tags, st.binary(max_size=6), min_size=1, max_size=2))


def struct_strategy(cls: type, s: StructSpec, version: int, flexible: bool,
                    max_items: int = 2, unknown: bool = True) -> st.SearchStrategy:
    """Instances of ``cls`` (struct ``s``) with a value for every field ``version`` carries."""
    kwargs = {}
    for f in s.fields:
        if version not in f.versions:
            continue
        if version in f.tagged and not flexible:
            continue
        kwargs[f.attr] = field_strategy(cls, f, version, flexible, max_items, unknown)
    if flexible and unknown:
        kwargs["_unknown_tags"] = _unknown_tags(s)
    return st.builds(cls, **kwargs)


def field_strategy(owner: type, f: FieldSpec, version: int, flexible: bool,
                   max_items: int = 2, unknown: bool = True) -> st.SearchStrategy:
    nullable = version in f.nullable
    if f.is_struct:
        sub = getattr(owner, f.struct.name)
        elem = struct_strategy(sub, f.struct, version, flexible, max_items, unknown)
    else:
        elem = _primitive(f.element, max_items)
    if f.is_array:
        strat = st.lists(elem, max_size=max_items)
    else:
        strat = elem
    return st.one_of(st.none(), strat) if nullable else strat


@lru_cache(maxsize=None)
def message_strategy(name: str, version: int, max_items: int = 2, unknown: bool = True):
    """A strategy for whole messages ``name`` that version ``version`` can carry."""
    cls = messages.get(name)
    spec: MessageSpec = cls._message
    return struct_strategy(cls, spec.struct, version, version in spec.flexible, max_items, unknown)


def versions_of(name: str) -> list[int]:
    v = messages.specs()[name].valid
    return list(range(v.low, v.high + 1))


# --------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("name", ALL_MESSAGES)
@SETTINGS
@given(data=st.data())
def test_round_trip_every_version(name, data):
    cls = messages.get(name)
    for version in versions_of(name):
        obj = data.draw(message_strategy(name, version), label=f"v{version}")
        encoded = obj.encode(version)
        decoded, end = cls.decode_from(encoded, version)
        assert end == len(encoded), f"v{version}: decoder stopped at {end} of {len(encoded)}"
        assert decoded == obj, f"v{version}"
        assert decoded.encode(version) == encoded, f"v{version}: re-encoding differs"
        # encode_into appends exactly the encoding, after whatever is already in the buffer
        out = bytearray(b"prefix")
        obj.encode_into(out, version)
        assert bytes(out[6:]) == encoded
        # decoding in the middle of a larger buffer honours pos and end
        padded = b"\x07" * 3 + encoded + b"\x09" * 5
        again, stop = cls.decode_from(padded, version, 3, 3 + len(encoded))
        assert again == obj and stop == 3 + len(encoded)


def test_defaults_round_trip_every_version():
    """A message built with no arguments encodes and decodes at every version it has."""
    for name in ALL_MESSAGES:
        cls = messages.get(name)
        for version in versions_of(name):
            obj = cls()
            assert cls.decode(obj.encode(version), version) == obj, (name, version)


def test_unknown_tags_survive():
    cls = messages.ApiVersionsRequest
    obj = cls(client_software_name="x", client_software_version="1", _unknown_tags={7: b"abc", 300: b""})
    back = cls.decode(obj.encode(3), 3)
    assert back._unknown_tags == {7: b"abc", 300: b""}
    assert back.encode(3) == obj.encode(3)


# --------------------------------------------------------------------------- frames and sizes

API_NAMES = sorted({(s.api_key, s.name) for s in messages.specs().values() if s.kind == "request"})


@pytest.mark.parametrize("api_key,name", API_NAMES)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_request_and_response_frames(api_key, name, data):
    req_cls = messages.request_class(api_key)
    resp_cls = messages.response_class(api_key)
    for version in versions_of(name):
        req = data.draw(message_strategy(name, version), label=f"req v{version}")
        client_id = data.draw(st.one_of(st.none(), st.text(max_size=5)), label="client id")
        frame = protocol.encode_request(api_key, version, 42, client_id, req)
        assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4
        header, body = protocol.decode_request(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id) == (api_key, version, 42)
        assert header.client_id == (client_id if header.header_version >= 1 else None)
        assert body == req

        resp = data.draw(message_strategy(resp_cls._message.name, version), label=f"resp v{version}")
        parts = protocol.encode_response(api_key, version, 7, resp)
        raw = b"".join(parts)
        assert int.from_bytes(raw[:4], "big", signed=True) == len(raw) - 4
        corr, back = protocol.decode_response(raw[4:], api_key, version)
        assert corr == 7 and back == resp


class FileRegion:
    """Stands in for the log's file region: ``length`` bytes that sendfile would copy."""

    def __init__(self, data: bytes):
        self.data = data
        self.length = len(data)

    def read_bytes(self) -> bytes:
        return self.data


@pytest.mark.parametrize("version", versions_of("FetchResponse"))
def test_fetch_response_with_file_regions(version):
    cls = messages.FetchResponse
    batches = [b"A" * 100, b"B" * 3]
    resp = cls(responses=[cls.FetchableTopicResponse(
        topic="t", topic_id=uuid.UUID(int=0) if version < 13 else uuid.UUID(int=5),
        partitions=[cls.PartitionData(partition_index=i, records=FileRegion(b))
                    for i, b in enumerate(batches)])])
    parts = protocol.encode_response(1, version, 9, resp)
    regions = [p for p in parts if isinstance(p, FileRegion)]
    assert len(regions) == 2
    inline = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in parts)
    assert int.from_bytes(inline[:4], "big") == len(inline) - 4
    _, back = protocol.decode_response(inline[4:], 1, version)
    assert [bytes(p.records) for p in back.responses[0].partitions] == batches
    # the same response encoded without regions gives the same bytes
    assert resp.encode(version) == inline[4 + 4 + (1 if version >= 12 else 0):]


def _stream() -> bytes:
    frames = []
    for corr, (api_key, version) in enumerate([(18, 3), (3, 12), (0, 9), (1, 4), (18, 0)]):
        body = messages.request_class(api_key)()
        frames.append(protocol.encode_request(api_key, version, corr, "client", body))
    frames.append(b"\0\0\0\0")  # an empty frame is still a frame
    return b"".join(frames)


def _frames_of(stream: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(stream):
        n = int.from_bytes(stream[pos:pos + 4], "big")
        out.append(stream[pos + 4:pos + 4 + n])
        pos += 4 + n
    return out


def test_frame_decoder_every_split_point():
    stream = _stream()
    expected = _frames_of(stream)
    for cut in range(len(stream) + 1):
        dec = protocol.FrameDecoder()
        got = dec.feed(stream[:cut]) + dec.feed(stream[cut:])
        assert got == expected, cut
        assert dec.buffered == 0
    for cut1 in range(0, len(stream) + 1, 7):
        for cut2 in range(cut1, len(stream) + 1, 5):
            dec = protocol.FrameDecoder()
            got = dec.feed(stream[:cut1]) + dec.feed(stream[cut1:cut2]) + dec.feed(stream[cut2:])
            assert got == expected, (cut1, cut2)


def test_frame_decoder_byte_by_byte():
    stream = _stream()
    dec = protocol.FrameDecoder()
    got = []
    for i in range(len(stream)):
        got += dec.feed(stream[i:i + 1])
    assert got == _frames_of(stream)


@settings(max_examples=50, deadline=None)
@given(chunks=st.lists(st.integers(0, 40), max_size=30))
def test_frame_decoder_random_chunking(chunks):
    stream = _stream()
    expected = _frames_of(stream)
    dec = protocol.FrameDecoder()
    got, pos = [], 0
    for n in chunks:
        got += dec.feed(stream[pos:pos + n])
        pos += n
    got += dec.feed(stream[pos:])
    assert got == expected
