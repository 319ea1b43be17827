"""The registry's metrics on the broker's ``/metrics`` (``kbroker.metrics.collect`` adds
them when the registry runs): requests by method and status, their latency, and the state
(subjects, versions, schemas, the highest id), under ``kbroker_schema_registry_*`` names
(Confluent's registry exports its own JMX names; nothing standard to follow).

``RequestMeter`` is what the router updates per request (plain integers; the time comes
from trio's clock, so a test's MockClock drives it); ``families`` reads it and the service.
"""
from __future__ import annotations

from bisect import bisect_left

from kbroker.node.stats import LATENCY_BUCKETS


class RequestMeter:
    def __init__(self) -> None:
        self.by_status: dict[tuple[str, int], int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.seconds = 0.0

    def record(self, method: str, status: int, seconds: float) -> None:
        key = (method, status)
        self.by_status[key] = self.by_status.get(key, 0) + 1
        self.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.seconds += seconds


def families(registry) -> list:
    from kbroker.metrics.exposition import Family
    meter = registry.routes.meter if registry.routes is not None else None
    if meter is None:
        return []
    reqs = Family("kbroker_schema_registry_requests_total", "counter",
                  "Schema registry HTTP requests, per method and status.")
    for (method, status), n in sorted(meter.by_status.items()):
        reqs.add(n, method=method, status=str(status))
    latency = Family("kbroker_schema_registry_request_seconds", "histogram",
                     "Time to answer a schema registry request.")
    latency.add_histogram(LATENCY_BUCKETS, list(meter.buckets), meter.seconds)
    stats = registry.service.statistics()
    out = [reqs, latency]
    for key, kind, text in (
            ("subjects", "gauge", "Subjects with at least one live version."),
            ("versions", "gauge", "Versions held, soft-deleted ones included."),
            ("schemas", "gauge", "Distinct schemas (ids) served."),
            ("max_id", "gauge", "The highest schema id handed out."),
            ("registered", "counter", "Successful registrations on this node."),
            ("write_retries", "counter", "Writes decided again after losing a race to another node."),
            ("refused", "counter", "_schemas records refused by the replay (lost races)."),
            ("records", "counter", "_schemas records replayed on this node.")):
        name = f"kbroker_schema_registry_{key}" + ("_total" if kind == "counter" else "")
        out.append(Family(name, kind, text).add(stats.get(key, 0)))
    auth = registry.routes.auth
    if auth is not None:
        out.append(Family("kbroker_schema_registry_authentication_failures_total", "counter",
                          "Requests refused for missing or wrong credentials.").add(auth.failures))
    return out
