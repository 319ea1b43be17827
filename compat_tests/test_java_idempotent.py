"""The Java producer's defaults are idempotent (kafka-clients ≥ 3.0: enable.idempotence=true,
acks=all): Kafka's own ProducerPerformance and VerifiableProducer, from the pinned jars, must
work unchanged, and every acknowledged record is stored exactly once."""

from __future__ import annotations

import json

import pytest

from compat_tests.cli import run_tool

CLIENT = "kafka-cli"


@pytest.fixture(autouse=True)
def _dist(kafka_dist):
    """The tools need the Kafka jars on every target, kbroker included."""


def create(bootstrap, topic, partitions=1):
    run_tool("kafka-topics", ["--bootstrap-server", bootstrap, "--create", "--topic", topic,
                              "--partitions", str(partitions), "--replication-factor", "1"]).check()


def end_offsets(bootstrap, topic) -> dict[int, int]:
    out = run_tool("kafka-get-offsets", ["--bootstrap-server", bootstrap, "--topic", topic,
                                         "--time", "latest"]).check()
    found = {}
    for line in out.lines:
        _, part, off = line.rsplit(":", 2)
        found[int(part)] = int(off)
    return found


def test_producer_performance_with_default_idempotence(bootstrap, topic_name):
    create(bootstrap, topic_name, partitions=3)
    n = 20_000
    result = run_tool("org.apache.kafka.tools.ProducerPerformance", [
        "--topic", topic_name, "--num-records", str(n), "--record-size", "100",
        "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
        "linger.ms=5", "--print-metrics"], timeout=120).check()
    assert f"{n} records sent" in result.stdout, result.stdout
    metrics = result.stdout
    # the producer really ran idempotent (a producer id was assigned), with no errors
    assert "record-error-total" in metrics
    for line in metrics.splitlines():
        if "producer-metrics:record-error-total" in line:
            assert float(line.rsplit(":", 1)[1].strip()) == 0.0, line
    assert sum(end_offsets(bootstrap, topic_name).values()) == n


def test_verifiable_producer_acks_every_record_once(bootstrap, topic_name):
    create(bootstrap, topic_name)
    n = 2_000
    result = run_tool("kafka-verifiable-producer", [
        "--bootstrap-server", bootstrap, "--topic", topic_name, "--max-messages", str(n),
        "--throughput", "-1", "--acks", "-1",
        "--producer.config", "/dev/null"], timeout=120).check()
    events = [json.loads(line) for line in result.lines if line.startswith("{")]
    names = [e["name"] for e in events]
    assert names.count("producer_send_success") == n, names[-5:]
    assert "producer_send_error" not in names
    offsets = sorted(e["offset"] for e in events if e["name"] == "producer_send_success")
    assert offsets == list(range(n))
    assert end_offsets(bootstrap, topic_name) == {0: n}
