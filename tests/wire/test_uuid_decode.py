"""Decoded UUIDs are shared (issue 32: a restart of 100,000 partitions replays a
PartitionRecord per partition, each naming its topic's id and its directory's id): the
same 16 bytes decode to the same immutable object, every id decodes right, and the cache
stays bounded."""
from __future__ import annotations

import uuid

from kbroker.wire import codegen
from kbroker.wire.codegen import r_uuid
from kbroker.wire.model import ZERO_UUID


def test_the_same_bytes_decode_to_one_object():
    ids = [uuid.uuid4() for _ in range(3)]
    buf = b"".join(u.bytes for u in ids + ids) + bytes(16)
    out, pos = [], 0
    while pos < len(buf):
        u, pos = r_uuid(buf, pos, len(buf))
        out.append(u)
    assert out == ids + ids + [ZERO_UUID]
    assert all(out[i] is out[i + 3] for i in range(3))
    assert out[-1] is ZERO_UUID


def test_the_cache_is_bounded_and_still_decodes_every_id():
    ids = [uuid.uuid4() for _ in range(codegen.UUID_CACHE_SIZE + 10)]
    for u in ids:
        assert r_uuid(u.bytes, 0, 16) == (u, 16)
        assert len(codegen._UUIDS) <= codegen.UUID_CACHE_SIZE
    assert r_uuid(bytes(16), 0, 16)[0] is ZERO_UUID
