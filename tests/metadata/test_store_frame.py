"""The framing of one metadata record value (frame version, record type, record version as
unsigned varints, then the record): round trip, and bad frames are a ValueError (what the
quorum's replay catches to skip a record) rather than an IndexError or a codec error."""
from __future__ import annotations

import uuid

import pytest

from kbroker.metadata.store import FRAME_VERSION, decode_record, encode_record
from kbroker.wire import messages


def test_round_trip_and_frame_header():
    rec = messages.TopicRecord(name="t", topic_id=uuid.UUID(int=7))
    value = encode_record(rec)
    assert value[0] == FRAME_VERSION and value[1] == 2      # TopicRecord's api key
    back = decode_record(value)
    assert (type(back).__name__, back.name, back.topic_id) == ("TopicRecord", "t", uuid.UUID(int=7))


@pytest.mark.parametrize("value", [
    b"",                                 # nothing at all
    bytes([FRAME_VERSION]),              # truncated after the frame version
    bytes([FRAME_VERSION, 0x82]),        # a record type varint cut in the middle
    bytes([FRAME_VERSION]) + b"\xff" * 6,  # a varint longer than 5 bytes
    bytes([9, 2, 0]),                    # unknown frame version
    bytes([FRAME_VERSION, 0x7f, 0]),     # unknown record type
])
def test_bad_frames_are_value_errors(value):
    with pytest.raises(ValueError):
        decode_record(value)
