"""Topic ids (KIP-516) → names, for the API versions that name topics by id.

Fetch v13+, Produce v13+, OffsetCommit/OffsetFetch v10 address topics by id; handlers resolve
them through the metadata image the replica layer serves from (the broker's image otherwise).
An id the image does not know resolves to nothing: the handler answers UNKNOWN_TOPIC_ID.

The names are looked up in the image's own ``topics_by_id`` at each ``get``: building a
{id: name} dict of every topic for each request made a Fetch v13+ (librdkafka's version)
cost time in proportion to the number of topics on the node.
"""
from __future__ import annotations


class _Names:
    """Topic id → name through an image's ``topics_by_id`` (only ``get``, as handlers use)."""

    __slots__ = ("_by_id",)

    def __init__(self, by_id):
        self._by_id = by_id

    def get(self, topic_id, default=None):
        t = self._by_id.get(topic_id)
        return default if t is None else t.name


def topic_names(broker):
    """The current image's topic names by id: an object with ``get(topic_id)``."""
    image = getattr(getattr(broker, "replicas", None), "image", None) or getattr(broker, "metadata", None)
    by_id = getattr(image, "topics_by_id", None)
    if by_id is None:
        return {t.topic_id: name for name, t in (getattr(image, "topics", None) or {}).items()}
    return _Names(by_id)
