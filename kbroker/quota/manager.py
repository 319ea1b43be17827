"""Which client quota applies, the rates measured against it, and the throttle times.

Kafka's ``ClientQuotaManager`` with its default quota callback, one manager per quota key
(``producer_byte_rate`` for Produce request bytes, ``consumer_byte_rate`` for Fetch response
bytes). The quota of a (user, client-id) is the first defined of (Kafka's precedence):

1. user + client-id        2. user + default client-id   3. user
4. default user + client-id  5. default user + default client-id  6. default user
7. client-id               8. default client-id

The level found decides the *tags* the rate is kept under — (user, client-id) for levels 1,
2, 4, 5; (user, "") for 3 and 6, so all of that user's clients share one rate; ("",
client-id) for 7 and 8 — exactly as Kafka's ``quotaMetricTags``. With no quota for the key,
nothing is recorded (no cost on the hot path). The throttle time is Kafka's (``rate``);
the connection layer reports it in ``throttle_time_ms`` and mutes the connection for that
long after the answer (KIP-219).

User names are the principal's name (``ANONYMOUS`` on PLAINTEXT listeners).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Mapping

from .rate import SampledRate, throttle_time_ms

_ABSENT = "\x00absent"           # the entity has no such part (a None name is the default)
CLIENT_ID_QUOTAS, USER_QUOTAS, USER_CLIENT_ID_QUOTAS = 1, 2, 4
MAX_SENSORS = 10_000


def user_of(principal: str | None) -> str:
    if not principal:
        return "ANONYMOUS"
    kind, sep, name = principal.partition(":")
    return name if sep else principal


class ClientQuotaManager:
    """Rates and throttle times for one quota key; ``update`` on every metadata image."""

    def __init__(self, key: str, samples: int, window_ms: int, clock_ms: Callable[[], int]):
        self.key = key
        self.samples = samples
        self.window_ms = window_ms
        self.clock_ms = clock_ms
        self._quotas: dict[tuple[str | None, str | None], float] = {}
        self._types = 0
        self._sensors: OrderedDict[tuple[str, str], SampledRate] = OrderedDict()
        self._source = None
        self.stats = {"recorded": 0, "throttled": 0, "throttle_ms": 0}

    @property
    def enabled(self) -> bool:
        return bool(self._quotas)

    def update(self, client_quotas: Mapping) -> None:
        if client_quotas is self._source:
            return
        self._source = client_quotas
        quotas, types = {}, 0
        for entity, values in client_quotas.items():
            if self.key not in values:
                continue
            parts = dict(entity)
            if "ip" in parts:
                continue
            user = parts.get("user", _ABSENT)
            client = parts.get("client-id", _ABSENT)
            quotas[(user, client)] = values[self.key]
            if user is not _ABSENT and client is not _ABSENT:
                types |= USER_CLIENT_ID_QUOTAS
            elif user is not _ABSENT:
                types |= USER_QUOTAS
            else:
                types |= CLIENT_ID_QUOTAS
        self._quotas, self._types = quotas, types

    # ------------------------------------------------------------------ lookup
    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        t = self._types
        if t in (0, CLIENT_ID_QUOTAS):
            return "", client_id
        if t == USER_QUOTAS:
            return user, ""
        if t == USER_CLIENT_ID_QUOTAS:
            return user, client_id
        q = self._quotas
        for entity, tags in (((user, client_id), (user, client_id)),
                             ((user, None), (user, client_id)),
                             ((user, _ABSENT), (user, "")),
                             ((None, client_id), (user, client_id)),
                             ((None, None), (user, client_id)),
                             ((None, _ABSENT), (user, ""))):
            if entity in q:
                return tags
        return "", client_id

    def quota_limit(self, tags: tuple[str, str]) -> float | None:
        user, client = tags
        q = self._quotas
        if user and client:
            order = ((user, client), (user, None), (None, client), (None, None))
        elif user:
            order = ((user, _ABSENT), (None, _ABSENT))
        elif client:
            order = ((_ABSENT, client), (_ABSENT, None))
        else:
            return None
        for entity in order:
            if entity in q:
                return q[entity]
        return None

    def _sensor(self, tags) -> SampledRate:
        s = self._sensors.get(tags)
        if s is None:
            s = self._sensors[tags] = SampledRate(self.samples, self.window_ms)
            if len(self._sensors) > MAX_SENSORS:
                self._sensors.popitem(last=False)
        else:
            self._sensors.move_to_end(tags)
        return s

    # ------------------------------------------------------------------ recording
    def record(self, principal: str | None, client_id: str | None, value: float) -> int:
        """Record ``value`` for this client; the throttle time in ms (0: within quota)."""
        if not self._quotas:
            return 0
        tags = self.metric_tags(user_of(principal), client_id or "")
        bound = self.quota_limit(tags)
        sensor = self._sensor(tags)
        now = self.clock_ms()
        sensor.record(value, now)
        self.stats["recorded"] += 1
        if bound is None:
            return 0
        rate = sensor.measure(now)
        if rate <= bound:
            return 0
        throttle = self._throttle_time(rate, bound, sensor.window_size_ms(now))
        self.stats["throttled"] += 1
        self.stats["throttle_ms"] += throttle
        return throttle

    def _throttle_time(self, rate: float, bound: float, window_ms: int) -> int:
        return throttle_time_ms(rate, bound, window_ms)

    def unrecord(self, principal: str | None, client_id: str | None, value: float) -> None:
        """Take back a recorded value (a throttled fetch answers no data, as Kafka)."""
        if not self._quotas:
            return
        tags = self.metric_tags(user_of(principal), client_id or "")
        self._sensor(tags).record(-value, self.clock_ms())

    def statistics(self) -> dict:
        return {**self.stats, "quotas": len(self._quotas), "sensors": len(self._sensors)}


class RequestQuotaManager(ClientQuotaManager):
    """``request_percentage`` (KIP-124, Kafka's ``ClientRequestQuotaManager``): the time the
    broker spends handling a client's requests, as a percentage of one thread over the
    quota windows. A request's time is recorded as ``nanos * 100 / 1e9`` (a request that took
    the whole of one second counts 100); the throttle time is Kafka's formula bounded by one
    quota window (``quota.window.size.seconds``). Exempt requests (follower fetches,
    WriteTxnMarkers, the inter-broker APIs) are added to ``exempt_percent`` only."""

    def __init__(self, samples: int, window_ms: int, clock_ms: Callable[[], int]):
        super().__init__("request_percentage", samples, window_ms, clock_ms)
        self.max_throttle_ms = window_ms
        self.exempt = SampledRate(samples, window_ms)

    def _throttle_time(self, rate: float, bound: float, window_ms: int) -> int:
        return min(throttle_time_ms(rate, bound, window_ms), self.max_throttle_ms)

    def record_time(self, principal, client_id, nanos: int) -> int:
        return self.record(principal, client_id, nanos * NANOS_TO_PERCENT)

    def record_exempt(self, nanos: int) -> None:
        self.exempt.record(nanos * NANOS_TO_PERCENT, self.clock_ms())

    def statistics(self) -> dict:
        now = self.clock_ms()
        return {**super().statistics(), "exempt_percent": self.exempt.measure(now)}


NANOS_TO_PERCENT = 100.0 / 1e9


def records_size(records) -> int:
    """Bytes of a fetch answer's records: bytes-likes, ``FileRegion``s or lists of them."""
    if records is None:
        return 0
    length = getattr(records, "length", None)
    if length is not None:
        return length
    if isinstance(records, (list, tuple)):
        return sum(records_size(r) for r in records)
    return len(records)


def throttle_fetch(manager: ClientQuotaManager, principal, client_id, topics) -> int:
    """Consumer fetch quota (Kafka's ``handleFetchRequest``): record the answer's record bytes;
    when that breaks the quota the answer carries no records (the value is taken back, the
    positions are unchanged, errors and offsets are still reported) and the throttle time."""
    size = sum(records_size(p.records) for t in topics for p in t.partitions)
    throttle = manager.record(principal, client_id, size)
    if throttle:
        manager.unrecord(principal, client_id, size)
        drop_records(topics)
    return throttle


def drop_records(topics) -> None:
    """A throttled fetch answer carries no records (errors and offsets stay)."""
    for t in topics:
        for p in t.partitions:
            p.records = b""
