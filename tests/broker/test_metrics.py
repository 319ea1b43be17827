"""``/metrics``, ``/health`` and ``/ready`` of a real ``kbroker serve --http-listen`` under
real clients (issue 20): the counters move by exactly what was sent, lag follows commits,
readiness follows the broker's state."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_proc import REPO_ROOT, BrokerProcess, free_port
from tests.support.prometheus_text import http_get, parse, scrape, total, value

TOPIC = "metered"


@pytest.fixture
def metered_broker(tmp_path):
    http_port = free_port()
    proc = BrokerProcess(tmp_path / "data", overrides={"group.initial.rebalance.delay.ms": "0"},
                         extra_args=["--http-listen", f"127.0.0.1:{http_port}"])
    proc.start()
    proc.metrics_url = f"http://127.0.0.1:{http_port}/metrics"
    proc.http = f"http://127.0.0.1:{http_port}"
    try:
        yield proc
    finally:
        if proc.running:
            proc.stop()


def disk_bytes(data_dir, topic: str) -> int:
    """Size of the topic's segment files, read from the file system (independent of kbroker)."""
    n = 0
    for d in os.listdir(data_dir):
        if d.rpartition("-")[0] == topic:
            n += sum(os.path.getsize(os.path.join(data_dir, d, f))
                     for f in os.listdir(os.path.join(data_dir, d)) if f.endswith(".log"))
    return n


