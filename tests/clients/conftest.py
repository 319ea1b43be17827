"""Client integration fixtures: a real ``python -m kbroker serve`` subprocess per test module
(tests/support/broker_proc.py) and helpers to make uniquely named topics.

Each module shares one broker; tests use unique topic names so they do not see each other.
Tests that need a fresh or differently configured broker start their own.
"""
from __future__ import annotations

import itertools
import time
import uuid

import pytest

from tests.support.broker_proc import BrokerProcess, free_port
from tests.support.prometheus_text import scrape, value

_counter = itertools.count()


@pytest.fixture(scope="module")
def kbroker(tmp_path_factory):
    """One broker process for the whole module, with its metrics at ``metrics_url``."""
    http_port = free_port()
    proc = BrokerProcess(tmp_path_factory.mktemp("kbroker"),
                         overrides={"group.initial.rebalance.delay.ms": "0"},
                         extra_args=["--http-listen", f"127.0.0.1:{http_port}"])
    proc.metrics_url = f"http://127.0.0.1:{http_port}/metrics"
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def bootstrap(kbroker) -> str:
    return kbroker.bootstrap


@pytest.fixture
def topic_name(request) -> str:
    """A topic name unique to the test (and the run)."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:80]
    return f"{base}-{next(_counter)}-{uuid.uuid4().hex[:6]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, configs: dict | None = None) -> None:
    """Create a topic with kafka-python's admin client and wait until it is visible."""
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kbroker-tests",
                             request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=dict(configs or {}))])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            meta = admin.describe_topics([name])
            if meta and meta[0].get("error_code", 0) == 0 and len(meta[0]["partitions"]) == partitions:
                return
            time.sleep(0.05)
        raise AssertionError(f"topic {name} did not appear")
    finally:
        admin.close()


def wait_parked(kbroker, topic: str, partition: int = 0, timeout: float = 30.0,
                poll=None) -> None:
    """Wait until a request is parked on ``topic``'s ``partition`` (the broker's
    ``kbroker_partition_parked_requests``): a consumer's long-poll fetch waits there.
    ``poll()`` is called between looks, for a client that sends its fetches from its poll."""
    deadline = time.monotonic() + timeout
    while value(scrape(kbroker.metrics_url), "kbroker_partition_parked_requests",
                topic=topic, partition=partition) < 1:
        assert time.monotonic() < deadline, f"no request parked on {topic}-{partition} in {timeout} s"
        if poll is not None:
            poll()
        else:
            time.sleep(0.05)


@pytest.fixture
def make_topic(bootstrap, topic_name):
    """``make_topic(partitions=1, configs=None, suffix="")`` → name of a new topic."""
    def make(partitions: int = 1, configs: dict | None = None, suffix: str = "") -> str:
        name = topic_name + suffix
        create_topic(bootstrap, name, partitions, configs)
        return name
    return make


PAYLOAD_CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
