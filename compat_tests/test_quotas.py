"""Client quotas on both brokers (issue 15): quota configuration through Kafka's own
`kafka-configs` (AlterClientQuotas / DescribeClientQuotas), producers and consumers above
their byte-rate quota slowed to it, with the throttle time reported to the client; the
request-time quota (librdkafka's statistics, kafka-python's log), the controller mutation
quota (THROTTLING_QUOTA_EXCEEDED for CreateTopics v6+, librdkafka's older version only
throttled) and max.connections.per.ip overrides on accept.

The brokers run with `quota.window.num=2` (one full 1 s window before a rate counts), so a
client exceeds its quota after about one second's worth of bytes instead of ten. Rates are
checked as upper bounds over the bytes sent after that first window (a slow machine only
lowers them), never as elapsed times.
"""
from __future__ import annotations

import json
import logging
import time
import uuid

import pytest

from compat_tests.cli import run_tool
from compat_tests.helpers import create_topic, wait_until

QUOTA = 20_000                 # bytes per second
QUOTA_BROKER = {"quota.window.num": "2", "quota.window.size.seconds": "1"}


@pytest.fixture(autouse=True)
def _dist(kafka_dist):
    """kafka-configs needs the Kafka jars on every target, kbroker included."""


@pytest.fixture(scope="module")
def quota_broker(target, broker_pool):
    """One broker of the target with QUOTA_BROKER for the module's rate tests: each test
    limits its own client id, so they do not see each other's quotas."""
    broker = broker_pool.start_new(target, QUOTA_BROKER)
    yield broker
    broker.stop(timeout=20)


def configs(bootstrap, *args):
    return run_tool("kafka-configs", ["--bootstrap-server", bootstrap, *args])


def described(bootstrap, entity_type, name, ready, what):
    """kafka-configs --describe of one entity, polled until ``ready(stdout)``: an altered
    quota reaches the metadata image the broker describes (and enforces) from a moment
    after the controller committed it (Kafka once answered an empty describe right after
    the alter)."""
    def look():
        out = configs(bootstrap, "--entity-type", entity_type, "--entity-name", name, "--describe")
        out.check()
        return out.stdout if ready(out.stdout) else None
    return wait_until(look, timeout=30, interval=0.2, what=what)


def set_quota(bootstrap, entity_type, name, key, value):
    """Alter one quota and wait until the broker describes it."""
    configs(bootstrap, "--entity-type", entity_type, "--entity-name", name, "--alter",
            "--add-config", f"{key}={value}").check()
    described(bootstrap, entity_type, name, lambda text: f"{key}=" in text,
              f"{key} of {name} in the broker's describe")


def test_quota_configs_round_trip(bootstrap):
    client = f"quota-{uuid.uuid4().hex[:8]}"
    configs(bootstrap, "--entity-type", "clients", "--entity-name", client, "--alter",
            "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048").check()
    text = described(bootstrap, "clients", client, lambda t: "Quota configs" in t,
                     "the client's quotas described")
    assert (f"Quota configs for client-id '{client}' are consumer_byte_rate=2048.0, "
            "producer_byte_rate=1024.0") in text
    configs(bootstrap, "--entity-type", "clients", "--entity-name", client, "--alter",
            "--delete-config", "consumer_byte_rate").check()
    text = described(bootstrap, "clients", client, lambda t: "consumer_byte_rate" not in t,
                     "consumer_byte_rate gone from the describe")
    assert "producer_byte_rate=1024.0" in text
    bad = configs(bootstrap, "--entity-type", "clients", "--entity-name", client, "--alter",
                  "--add-config", "producer_byte_rate=1.5")
    assert bad.returncode != 0
    assert "producer_byte_rate cannot be a fractional value." in bad.stderr
    ip = configs(bootstrap, "--entity-type", "ips", "--entity-name", "127.0.0.9", "--alter",
                 "--add-config", "connection_creation_rate=100")
    ip.check()
    text = described(bootstrap, "ips", "127.0.0.9", lambda t: "connection_creation_rate" in t,
                     "the ip's quota described")
    assert "connection_creation_rate=100.0" in text
    configs(bootstrap, "--entity-type", "ips", "--entity-name", "127.0.0.9", "--alter",
            "--delete-config", "connection_creation_rate").check()


