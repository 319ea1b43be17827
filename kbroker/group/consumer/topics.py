"""What the consumer group protocol reads of the cluster's topics: name ↔ topic id,
partition counts, and a version that changes whenever the topics may have changed.

The coordinator shard is pure, so the driver hands it a :class:`TopicsView` (of the
broker's metadata image, or of a plain mapping in tests) with every event.
"""
from __future__ import annotations

import hashlib
import uuid
from typing import Iterable, Mapping


class TopicsView:
    """A read-only view: ``topics`` maps name → (topic id, partition count)."""

    def __init__(self, topics: Mapping[str, tuple[uuid.UUID, int]], version: int = 0) -> None:
        self._topics = topics
        self._by_id = {tid: (name, n) for name, (tid, n) in topics.items()}
        self.version = version

    @classmethod
    def of_image(cls, image) -> "TopicsView":
        return _ImageTopicsView(image)

    def id_of(self, name: str) -> uuid.UUID | None:
        t = self._topics.get(name)
        return None if t is None else t[0]

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        t = self._by_id.get(topic_id)
        return None if t is None else t[0]

    def num_partitions(self, topic_id: uuid.UUID) -> int:
        t = self._by_id.get(topic_id)
        return -1 if t is None else t[1]

    def names(self) -> Iterable[str]:
        return self._topics.keys()

    def ids_of(self, names: Iterable[str]) -> set[uuid.UUID]:
        out = set()
        for n in names:
            tid = self.id_of(n)
            if tid is not None:
                out.add(tid)
        return out

    def metadata_hash(self, names: Iterable[str]) -> int:
        """A signed 64-bit digest of the subscribed topics' (name, id, partition count):
        a change means the target assignment must be recomputed (Kafka 4.1+ keeps such a
        hash in ConsumerGroupMetadata; its value is ours, only equality matters)."""
        h = hashlib.blake2b(digest_size=8)
        any_topic = False
        for n in sorted(set(names)):
            tid = self.id_of(n)
            if tid is None:
                continue
            any_topic = True
            h.update(n.encode() + b"\0" + tid.bytes + self.num_partitions(tid).to_bytes(4, "big"))
        if not any_topic:
            return 0
        return int.from_bytes(h.digest(), "big", signed=True)


class _ImageTopicsView(TopicsView):
    """The same view over a ``kbroker.metadata.image.MetadataImage`` (no copying)."""

    def __init__(self, image) -> None:
        self._image = image
        self.version = getattr(image, "offset", id(image))
        if not hasattr(image, "topics_by_id"):          # a minimal image (tests): by name only
            self._image = _ById(image)

    def id_of(self, name):
        t = self._image.topics.get(name)
        return None if t is None else t.topic_id

    def name_of(self, topic_id):
        t = self._image.topics_by_id.get(topic_id)
        return None if t is None else t.name

    def num_partitions(self, topic_id):
        t = self._image.topics_by_id.get(topic_id)
        return -1 if t is None else len(t.partitions)

    def names(self):
        return self._image.topics.keys()


class _ById:
    def __init__(self, image) -> None:
        self.topics = getattr(image, "topics", {}) or {}
        self.topics_by_id = {t.topic_id: t for t in self.topics.values()
                             if getattr(t, "topic_id", None) is not None}


EMPTY = TopicsView({})
