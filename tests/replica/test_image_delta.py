"""Applying a metadata image touches only what changed (issue 32: partition creation linear).

Real metadata records replayed by the real image builder (``kbroker.metadata.image``) into
the real ReplicaManager on real logs; the count asserted is the manager's own
``image_partitions_visited``, not a time. Before this rule every image walked every
partition, so creating n partitions in k requests cost O(n·k).
"""
from __future__ import annotations

import uuid

from kbroker.metadata.image import ImageBuilder, empty_image
from kbroker.wire import messages as w
from kbroker.wire.error_codes import ErrorCode

from .conftest import NODE, batch


class Metadata:
    """A metadata image grown by records, pushed to the replica manager after each step."""

    def __init__(self, replicas):
        self.replicas = replicas
        self.image = empty_image("delta-test", NODE)
        self.ids: dict[str, uuid.UUID] = {}

    def push(self, *records) -> int:
        """Apply ``records`` as one image; returns the partitions the manager visited."""
        b = ImageBuilder(self.image)
        for r in records:
            b.apply(r)
        self.image = b.build()
        before = self.replicas.stats["image_partitions_visited"]
        self.replicas.apply_image(self.image)
        return self.replicas.stats["image_partitions_visited"] - before

    def topic(self, name: str, partitions: int, *, leader: int = NODE) -> int:
        tid = self.ids[name] = uuid.uuid4()
        return self.push(w.TopicRecord(name=name, topic_id=tid), *[
            w.PartitionRecord(partition_id=i, topic_id=tid, replicas=[leader], isr=[leader],
                              removing_replicas=[], adding_replicas=[], leader=leader,
                              leader_epoch=0, partition_epoch=0)
            for i in range(partitions)])


def test_a_new_topic_visits_only_its_partitions(replicas, broker):
    md = Metadata(replicas)
    visited = [md.topic(f"t{i}", 20) for i in range(30)]
    assert visited == [20] * 30                     # never the 600 already there
    assert len(replicas.all_replicas()) == 600
    assert md.topic("one", 1) == 1
    assert broker.logs.get("one", 0) is not None
    replicas.append("one", 0, batch(b"x"), required_acks=1)


def test_a_leader_change_visits_one_partition(replicas):
    md = Metadata(replicas)
    for i in range(10):
        md.topic(f"t{i}", 10)
    assert md.push(w.PartitionChangeRecord(partition_id=3, topic_id=md.ids["t4"], leader=2,
                                           isr=[NODE, 2], replicas=[NODE, 2])) == 1
    assert replicas.get_replica("t4", 3).is_leader is False
    try:
        replicas.get_partition("t4", 3)
        raise AssertionError("a follower answered as leader")
    except Exception as exc:   # noqa: BLE001 - the ReplicaError's code is what matters
        assert getattr(exc, "error_code", None) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert replicas.get_partition("t4", 2).is_leader


def test_a_topic_config_change_reaches_every_partition_of_that_topic_only(replicas):
    md = Metadata(replicas)
    for i in range(5):
        md.topic(f"t{i}", 8)
    visited = md.push(w.ConfigRecord(resource_type=2, resource_name="t1",
                                     name="retention.ms", value="1234"))
    assert visited == 8
    assert {replicas.get_replica("t1", i).config.retention_ms for i in range(8)} == {1234}
    assert replicas.get_replica("t2", 0).config.retention_ms != 1234


def test_a_deleted_topic_drops_its_replicas_and_visits_only_them(replicas, broker):
    md = Metadata(replicas)
    for i in range(5):
        md.topic(f"t{i}", 8)
    assert md.push(w.RemoveTopicRecord(topic_id=md.ids["t3"])) == 8
    assert broker.logs.get("t3", 0) is None and replicas.get_replica("t3", 0) is None
    assert len(replicas.all_replicas()) == 32
    try:
        replicas.get_partition("t3", 0)
        raise AssertionError("a deleted topic's partition answered")
    except Exception as exc:   # noqa: BLE001
        assert getattr(exc, "error_code", None) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_broker_level_config_change_applies_to_every_partition(replicas):
    md = Metadata(replicas)
    for i in range(3):
        md.topic(f"t{i}", 4)
    assert md.push(w.ConfigRecord(resource_type=4, resource_name="",
                                  name="log.retention.ms", value="4321")) == 12