def produce(bootstrap: str, count: int, start: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": "none"})
    for i in range(start, start + count):
        p.produce(TOPIC, key=f"k{i % 7}".encode(), value=b"v" * (i % 50) + str(i).encode(),
                  headers=[("h", b"1")])
    assert p.flush(30) == 0


def test_counters_move_by_exactly_what_was_sent(metered_broker):
    boot = metered_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    for f in admin.create_topics([NewTopic(TOPIC, 3, 1, config={"max.message.bytes": "100000"})]).values():
        f.result(30)
    before = scrape(metered_broker.metrics_url)
    assert value(before, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 0

    produce(boot, 300, 0)
    after = scrape(metered_broker.metrics_url)
    on_disk = disk_bytes(metered_broker.data_dir, TOPIC)
    assert on_disk > 300
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 300
    assert value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC) == on_disk
    assert total(after, "kafka_log_log_size", topic=TOPIC) == on_disk
    assert total(after, "kafka_log_log_logendoffset", topic=TOPIC) == 300
    assert value(after, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic=TOPIC) == 0
    produces = total(after, "kafka_network_requestmetrics_requests_total", request="Produce")
    assert produces >= 1
    assert value(after, "kafka_network_requestmetrics_totaltime_seconds_count", request="Produce") == produces
    assert value(after, "kafka_network_requestmetrics_totaltime_seconds_bucket",
                 request="Produce", le="+Inf") == produces
    assert value(after, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(after, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(after, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0

    c = Consumer({"bootstrap.servers": boot, "group.id": "metered-group",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([TOPIC])
    got = 0
    deadline = time.monotonic() + 60
    while got < 300 and time.monotonic() < deadline:
        msg = c.poll(1.0)
        if msg is not None and msg.error() is None:
            got += 1
    assert got == 300
    during = scrape(metered_broker.metrics_url)
    assert value(during, "kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT") >= 1
    c.commit(asynchronous=False)
    c.close()

    consumed = scrape(metered_broker.metrics_url)
    assert value(consumed, "kafka_server_brokertopicmetrics_bytesout_total", topic=TOPIC) >= on_disk
    assert value(consumed, "kafka_server_brokertopicmetrics_totalfetchrequests_total", topic=TOPIC) >= 3
    assert total(consumed, "kafka_consumergroup_current_offset", consumergroup="metered-group") == 300
    assert value(consumed, "kafka_consumergroup_lag_sum", consumergroup="metered-group") == 0
    assert value(consumed, "kafka_coordinator_group_groupmetadatamanager_numgroups") == 1
    assert total(consumed, "kafka_network_requestmetrics_requests_total", request="OffsetCommit") >= 1

    produce(boot, 50, 300)
    later = scrape(metered_broker.metrics_url)
    assert value(later, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 350
    assert value(later, "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC) == \
        disk_bytes(metered_broker.data_dir, TOPIC)
    assert value(later, "kafka_consumergroup_lag_sum", consumergroup="metered-group") == 50
    assert total(later, "kafka_consumergroup_lag", consumergroup="metered-group", topic=TOPIC) == 50

    # a batch over the topic's max.message.bytes: refused, its bytes counted as rejected
    p = Producer({"bootstrap.servers": boot, "message.max.bytes": 1_000_000, "retries": 0})
    errors = []
    p.produce(TOPIC, b"z" * 200_000, partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(30)
    assert errors and errors[0] is not None and errors[0].name() == "MSG_SIZE_TOO_LARGE"
    refused = scrape(metered_broker.metrics_url)
    assert value(refused, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic=TOPIC) == 1
    assert value(refused, "kafka_server_brokertopicmetrics_bytesrejected_total", topic=TOPIC) > 200_000
    assert value(refused, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 350

    # a deleted topic's meters go away with it, as in Kafka
    for f in admin.delete_topics([TOPIC]).values():
        f.result(30)
    meter = ("kafka_server_brokertopicmetrics_bytesin_total", frozenset({("topic", TOPIC)}))
    gone = _wait_metrics(metered_broker.metrics_url, lambda samples: meter not in samples, 30)
    assert meter not in gone, "the deleted topic's meters stayed"


PARKED = "kbroker_partition_parked_requests"


def test_a_parked_fetch_is_counted_on_its_partition_while_it_waits(metered_broker):
    """A consumer's long-poll fetch of an empty partition waits on it (one parked request
    there, none on the other partition); a record answers it and the consumer's next fetch
    waits again; once the consumer is gone and its last fetch expired (3 s: a parked fetch
    outlives its connection, as Kafka's DelayedFetch does), nothing is parked."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition
    boot, url = metered_broker.bootstrap, metered_broker.metrics_url
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic("parked", 2, 1)])["parked"].result(30)
    assert value(scrape(url), PARKED, topic="parked", partition=0) == 0
    c = Consumer({"bootstrap.servers": boot, "group.id": "parked-probe",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 3000})
    try:
        c.assign([TopicPartition("parked", 0, OFFSET_BEGINNING)])
        waiting = _wait_metrics(url, lambda s: value(s, PARKED, topic="parked", partition=0) >= 1)
        assert value(waiting, PARKED, topic="parked", partition=0) == 1
        assert value(waiting, PARKED, topic="parked", partition=1) == 0
        p = Producer({"bootstrap.servers": boot})
        p.produce("parked", b"x", partition=0)
        assert p.flush(30) == 0
        got, deadline = None, time.monotonic() + 60
        while got is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got = m.value()
        assert got == b"x"
        again = _wait_metrics(url, lambda s: value(s, PARKED, topic="parked", partition=0) >= 1)
        assert value(again, PARKED, topic="parked", partition=0) == 1
    finally:
        c.close()
    gone = _wait_metrics(url, lambda s: value(s, PARKED, topic="parked", partition=0) == 0, 30)
    assert value(gone, PARKED, topic="parked", partition=0) == 0, "a fetch stayed parked"


def test_debug_log_level_logs_every_request(tmp_path):
    proc = BrokerProcess(tmp_path / "data", extra_args=["--log-level", "DEBUG"])
    proc.start()
    try:
        admin = AdminClient({"bootstrap.servers": proc.bootstrap, "client.id": "debug-me"})
        admin.list_topics(timeout=30)
    finally:
        proc.stop()
    lines = [l for l in proc.log_text().splitlines() if "kbroker.request" in l]
    assert any("Metadata v" in l and "'debug-me'" in l and "127.0.0.1:" in l and " ms" in l
               for l in lines), lines[:5]
    quiet = BrokerProcess(tmp_path / "quiet")
    quiet.start()
    try:
        AdminClient({"bootstrap.servers": quiet.bootstrap}).list_topics(timeout=30)
    finally:
        quiet.stop()
    assert "kbroker.request" not in quiet.log_text()


def _node(node_id: int, ports: dict, data_root, cluster_id: str, http_port: int) -> list[str]:
    client, controller = ports[node_id]
    overrides = {
        "node.id": str(node_id), "process.roles": "broker,controller",
        "listeners": f"PLAINTEXT://127.0.0.1:{client},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{client}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": ",".join(f"{i}@127.0.0.1:{c}" for i, (_, c) in ports.items()),
        "log.dirs": str(data_root / f"node-{node_id}"), "cluster.id": cluster_id,
        "kbroker.http.listen": f"127.0.0.1:{http_port}",
    }
    cmd = [sys.executable, "-m", "kbroker", "serve"]
    for k, v in overrides.items():
        cmd += ["--override", f"{k}={v}"]
    return cmd


def test_ready_only_once_the_broker_serves(tmp_path):
    """Node 1 of a two-voter quorum cannot elect a leader alone: it is alive (``/health``)
    but not ready, and its client port serves nothing. Once node 2 starts, the quorum forms,
    both register, and ``/ready`` turns 200 — and then the broker answers clients."""
    from kbroker.config.broker import new_cluster_id
    ports = {1: (free_port(), free_port()), 2: (free_port(), free_port())}
    http = {1: free_port(), 2: free_port()}
    cid = new_cluster_id()
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = []
    try:
        with open(tmp_path / "node-1.log", "wb") as log:
            procs.append(subprocess.Popen(_node(1, ports, tmp_path, cid, http[1]), stdout=log,
                                          stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT))
        base = f"http://127.0.0.1:{http[1]}"
        deadline = time.monotonic() + 30
        while True:
            try:
                status, _ = http_get(base + "/health", timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "node-1.log").read_text()
                assert procs[0].poll() is None, (tmp_path / "node-1.log").read_text()
                time.sleep(0.05)
        assert status == 200
        for _ in range(5):      # still no quorum: never ready
            status, body = http_get(base + "/ready")
            assert (status, body) == (503, "not ready: starting\n")
            time.sleep(0.2)
        samples = parse(http_get(base + "/metrics")[1])
        assert value(samples, "kbroker_ready") == 0
        assert "kbroker ready:" not in (tmp_path / "node-1.log").read_text()

        with open(tmp_path / "node-2.log", "wb") as log:
            procs.append(subprocess.Popen(_node(2, ports, tmp_path, cid, http[2]), stdout=log,
                                          stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT))
        deadline = time.monotonic() + 60
        while http_get(base + "/ready")[0] != 200:
            assert time.monotonic() < deadline, (tmp_path / "node-1.log").read_text()
            time.sleep(0.05)
        # ready means serving: the client port answers metadata naming both brokers
        md = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports[1][0]}"}).list_topics(timeout=30)
        assert set(md.brokers) >= {1}
        assert "kbroker ready:" in (tmp_path / "node-1.log").read_text()
        # shutting down: not ready any more while still draining
        procs[0].terminate()
        assert procs[0].wait(30) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def _wait_metrics(url: str, ok, timeout: float = 60.0):
    """Scrape until ``ok(samples)`` holds; the last scrape."""
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(url)
        if ok(samples) or time.monotonic() > deadline:
            return samples
        time.sleep(0.2)


GC = "kafka_server_group_coordinator_metrics_"


def test_group_coordinator_metrics_count_groups_by_type_and_state(metered_broker):
    """Kafka 4.4's GroupCoordinatorMetrics: a classic group left Empty and a consumer group
    (KIP-848) Stable are counted by protocol and state; commits, a classic rebalance, a
    consumer group epoch bump and an OffsetDelete move their counters."""
    import threading

    from tests.support.kip848 import Member

    boot, url = metered_broker.bootstrap, metered_broker.metrics_url
    admin = AdminClient({"bootstrap.servers": boot})
    for f in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        f.result(30)
    produce(boot, 20, 0)
    start = scrape(url)
    assert (GC + "group_count", frozenset({("protocol", "classic")})) in start
    assert value(start, GC + "offset_commit_count") == 0
    assert value(start, GC + "group_completed_rebalance_count") == 0

    # a classic group: joins (one completed rebalance), commits both partitions, leaves: Empty
    c = Consumer({"bootstrap.servers": boot, "group.id": "classic-g", "group.protocol": "classic",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([TOPIC])
    got, deadline = 0, time.monotonic() + 60
    while got < 20 and time.monotonic() < deadline:
        msg = c.poll(1.0)
        if msg is not None and msg.error() is None:
            got += 1
    assert got == 20
    c.commit(asynchronous=False)
    c.close()

    # a consumer-protocol group, running: Stable once its member reconciled
    seen, lock = [], threading.Lock()
    member = Member(boot, "modern-g", TOPIC, seen, lock)
    try:
        samples = _wait_metrics(url, lambda s: value(s, GC + "consumer_group_count", state="Stable") == 1
                                and value(s, GC + "classic_group_count", state="Empty") == 1
                                and value(s, GC + "num_partitions", state="active") == 50)
        assert value(samples, GC + "group_count", protocol="classic") == 1
        assert value(samples, GC + "group_count", protocol="consumer") == 1
        assert value(samples, GC + "group_count", protocol="share") == 0
        assert value(samples, GC + "group_count", protocol="streams") == 0
        assert value(samples, GC + "classic_group_count", state="Empty") == 1
        assert value(samples, GC + "classic_group_count", state="Stable") == 0
        assert value(samples, GC + "consumer_group_count", state="Stable") == 1
        assert value(samples, GC + "consumer_group_count", state="Empty") == 0
        assert (GC + "streams_group_count", frozenset({("state", "NotReady")})) in samples
        # Kafka 4's Yammer NumGroups counts classic groups only
        assert value(samples, "kafka_coordinator_group_groupmetadatamanager_numgroups") == 1
        assert value(samples, "kafka_coordinator_group_groupmetadatamanager_numgroupsempty") == 1
        assert value(samples, GC + "offset_commit_count") >= 2          # both partitions
        assert value(samples, GC + "group_completed_rebalance_count") >= 1
        assert value(samples, GC + "consumer_group_rebalance_count") >= 1
        assert value(samples, GC + "num_partitions", state="active") == 50
        deadline = time.monotonic() + 60
        while len(seen) < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(seen) == 20
        commits = value(samples, GC + "offset_commit_count")
    finally:
        member.close()

    # the member's close committed what it had read: the commit count moved again
    after = _wait_metrics(url, lambda s: value(s, GC + "consumer_group_count", state="Empty") == 1)
    assert value(after, GC + "consumer_group_count", state="Empty") == 1
    assert value(after, GC + "offset_count") == 4         # 2 groups x 2 partitions
    assert value(after, "kafka_coordinator_group_groupmetadatamanager_numoffsets") == 4
    assert value(after, GC + "offset_commit_count") > commits

    # OffsetDelete of one partition of the Empty classic group
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTopicPartition
    kadmin = KafkaAdminClient(bootstrap_servers=boot)
    try:
        result = kadmin.delete_group_offsets("classic-g", [KTopicPartition(TOPIC, 0)])
    finally:
        kadmin.close()
    assert [e.errno for e in result.values()] == [0]
    deleted = scrape(url)
    assert value(deleted, GC + "offset_deletion_count") == 1
    assert value(deleted, GC + "offset_count") == 3
