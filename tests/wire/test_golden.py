"""Golden frames from real clients decode exactly.

Each file in ``golden/`` (see its README) is a whole request frame captured from
kafka-python, aiokafka or confluent-kafka by ``tools/capture_golden.py``. Every one must
decode, and re-encode to the identical bytes; a few fields are spot-checked against what
the capture session sent (topic, group, client id, record batch header and CRC).
"""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import crc32c
import pytest

from kbroker.wire import messages, protocol
from kbroker.wire.model import snake_case

GOLDEN = Path(__file__).with_name("golden")
MANIFEST = json.loads((GOLDEN / "MANIFEST.json").read_text())
FILES = sorted(GOLDEN.glob("*_request_v*_*.bin"))
NAME = re.compile(r"^(?P<api>[a-z_]+)_request_v(?P<version>\d+)_(?P<n>\d{3})\.bin$")
TOPIC, GROUP = "golden-topic", "golden-group"
API_KEY_BY_NAME = {snake_case(messages.request_class(k)._message.name[:-len("Request")]): k
                   for k in messages.api_keys()}


def test_golden_set_is_representative():
    assert set(MANIFEST) == {f.name for f in FILES}
    assert {m["client"] for m in MANIFEST.values()} == {"kafka-python", "aiokafka", "confluent"}
    apis = {NAME.match(f.name)["api"] for f in FILES}
    assert {"api_versions", "metadata", "produce", "fetch", "list_offsets", "find_coordinator",
            "join_group", "sync_group", "init_producer_id", "create_topics", "offset_commit",
            "offset_fetch"} <= apis
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_golden_frame_round_trips(path):
    m = NAME.match(path.name)
    assert m, f"bad golden file name {path.name}"
    raw = path.read_bytes()
    assert int.from_bytes(raw[:4], "big") == len(raw) - 4
    frame = raw[4:]
    header, body_start = protocol.decode_request_header(frame)
    api_key, version = API_KEY_BY_NAME[m["api"]], int(m["version"])
    meta = MANIFEST[path.name]
    assert (header.api_key, header.api_version) == (api_key, version) == (meta["api_key"], meta["api_version"])
    assert header.client_id == meta["client_id"] and header.client_id.startswith("golden-")
    _, body = protocol.decode_request(frame)
    cls = messages.request_class(api_key)
    again, end = cls.decode_from(frame, version, body_start)
    assert end == len(frame), "bytes left over after the body"
    assert again == body
    assert body.encode(version) == frame[body_start:], "re-encoding the body changes bytes"
    if not header.unknown_tags:
        assert protocol.encode_request(api_key, version, header.correlation_id, header.client_id, body) == raw
    check = SPOT_CHECKS.get(m["api"])
    if check:
        check(body, version, meta["client"])


def _produce(body, version, client):
    assert [t.name for t in body.topic_data] == [TOPIC]
    for t in body.topic_data:
        for p in t.partition_data:
            assert p.index == 0
            batch = p.records
            assert isinstance(batch, memoryview)
            _check_batch(bytes(batch))


def _check_batch(batch: bytes):
    # RecordBatch v2: base offset, length, leader epoch, magic, CRC32C over the rest
    base_offset, length, _epoch, magic, crc = struct.unpack_from(">qiibI", batch, 0)
    assert magic == 2 and length == len(batch) - 12 and base_offset == 0
    assert crc == crc32c.crc32c(batch[21:])
    producer_id, _pepoch, base_seq, count = struct.unpack_from(">qhii", batch, 43)
    assert producer_id in (1000, -1)  # the id InitProducerId handed out, or none
    assert count >= 1 and (base_seq >= 0 or producer_id == -1)


def _metadata(body, version, client):
    names = [t.name for t in (body.topics or [])]
    assert names in ([], [TOPIC])


def _api_versions(body, version, client):
    if version >= 3:
        assert body.client_software_name and body.client_software_version


def _find_coordinator(body, version, client):
    keys = body.coordinator_keys if version >= 4 else [body.key]
    assert keys == [GROUP]
    assert body.key_type == 0


def _join_group(body, version, client):
    assert body.group_id == GROUP and body.protocol_type == "consumer"
    assert body.protocols and all(p.metadata is not None for p in body.protocols)
    # the subscription inside is a ConsumerProtocolSubscription, prefixed by its version
    meta = bytes(body.protocols[0].metadata)
    sub_version = int.from_bytes(meta[:2], "big", signed=True)
    sub_cls = messages.ConsumerProtocolSubscription
    sub = sub_cls.decode(meta, min(sub_version, sub_cls._message.valid.high), 2)
    assert sub.topics == [TOPIC]


def _sync_group(body, version, client):
    assert body.group_id == GROUP and body.generation_id == 1


def _fetch(body, version, client):
    assert [t.topic for t in body.topics] == [TOPIC]
    assert [p.partition for p in body.topics[0].partitions] == [0]


def _list_offsets(body, version, client):
    assert [t.name for t in body.topics] == [TOPIC]


def _create_topics(body, version, client):
    assert [t.name for t in body.topics] == [TOPIC]
    assert body.topics[0].num_partitions in (1, -1)


def _init_producer_id(body, version, client):
    assert body.transactional_id is None


def _offsets(body, version, client):
    if hasattr(body, "groups") and version >= 8:
        assert [g.group_id for g in body.groups] == [GROUP]
    else:
        assert body.group_id == GROUP


SPOT_CHECKS = {"produce": _produce, "metadata": _metadata, "api_versions": _api_versions,
               "find_coordinator": _find_coordinator, "join_group": _join_group,
               "sync_group": _sync_group, "fetch": _fetch, "list_offsets": _list_offsets,
               "create_topics": _create_topics, "init_producer_id": _init_producer_id,
               "offset_commit": _offsets, "offset_fetch": _offsets}
