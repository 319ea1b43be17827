"""The latency rows' client (``rdkafka_load latency``, benchmarks/harness/latency.py) end to end.

A guard against the harness rotting, not a benchmark: the client runs for a second at a low
rate against the session's kbroker, once as the three-node acks=all rows run it (5 requests
in flight) and once with one request in flight, and the test checks that every record was
received and that the client counted its Produce requests: at most one per record, at least
one. No time is asserted.
"""
from __future__ import annotations

import uuid

import pytest

from benchmarks.harness.latency import ACKS_ALL_IN_FLIGHT
from benchmarks.harness.run import rdkafka


@pytest.mark.parametrize("in_flight", [ACKS_ALL_IN_FLIGHT, 1])
def test_latency_client_receives_every_record_and_counts_its_requests(kbroker, in_flight):
    topic = kbroker.create_topic(f"latency-row-{uuid.uuid4().hex[:8]}", partitions=1)
    out = rdkafka("latency", kbroker.bootstrap_servers, topic, "--rate", "200", "--seconds", "1",
                  "--size", "1024", "--acks", "all", "--max-in-flight", str(in_flight), timeout=120)
    assert out["records"] == out["expected"] == 200
    assert 1 <= out["produce_requests"] <= out["records"]
    assert out["records_per_request"] == out["expected"] / out["produce_requests"]
    assert out["p50_ms"] <= out["p99_ms"] <= out["max_ms"]
