"""Topic ids (KIP-516) → names, for the API versions that name topics by id.

Fetch v13+, Produce v13+, OffsetCommit/OffsetFetch v10 address topics by id; handlers resolve
them through the metadata image the replica layer serves from (the broker's image otherwise).
An id the image does not know resolves to nothing: the handler answers UNKNOWN_TOPIC_ID.
"""
from __future__ import annotations


def topic_names(broker) -> dict:
    """{topic id: topic name} of the current image."""
    image = getattr(getattr(broker, "replicas", None), "image", None) or getattr(broker, "metadata", None)
    by_id = getattr(image, "topics_by_id", None)
    if by_id is None:
        return {t.topic_id: name for name, t in (getattr(image, "topics", None) or {}).items()}
    return {tid: t.name for tid, t in by_id.items()}