def _set_client_quota(bootstrap, client, key):
    set_quota(bootstrap, "clients", client, key, QUOTA)


def test_confluent_producer_is_slowed_to_its_quota(quota_broker):
    from confluent_kafka import Producer
    broker = quota_broker
    bootstrap = broker.bootstrap_servers
    topic = f"quota-p-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    client = f"qp-{uuid.uuid4().hex[:8]}"
    _set_client_quota(bootstrap, client, "producer_byte_rate")
    throttles: list[int] = []

    def on_stats(raw):
        for b in json.loads(raw).get("brokers", {}).values():
            throttles.append(b.get("throttle", {}).get("max", 0))

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client, "linger.ms": 5,
                  "batch.size": 2048, "statistics.interval.ms": 200, "stats_cb": on_stats,
                  "compression.type": "none"})
    value = b"v" * 1000
    count = 120                                  # 120 KB: six seconds' worth of quota
    acked = []
    first_window_end = None
    start = time.monotonic()
    for i in range(count):
        p.produce(topic, value, on_delivery=lambda e, m: acked.append(e is None))
        p.poll(0)
        if first_window_end is None and i * len(value) >= QUOTA:
            first_window_end = time.monotonic()
        # keep the producer from queueing everything before the first throttle arrives
        while len(p) > 20:
            p.poll(0.05)
    assert p.flush(60) == 0
    elapsed_after_burst = time.monotonic() - (first_window_end or start)
    assert sum(acked) == count
    # about QUOTA bytes/s once the first window is used up: rate as an upper bound
    rate = (count * len(value) - QUOTA) / elapsed_after_burst
    assert rate < QUOTA * 2.5, f"{rate:.0f} B/s with a quota of {QUOTA}"
    assert max(throttles, default=0) > 0, "no throttle time reached the client"


def test_kafka_python_consumer_is_slowed_to_its_quota(quota_broker, caplog):
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, TopicPartition
    broker = quota_broker
    bootstrap = broker.bootstrap_servers
    topic = f"quota-c-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    # one record per batch: a fetch may always answer one whole batch (KIP-74), and a batch
    # above a window's worth of quota would be throttled on every fetch, on both brokers
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": "none",
                  "batch.num.messages": 1, "linger.ms": 0})
    count, value = 100, b"c" * 1000
    for _ in range(count):
        p.produce(topic, value)
    assert p.flush(30) == 0
    client = f"qc-{uuid.uuid4().hex[:8]}"
    _set_client_quota(bootstrap, client, "consumer_byte_rate")
    caplog.set_level(logging.WARNING, logger="kafka")
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=client,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             max_partition_fetch_bytes=4096, fetch_max_bytes=4096)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        got = 0
        start = time.monotonic()
        deadline = start + 60
        while got < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += len(records)
        elapsed = time.monotonic() - start
    finally:
        consumer.close()
    assert got == count                           # throttled, nothing lost
    rate = (count * len(value) - QUOTA) / elapsed
    assert rate < QUOTA * 2.5, f"{rate:.0f} B/s with a quota of {QUOTA}"
    # kafka-python reports the broker's throttle time in its log (it has no metric for it)
    assert any("throttled by broker" in r.getMessage() for r in caplog.records)


