"""confluent-kafka helpers for transactional tests."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition


def read_all(bootstrap: str, topic: str, partitions: int, *, isolation: str,
             expect: int | None = None, timeout: float = 20.0) -> list[bytes]:
    """Every record value of ``topic`` (assign from the beginning), until the end offsets
    for this isolation level are reached (and ``expect`` values seen, when given)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": isolation,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": True})
    try:
        tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
        c.assign(tps)
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
                    if len(eof) == partitions and (expect is None or len(got) >= expect):
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
