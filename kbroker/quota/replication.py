"""Replication throttles (KIP-73, Kafka's ``ReplicationQuotaManager``).

Two quotas per broker, both in bytes per second and both off unless set:

- **leader**: ``leader.replication.throttled.rate`` (a dynamic broker config, per broker or
  cluster default) limits what this broker *sends* to followers for the partitions listed for
  it in the topic config ``leader.replication.throttled.replicas``;
- **follower**: ``follower.replication.throttled.rate`` limits what this broker *fetches* for
  the partitions listed for it in ``follower.replication.throttled.replicas``.

The replica lists are ``partition:broker`` pairs or ``*`` (every partition); an entry counts
on the broker it names (Kafka's ``parseThrottledPartitions``) — ``kafka-reassign-partitions
--throttle`` lists the current replicas on the leader side and the added ones on the
follower side. A partition is held back only while the follower is *not in the ISR*, the
partition is throttled and the measured rate is above the limit (``isQuotaExceeded``);
its bytes are recorded on a sampled rate of ``replication.quota.window.num`` windows of
``replication.quota.window.size.seconds`` (as the client quotas, ``rate.SampledRate``).

Where it applies: the follower's fetcher leaves throttled partitions out of its Fetch while
the follower quota is exceeded (and backs off when nothing is left), and records the bytes
it gets for them (``kbroker.replica.fetcher``); the leader answers a throttled partition
without records while the leader quota is exceeded, and records what it sends
(``kbroker.api.fetch``). ``statistics()`` carries the counters the metrics export: bytes
recorded, partitions held back, the measured rate and its peak.
"""
from __future__ import annotations

from typing import Callable, Mapping

from .rate import SampledRate

ALL = "*"
UNLIMITED = (1 << 63) - 1


def throttled_partitions(value: str | None, node_id: int):
    """The partitions of one topic throttled on ``node_id`` by a replica list: ``ALL`` or a
    frozenset of partition ids (empty: none)."""
    text = (value or "").strip()
    if not text:
        return frozenset()
    if text == ALL:
        return ALL
    out = set()
    for item in text.split(","):
        p, sep, b = item.strip().partition(":")
        if not sep:
            continue
        try:
            if int(b) == node_id:
                out.add(int(p))
        except ValueError:
            continue
    return frozenset(out)


class ReplicationQuota:
    """One side (``leader`` or ``follower``) of the replication throttle of this broker."""

    def __init__(self, side: str, config, clock_ms: Callable[[], int]):
        self.side = side
        self.rate_key = f"{side}.replication.throttled.rate"
        self.replicas_key = f"{side}.replication.throttled.replicas"
        self.config = config
        self.clock_ms = clock_ms
        self.sensor = SampledRate(config.get("replication.quota.window.num"),
                                  config.get("replication.quota.window.size.seconds") * 1000)
        self._throttled: dict[str, object] = {}
        self._source = None
        self.stats = {"bytes": 0, "held_back": 0, "peak_rate": 0.0}

    # ------------------------------------------------------------------ settings
    def update(self, topics: Mapping, node_id: int) -> None:
        """Throttled partitions from the image's topic configs (on every image)."""
        if topics is self._source:
            return
        self._source = topics
        out = {}
        for name, t in topics.items():
            value = t.configs.get(self.replicas_key) if t.configs else None
            if value:
                parts = throttled_partitions(value, node_id)
                if parts:
                    out[name] = parts
        self._throttled = out

    def limit(self) -> float | None:
        """The rate in bytes/s, None when unset (Kafka's default is Long.MAX_VALUE)."""
        per_broker, cluster = self.config.dynamic_layers()
        raw = per_broker.get(self.rate_key)
        if raw is None:
            raw = cluster.get(self.rate_key)
        if raw is None:
            return None
        try:
            value = int(raw)
        except (TypeError, ValueError):
            return None
        return None if value >= UNLIMITED else float(value)

    # ------------------------------------------------------------------ checks
    def is_throttled(self, topic: str, partition: int) -> bool:
        parts = self._throttled.get(topic)
        return parts is not None and (parts is ALL or partition in parts)

    def is_exceeded(self) -> bool:
        bound = self.limit()
        return bound is not None and self.sensor.measure(self.clock_ms()) > bound

    def should_throttle(self, topic: str, partition: int, in_sync: bool) -> bool:
        """Hold this partition back now? (Kafka's shouldLeaderThrottle/shouldFollowerThrottle)"""
        if in_sync or not self._throttled or not self.is_throttled(topic, partition):
            return False
        if self.is_exceeded():
            self.stats["held_back"] += 1
            return True
        return False

    def record(self, size: int) -> None:
        if size <= 0:
            return
        now = self.clock_ms()
        self.sensor.record(size, now)
        self.stats["bytes"] += size
        rate = self.sensor.measure(now)
        if rate > self.stats["peak_rate"]:
            self.stats["peak_rate"] = rate

    def statistics(self) -> dict:
        limit = self.limit()
        return {**self.stats, "limit": limit or 0, "throttled_topics": len(self._throttled),
                "rate": self.sensor.measure(self.clock_ms())}