def test_request_percentage_throttles_producer_and_admin(quota_broker, caplog):
    """request_percentage (KIP-124): a tiny share of one thread; the client's requests are
    answered (nothing lost) with a throttle time, which librdkafka reports in its statistics
    and kafka-python in its log."""
    from confluent_kafka import Producer
    from kafka import KafkaAdminClient
    broker = quota_broker
    bootstrap = broker.bootstrap_servers
    topic = f"quota-r-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    client = f"qr-{uuid.uuid4().hex[:8]}"
    set_quota(bootstrap, "clients", client, "request_percentage", "0.01")
    throttles: list[int] = []

    def on_stats(raw):
        for b in json.loads(raw).get("brokers", {}).values():
            throttles.append(b.get("throttle", {}).get("max", 0))

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client, "linger.ms": 0,
                  "statistics.interval.ms": 200, "stats_cb": on_stats})
    acked = []
    for i in range(6):
        p.produce(topic, b"r%d" % i, on_delivery=lambda e, m: acked.append(e is None))
        p.flush(30)                                # one request each
    p.poll(0.5)
    assert sum(acked) == 6
    assert max(throttles, default=0) > 0, "no request throttle time reached librdkafka"
    caplog.set_level(logging.WARNING, logger="kafka")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client)
    try:
        admin.list_topics()
    finally:
        admin.close()
    assert any("throttled by broker" in r.getMessage() for r in caplog.records)


def test_controller_mutation_rate_refuses_topics_with_throttling_quota_exceeded(bootstrap, caplog):
    """controller_mutation_rate (KIP-599): the token bucket (burst = rate * 11 windows of 1 s)
    lets one large CreateTopics through; the next topics are refused with
    THROTTLING_QUOTA_EXCEEDED and a throttle time (CreateTopics v6+, kafka-python), while
    librdkafka's older CreateTopics version is throttled without an error."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaAdminClient
    client = f"qm-{uuid.uuid4().hex[:8]}"
    set_quota(bootstrap, "clients", client, "controller_mutation_rate", "1")
    names = [f"quota-m-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    caplog.set_level(logging.WARNING, logger="kafka")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client)
    try:
        big = admin.create_topics({names[0]: {"num_partitions": 12, "replication_factor": 1}},
                                  raise_errors=False)
        assert [t["error_code"] for t in big["topics"]] == [0]
        refused = admin.create_topics({names[1]: {"num_partitions": 1, "replication_factor": 1}},
                                      raise_errors=False)
        assert [t["error_code"] for t in refused["topics"]] == [89]   # THROTTLING_QUOTA_EXCEEDED
    finally:
        admin.close()
    # kafka-python drops throttle_time_ms from the result and logs it
    assert any("CreateTopicsResponse throttled by broker" in r.getMessage() for r in caplog.records)
    # librdkafka asks with CreateTopics v4: permissive, the topic is created
    ck = AdminClient({"bootstrap.servers": bootstrap, "client.id": client})
    for _, f in ck.create_topics([NewTopic(names[2], 1, 1)]).items():
        f.result(30)


def test_max_connections_per_ip_override_closes_the_extra_connection(broker_factory):
    """max.connections.per.ip.overrides: the connection above its IP's limit is closed by the
    broker before it answers anything (Kafka's TooManyConnectionsException), the other is
    served. The clients connect from 127.0.0.2 so the brokers' own loopback connections
    (controller, inter-broker) do not count."""
    import socket
    import struct
    broker = broker_factory(**{"max.connections.per.ip.overrides": "127.0.0.2:1"})
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    # ApiVersions v0, correlation id 7, client id "c"
    frame = struct.pack(">hhih", 18, 0, 7, 1) + b"c"
    frame = struct.pack(">i", len(frame)) + frame

    def connect():
        return socket.create_connection((host, int(port)), timeout=10, source_address=("127.0.0.2", 0))

    def ask(s) -> bytes:
        try:
            s.sendall(frame)
            return s.recv(8)
        except (ConnectionResetError, BrokenPipeError, socket.timeout):
            return b""

    kept = connect()
    try:
        got = ask(kept)
        assert len(got) >= 8 and struct.unpack(">i", got[4:8])[0] == 7
        extra = connect()
        try:
            assert ask(extra) == b""              # closed, not answered
        finally:
            extra.close()
    finally:
        kept.close()
