"""Kafka's ``partition.metadata`` file: the topic id a partition directory belongs to.

The manager checks it when it opens a log, so a log left by a deleted topic of the same name
(deleted while this broker was down, say) is not mistaken for the new topic's.
"""
from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path

PARTITION_METADATA = "partition.metadata"


def _uuid_text(topic_id) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def read_partition_metadata(directory) -> uuid.UUID | None:
    """The topic id recorded in a partition directory (Kafka's ``partition.metadata``)."""
    try:
        text = (Path(directory) / PARTITION_METADATA).read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            raw = value.strip()
            try:
                return uuid.UUID(bytes=base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
            except ValueError:
                return None
    return None


def write_partition_metadata(directory, topic_id) -> None:
    """Write the file atomically (temp file + rename) but without fsync: its content is
    derived from the metadata log, and a file lost or torn by a crash reads as "no topic id"
    and is written again when the log is next opened. An fsync per partition made creating
    10,000 partitions take minutes on a disk busy with write-back."""
    path = Path(directory) / PARTITION_METADATA
    tmp = path.with_name(PARTITION_METADATA + ".tmp")
    with open(tmp, "w") as f:
        f.write(f"version: 0\ntopic_id: {_uuid_text(topic_id)}\n")
    os.replace(tmp, path)
