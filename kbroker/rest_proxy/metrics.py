"""The REST gateway's metrics on the broker's ``/metrics`` (``kbroker.metrics.collect`` adds
them when the gateway runs), as the schema registry has its own: requests by endpoint (the
route's method and path template, ``POST /topics/{topic}``; ``other`` for a path no route
knows) and status, their latency, and the consumer instances, under
``kbroker_rest_proxy_*`` names (Confluent's proxy exports JMX names of its own; nothing
standard to follow).

``RequestMeter`` is what ``app.dispatch`` updates per request (plain integers; the time
comes from trio's clock); ``families`` reads it and the gateway.
"""
from __future__ import annotations

from bisect import bisect_left

from kbroker.node.stats import LATENCY_BUCKETS


class RequestMeter:
    def __init__(self) -> None:
        self.by_endpoint: dict[tuple[str, int], int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.seconds = 0.0

    def record(self, endpoint: str, status: int, seconds: float) -> None:
        key = (endpoint, status)
        self.by_endpoint[key] = self.by_endpoint.get(key, 0) + 1
        self.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.seconds += seconds


def families(gateway) -> list:
    from kbroker.metrics.exposition import Family
    meter = gateway.meter
    reqs = Family("kbroker_rest_proxy_requests_total", "counter",
                  "REST gateway HTTP requests, per endpoint and status.")
    for (endpoint, status), n in sorted(meter.by_endpoint.items()):
        reqs.add(n, endpoint=endpoint, status=str(status))
    latency = Family("kbroker_rest_proxy_request_seconds", "histogram",
                     "Time to answer a REST gateway request.")
    latency.add_histogram(LATENCY_BUCKETS, list(meter.buckets), meter.seconds)
    instances = Family("kbroker_rest_proxy_consumer_instances", "gauge",
                       "Consumer instances of the v2 API on this node.")
    instances.add(len(gateway.consumers.instances))
    subscribed = Family("kbroker_rest_proxy_consumer_instances_subscribed", "gauge",
                        "Consumer instances that are members of their group (subscribed).")
    subscribed.add(sum(1 for i in gateway.consumers.instances.values() if i.subscribed))
    return [reqs, latency, instances, subscribed]
