"""Kafka 4.4's decoder limits: an array count above 1,000,000 and a tagged-field section of more
than 10,000 fields are refused (MalformedFrame) from the count alone, before any element is
read or allocated — even when the frame holds enough bytes for them; the limits themselves pass."""
from __future__ import annotations

import struct

import pytest

from kbroker.wire import messages
from kbroker.wire.codegen import MAX_ARRAY_ELEMENTS, MAX_TAGGED_FIELDS
from kbroker.wire.errors import MalformedFrame
from kbroker.wire.protocol import decode_request

DG = messages.DescribeGroupsRequest


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def describe_groups_v0(count: int) -> bytes:
    """DescribeGroups v0 (non-flexible) with ``count`` empty group ids (two bytes each)."""
    return struct.pack(">i", count) + b"\x00\x00" * count


def describe_groups_v5(count: int) -> bytes:
    """DescribeGroups v5 (flexible): ``count`` empty group ids, no authorized operations."""
    return uvarint(count + 1) + b"\x01" * count + b"\x00" + b"\x00"


def test_limits_are_kafkas():
    assert (MAX_ARRAY_ELEMENTS, MAX_TAGGED_FIELDS) == (1_000_000, 10_000)


@pytest.mark.parametrize("version, body", [(0, describe_groups_v0), (5, describe_groups_v5)])
def test_an_array_at_the_limit_decodes_one_above_is_refused(version, body):
    ok = DG.decode(body(MAX_ARRAY_ELEMENTS), version)
    assert len(ok.groups) == MAX_ARRAY_ELEMENTS
    with pytest.raises(MalformedFrame, match="limit"):
        DG.decode(body(MAX_ARRAY_ELEMENTS + 1), version)


def test_a_huge_count_in_a_tiny_frame_is_refused_by_the_limit():
    with pytest.raises(MalformedFrame, match="limit"):
        DG.decode(struct.pack(">i", 2**31 - 1), 0)


def request_v2(ntags: int) -> bytes:
    """A DescribeGroups v5 request (header v2) whose header carries ``ntags`` empty tags."""
    header = struct.pack(">hhih", 15, 5, 1, -1) + uvarint(ntags) + b"".join(
        uvarint(t) + b"\x00" for t in range(ntags))
    return header + describe_groups_v5(1)


def test_tagged_sections_at_the_limit_decode_one_above_is_refused():
    header, _body = decode_request(request_v2(MAX_TAGGED_FIELDS))
    assert len(header.unknown_tags) == MAX_TAGGED_FIELDS
    with pytest.raises(MalformedFrame, match="limit"):
        decode_request(request_v2(MAX_TAGGED_FIELDS + 1))
    # the same limit in a message body's tagged section
    body = uvarint(2) + b"\x01" + b"\x00" + uvarint(MAX_TAGGED_FIELDS + 1) + b"".join(
        uvarint(t + 100) + b"\x00" for t in range(MAX_TAGGED_FIELDS + 1))
    with pytest.raises(MalformedFrame, match="limit"):
        DG.decode(body, 5)
