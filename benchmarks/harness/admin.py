"""Topic set-up for the benchmark through librdkafka's admin client (same for both brokers)."""
from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient, NewTopic


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 120000})


def create_topics(bootstrap: str, topics: list[tuple[str, int]], *, per_request: int = 1000,
                  timeout: float = 300, config: dict[str, str] | None = None) -> None:
    """Create `topics` ((name, partitions)), at most `per_request` partitions per CreateTopics
    request, one request at a time, each with the topic `config` given; returns when every
    topic is created and every partition has a leader in Metadata."""
    client = admin(bootstrap)
    batch: list[NewTopic] = []
    size = 0

    def flush():
        nonlocal batch, size
        if not batch:
            return
        futures = client.create_topics(batch, operation_timeout=timeout, request_timeout=timeout)
        for name, fut in futures.items():
            fut.result(timeout)
        batch, size = [], 0

    for name, parts in topics:
        if size + parts > per_request:
            flush()
        batch.append(NewTopic(name, num_partitions=parts, replication_factor=1, config=config or {}))
        size += parts
    flush()
    wait_ready(client, dict(topics), timeout=timeout)


def wait_ready(client: AdminClient, wanted: dict[str, int], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        md = client.list_topics(timeout=timeout)
        missing = 0
        for name, parts in wanted.items():
            t = md.topics.get(name)
            if t is None or t.error is not None or len(t.partitions) != parts:
                missing += 1
                continue
            if any(p.leader < 0 or p.error is not None for p in t.partitions.values()):
                missing += 1
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{missing} of {len(wanted)} topics not ready after {timeout}s")
        time.sleep(0.05)
