"""confluent-kafka helpers for transactional tests."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition


def read_all(bootstrap: str, topic: str, partitions, *, isolation: str,
             expect: int | None = None, timeout: float = 20.0) -> list[bytes]:
    """Every record value of ``topic``'s ``partitions`` (a count, or the partition indexes)
    from the beginning, until each reached its end offset for this isolation level (and
    ``expect`` values were seen, when given) or ``timeout``."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": isolation,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": True})
    try:
        parts = list(range(partitions) if isinstance(partitions, int) else partitions)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        got: list[bytes] = []
        eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == m.error()._PARTITION_EOF:
                    eof.add(m.partition())
                    if len(eof) == len(parts) and (expect is None or len(got) >= expect):
                        break
                continue
            eof.discard(m.partition())
            got.append(m.value())
        return got
    finally:
        c.close()


def end_offsets(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets", "isolation.level": isolation})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)]
    finally:
        c.close()
