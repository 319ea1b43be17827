"""``controller_mutation_rate`` (KIP-599): partitions created or deleted per second.

Kafka's ``ControllerMutationQuotaManager``: the quota of a (user, client-id) is found by the
same precedence as the other client quotas (``ClientQuotaManager.metric_tags`` /
``quota_limit``), and measured by a *token bucket* per tags instead of a sampled rate:

- the bucket holds at most ``burst = quota * controller.quota.window.num *
  controller.quota.window.size.seconds`` tokens and refills at ``quota`` tokens per second;
  a new bucket starts full;
- every topic of a CreateTopics / CreatePartitions / DeleteTopics takes as many tokens as the
  partitions it creates or deletes;
- a *strict* quota (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) first checks
  the bucket: once it is below zero the topic is refused with ``THROTTLING_QUOTA_EXCEEDED``;
  a topic that passes the check takes its tokens even if that drives the bucket below zero
  (one big request is never refused on an empty-but-not-negative bucket);
- a *permissive* quota (older versions, whose clients do not know the error) takes the
  tokens and only reports a throttle time;
- the throttle time is the time to refill to zero: ``round(-tokens / quota * 1000)``,
  reported in ``throttle_time_ms`` and muting the connection (KIP-219).

Pure: every call takes the injected clock.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from .manager import MAX_SENSORS, ClientQuotaManager, user_of


class TokenBucket:
    """Kafka's ``TokenBucket`` stat: ``tokens`` refilled at ``rate``/s up to ``burst``."""

    __slots__ = ("tokens", "last_ms")

    def __init__(self, burst: float, now_ms: int):
        self.tokens = burst
        self.last_ms = now_ms

    def refill(self, rate: float, burst: float, now_ms: int) -> float:
        self.tokens = min(burst, self.tokens + rate * max(0, now_ms - self.last_ms) / 1000.0)
        self.last_ms = now_ms
        return self.tokens

    def take(self, permits: float, rate: float, burst: float, now_ms: int) -> float:
        self.refill(rate, burst, now_ms)
        self.tokens = min(burst, self.tokens - permits)
        return self.tokens


def throttle_time_ms(tokens: float, rate: float) -> int:
    """How long until a bucket at ``tokens`` (< 0) is back at zero."""
    if tokens >= 0:
        return 0
    import math
    return math.floor(-tokens / rate * 1000 + 0.5)          # Java's Math.round


class QuotaExceeded(Exception):
    def __init__(self, throttle_ms: int):
        super().__init__(f"throttled for {throttle_ms} ms")
        self.throttle_ms = throttle_ms


class MutationQuota:
    """The quota of one request: ``record(partitions)`` per topic, ``throttle_time`` after."""

    def __init__(self, manager: "ControllerMutationQuotaManager | None", tags, bound, strict: bool):
        self._manager = manager
        self._tags = tags
        self._bound = bound
        self.strict = strict
        self._throttle_ms = 0
        self._recorded_ms = 0

    def record(self, partitions: float) -> None:
        """Take ``partitions`` tokens; a strict quota raises ``QuotaExceeded`` instead when
        the bucket is already below zero."""
        m = self._manager
        if m is None or self._bound is None or partitions <= 0:
            return
        now = m.clock_ms()
        bucket = m.bucket(self._tags, self._bound, now)
        burst = m.burst(self._bound)
        if self.strict:
            tokens = bucket.refill(self._bound, burst, now)
            if tokens < 0:
                self._throttled(throttle_time_ms(tokens, self._bound), now)
                m.stats["refused"] += 1
                raise QuotaExceeded(self._throttle_ms)
            bucket.take(partitions, self._bound, burst, now)
        else:
            tokens = bucket.take(partitions, self._bound, burst, now)
            if tokens < 0:
                self._throttled(throttle_time_ms(tokens, self._bound), now)
        m.stats["recorded"] += partitions

    def _throttled(self, ms: int, now: int) -> None:
        self._throttle_ms, self._recorded_ms = ms, now
        self._manager.stats["throttled"] += 1

    def throttle_time(self) -> int:
        """The throttle time, less what has passed since it was measured (Kafka's
        ``AbstractControllerMutationQuota.throttleTime``)."""
        if not self._throttle_ms:
            return 0
        return max(0, self._throttle_ms - (self._manager.clock_ms() - self._recorded_ms))


class ControllerMutationQuotaManager(ClientQuotaManager):
    """Token buckets per quota tags for ``controller_mutation_rate``."""

    def __init__(self, samples: int, window_ms: int, clock_ms: Callable[[], int]):
        super().__init__("controller_mutation_rate", samples, window_ms, clock_ms)
        self._buckets: OrderedDict[tuple[str, str], TokenBucket] = OrderedDict()
        self.stats = {"recorded": 0, "throttled": 0, "refused": 0}

    def burst(self, bound: float) -> float:
        return self.samples * (self.window_ms / 1000.0) * bound

    def bucket(self, tags, bound: float, now_ms: int) -> TokenBucket:
        b = self._buckets.get(tags)
        if b is None:
            b = self._buckets[tags] = TokenBucket(self.burst(bound), now_ms)
            if len(self._buckets) > MAX_SENSORS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(tags)
        return b

    def quota_for(self, principal, client_id, *, strict: bool) -> MutationQuota:
        if not self.enabled:
            return MutationQuota(None, None, None, strict)
        tags = self.metric_tags(user_of(principal), client_id or "")
        return MutationQuota(self, tags, self.quota_limit(tags), strict)

    def statistics(self) -> dict:
        return {**self.stats, "quotas": len(self._quotas), "buckets": len(self._buckets)}


THROTTLED_MESSAGE = "The throttling quota has been exceeded."

# the first version of each API that knows THROTTLING_QUOTA_EXCEEDED (KIP-599)
STRICT_SINCE = {19: 6, 20: 5, 37: 3}


def quota_of_request(ctx) -> MutationQuota:
    """The mutation quota of a CreateTopics / DeleteTopics / CreatePartitions request: strict
    from the versions that know the error. Unbounded where the broker keeps no quotas (the
    controller plane, which answers requests already charged by the forwarding broker)."""
    quotas = getattr(ctx.broker, "quotas", None)
    manager = getattr(quotas, "mutation", None)
    strict = ctx.version >= STRICT_SINCE.get(ctx.api_key, 1 << 15)
    if manager is None:
        return MutationQuota(None, None, None, strict)
    return manager.quota_for(ctx.principal, ctx.client_id, strict=strict)
