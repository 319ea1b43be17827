"""The broker's own hot-path counters, read by the metrics endpoint (``kbroker.metrics``).

Kafka keeps its throughput meters in ``BrokerTopicStats`` (per topic and for all topics) and
its per-API request meters in ``RequestMetrics``; these are the same counters in plain
integer form. Rules:

- Updating one is an attribute add on an object found with one dict lookup (per topic per
  request, per request for the API meters): no locks (everything runs on the trio thread),
  no allocation on the hot path after a topic's first request, no per-record work (message
  counts come from the offsets an append assigned).
- Counters only grow; rates are the scraper's business (Prometheus ``rate()``), which is why
  there are no moving averages here. Readers take a snapshot (``list(...)``) before iterating,
  so a scrape never trips over a dict changed by a request meanwhile.
- A topic's counters exist once it saw a successful produce or fetch (names from a request
  for a missing topic never grow the table); the metrics endpoint drops the counters of
  topics no longer in the metadata image, as Kafka removes a deleted topic's metrics.
"""
from __future__ import annotations

from bisect import bisect_left

# Upper bounds (seconds) of the request latency histogram (Prometheus ``le``), then +Inf.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0, 30.0)


# Kafka's ReplicaManager does not count these answers as failed requests: they are part of
# normal operation (the client refreshes its metadata or position and retries).
EXPECTED_PRODUCE_ERRORS = frozenset({3, 6})            # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER
EXPECTED_FETCH_ERRORS = frozenset({1, 3, 6, 74, 75})   # + OFFSET_OUT_OF_RANGE, leader epochs
# ...and counts the bytes of these as rejected: corrupt, too large, bad timestamp, invalid
REJECTED_RECORD_ERRORS = frozenset({2, 10, 18, 32, 87})


class TopicCounters:
    """One topic's meters (Kafka's ``BrokerTopicMetrics`` with a ``topic`` tag)."""

    __slots__ = ("bytes_in", "messages_in", "bytes_out", "bytes_rejected",
                 "produce_requests", "failed_produce_requests",
                 "fetch_requests", "failed_fetch_requests")

    def __init__(self) -> None:
        self.bytes_in = 0                  # BytesInPerSec: record bytes appended by producers
        self.messages_in = 0               # MessagesInPerSec: records appended
        self.bytes_out = 0                 # BytesOutPerSec: record bytes sent to consumers
        self.bytes_rejected = 0            # BytesRejectedPerSec: record bytes refused
        self.produce_requests = 0          # TotalProduceRequestsPerSec (per partition)
        self.failed_produce_requests = 0   # FailedProduceRequestsPerSec
        self.fetch_requests = 0            # TotalFetchRequestsPerSec (per partition)
        self.failed_fetch_requests = 0     # FailedFetchRequestsPerSec


class BrokerTopicStats:
    """Per-topic meters plus the broker-wide ones without a topic; owned by the Broker
    (``broker.topic_stats``), updated by the Produce and Fetch handlers."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.replication_bytes_out = 0     # ReplicationBytesOutPerSec: sent to followers
        self.failed_produce_requests = 0   # also those for topics the broker does not have
        self.failed_fetch_requests = 0

    def topic(self, name: str) -> TopicCounters:
        t = self.topics.get(name)
        if t is None:
            t = self.topics[name] = TopicCounters()
        return t

    def known(self, name: str) -> TopicCounters | None:
        return self.topics.get(name)

    def produce_failed(self, topic: str, error_code: int, size: int) -> None:
        """A partition's produce data was refused with ``error_code`` (not the hot path)."""
        t = self.topics.get(topic)
        if t is not None:
            t.produce_requests += 1
            if error_code in REJECTED_RECORD_ERRORS:
                t.bytes_rejected += size
        if error_code not in EXPECTED_PRODUCE_ERRORS:
            self.failed_produce_requests += 1
            if t is not None:
                t.failed_produce_requests += 1

    def fetch_failed(self, topic: str, error_code: int) -> None:
        t = self.topics.get(topic)
        if t is not None:
            t.fetch_requests += 1
        if error_code not in EXPECTED_FETCH_ERRORS:
            self.failed_fetch_requests += 1
            if t is not None:
                t.failed_fetch_requests += 1

    def retain(self, names) -> None:
        """Drop the counters of topics not in ``names`` (deleted topics)."""
        for name in [n for n in self.topics if n not in names]:
            del self.topics[name]

    def totals(self) -> TopicCounters:
        """The all-topics meters (Kafka's untagged ``BrokerTopicMetrics``)."""
        out = TopicCounters()
        for t in list(self.topics.values()):
            for k in TopicCounters.__slots__:
                setattr(out, k, getattr(out, k) + getattr(t, k))
        out.failed_produce_requests = max(out.failed_produce_requests, self.failed_produce_requests)
        out.failed_fetch_requests = max(out.failed_fetch_requests, self.failed_fetch_requests)
        return out


class ApiStats:
    """One API's request meters (Kafka's ``RequestMetrics`` with a ``request`` tag):
    requests per version, total time as a histogram, request bytes, closed connections."""

    __slots__ = ("name", "by_version", "seconds_sum", "buckets", "request_bytes", "errors")

    def __init__(self, name: str) -> None:
        self.name = name
        self.by_version: dict[int, int] = {}
        self.seconds_sum = 0.0
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)   # non-cumulative; last is +Inf
        self.request_bytes = 0
        self.errors = 0          # requests that closed the connection (handler failure...)

    @property
    def count(self) -> int:
        return sum(self.buckets)


class RequestStats:
    """Every API's meters, indexed by API key; owned by the Server (``server.request_stats``),
    updated once per request by the connection."""

    def __init__(self, names: dict[int, str] | None = None) -> None:
        self._names = dict(names or {})
        self.by_key: dict[int, ApiStats] = {}

    def _add(self, api_key: int) -> ApiStats:
        s = self.by_key[api_key] = ApiStats(self._names.get(api_key, f"ApiKey{api_key}"))
        return s

    def observe(self, api_key: int, version: int, seconds: float, size: int, ok: bool) -> None:
        s = self.by_key.get(api_key) or self._add(api_key)
        bv = s.by_version
        bv[version] = bv.get(version, 0) + 1
        s.seconds_sum += seconds
        s.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        s.request_bytes += size
        if not ok:
            s.errors += 1

    def observe_many(self, api_key: int, version: int, count: int, seconds_each: float,
                     size: int) -> None:
        """``count`` requests of one version that each took ``seconds_each`` (a run's
        share), ``size`` their bytes together: what as many :meth:`observe` calls count."""
        s = self.by_key.get(api_key) or self._add(api_key)
        bv = s.by_version
        bv[version] = bv.get(version, 0) + count
        s.seconds_sum += seconds_each * count
        s.buckets[bisect_left(LATENCY_BUCKETS, seconds_each)] += count
        s.request_bytes += size
