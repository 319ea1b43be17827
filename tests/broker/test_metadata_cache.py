"""Metadata answers from cached topic entries (issue 32): the same bytes as building and
encoding every entry afresh, at every version, and never an entry of an older image.

Real metadata records replayed by the real image builder; the entries are the Metadata
handler's own (``kbroker.api.metadata.topic_entry``) and the cache is the one it uses.
The counts asserted are the cache's builds and hits, not times.
"""
from __future__ import annotations

import uuid

import pytest

from kbroker.api import metadata as md
from kbroker.api._metadata_cache import TopicEntryCache
from kbroker.metadata.image import ImageBuilder, empty_image
from kbroker.wire import messages as w

R = w.RegisterBrokerRecord
LISTENER = "PLAINTEXT"


def broker_record(node: int, port: int, *, fenced: bool = False):
    return R(broker_id=node, incarnation_id=uuid.UUID(int=node), broker_epoch=node,
             end_points=[R.BrokerEndpoint(name=LISTENER, host="127.0.0.1", port=port,
                                          security_protocol=0)],
             features=[], rack=None, fenced=fenced, in_controlled_shutdown=False, log_dirs=[])


def grow(image, *records):
    b = ImageBuilder(image)
    for r in records:
        b.apply(r)
    return b.build()


def topic_records(name: str, partitions: int, replicas=(1, 2)):
    tid = uuid.uuid5(uuid.NAMESPACE_DNS, name)
    return tid, [w.TopicRecord(name=name, topic_id=tid)] + [
        w.PartitionRecord(partition_id=i, topic_id=tid, replicas=list(replicas),
                          isr=list(replicas), removing_replicas=[], adding_replicas=[],
                          leader=replicas[i % len(replicas)], leader_epoch=0, partition_epoch=0)
        for i in range(partitions)]


@pytest.fixture
def image():
    img = grow(empty_image("cache-test", 1), broker_record(1, 9092), broker_record(2, 9093))
    for t in range(6):
        img = grow(img, *topic_records(f"t{t}", 5)[1])
    return img


def answer(image, version: int, cache: TopicEntryCache | None) -> bytes:
    """A full Metadata answer at ``version``, its entries cached or built afresh."""
    topics = []
    for _, t in sorted(image.topics.items()):
        fresh = lambda t=t: md.topic_entry(image, t, LISTENER, version)   # noqa: E731
        topics.append(fresh() if cache is None else
                      cache.entry(image, t, LISTENER, version, fresh, md.Response))
    resp = md.Response(throttle_time_ms=0, brokers=md.broker_entries(image, LISTENER),
                       cluster_id=image.cluster_id, controller_id=image.controller_id,
                       topics=topics)
    return resp.encode(version)


@pytest.mark.parametrize("version", range(0, 14))
def test_cached_entries_encode_to_the_same_bytes(image, version):
    cache = TopicEntryCache()
    first = answer(image, version, cache)
    assert first == answer(image, version, None)
    builds = cache.stats["builds"]
    assert answer(image, version, cache) == first
    assert cache.stats["builds"] == builds and cache.stats["hits"] >= 6
    decoded = md.Response.decode(first, version)
    assert sorted(t.name for t in decoded.topics) == [f"t{i}" for i in range(6)]


def test_a_changed_topic_is_built_again_and_only_it(image):
    cache = TopicEntryCache()
    answer(image, 12, cache)
    tid = image.topics["t2"].topic_id
    moved = grow(image, w.PartitionChangeRecord(partition_id=0, topic_id=tid, leader=2))
    before = cache.stats["builds"]
    got = md.Response.decode(answer(moved, 12, cache), 12)
    assert cache.stats["builds"] == before + 1
    (t2,) = [t for t in got.topics if t.name == "t2"]
    p0 = next(p for p in t2.partitions if p.partition_index == 0)
    assert (p0.leader_id, p0.leader_epoch) == (2, 1)
    assert answer(moved, 12, cache) == answer(moved, 12, None)


def test_a_broker_change_rebuilds_every_entry(image):
    cache = TopicEntryCache()
    answer(image, 12, cache)
    fenced = grow(image, w.BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=2, fenced=1))
    before = cache.stats["builds"]
    data = answer(fenced, 12, cache)
    assert cache.stats["builds"] == before + 6
    assert data == answer(fenced, 12, None)
    got = md.Response.decode(data, 12)
    assert all(p.offline_replicas == [2] for t in got.topics for p in t.partitions)


def test_deleted_topics_leave_the_cache(image):
    cache = TopicEntryCache()
    img = image
    for round_ in range(20):               # topics come and go; the cache stays bounded
        tid, records = topic_records(f"tmp{round_}", 1)
        img = grow(img, *records)
        answer(img, 12, cache)
        img = grow(img, w.RemoveTopicRecord(topic_id=tid))
        answer(img, 12, cache)
    assert cache.statistics()["topics"] <= 2 * len(img.topics) + 16 + 1
