"""Replicated partitions on three combined nodes (real processes, real clients). The tests
share one cluster and one replicated topic (module fixtures); each brings them to the state
it needs (all three nodes up and in every ISR, the topic created), so any one runs alone
(``-k``) or on another worker:

1. a topic with replication factor 3: records produced with acks=all through
   confluent-kafka; every partition's ISR is all three replicas and every replica holds the
   same batches on disk, up to the leader's high watermark;
2. SIGKILL the leader of a partition: a replica of the ISR becomes leader with the next
   leader epoch, the dead node leaves the ISR, every acknowledged record is still there,
   producing goes on;
3. a killed node comes back: it catches up, rejoins the ISR and its log matches again;
4. SIGTERM a leader (controlled shutdown): it exits cleanly, leadership moves to the ISR,
   a producer running through the shutdown sees only retriable errors and no acknowledged
   record is lost; back, it rejoins;
5. a consumer group whose ``__consumer_offsets`` partition has replication factor 3: its
   coordinator's node is killed and the group resumes from its committed offsets on the
   new coordinator.

min.insync.replicas with nodes down is in test_min_insync.py (it needs a quorum that
survives two dead brokers).
"""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from .replication_support import (Acks, create_topic, find_coordinator, make_producer, produce,
                                  read_topic, records, replicas_in_sync)
from .support import Cluster, agreed_state, topic_state, wait_for, wait_for_isr

TOPIC = "replicated"
PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("replication"),
                extra={"offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
                       "replica.lag.time.max.ms": "5000"})
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


@pytest.fixture(scope="module")
def acked():
    """Every record acknowledged so far on TOPIC: {(key, value): (partition, offset)}."""
    return {}


@pytest.fixture(scope="module")
def created(cluster, acked):
    """TOPIC with replication factor 3 and min.insync.replicas 2, its leaders spread over the
    nodes, and a first 600 records acknowledged with acks=all."""
    st = create_topic(cluster, TOPIC, PARTITIONS, rf=3, configs={"min.insync.replicas": "2"})
    assert all(sorted(s.replicas) == [1, 2, 3] for s in st.values())
    assert {s.leader for s in st.values()} == {1, 2, 3}, "leaders spread over the nodes"
    acks = produce(cluster.bootstrap(), TOPIC, records("a", 600))
    assert not acks.failed, acks.failed[:3]
    acked.update(acks.acked)
    assert len({p for p, _ in acks.acked.values()}) == PARTITIONS
    return st


@pytest.fixture
def all_up(cluster, created):
    """Every node running and back in every ISR of TOPIC (a test before may have left one
    down), with identical replica logs."""
    for node_id, n in cluster.nodes.items():
        if n.proc is None or n.proc.poll() is not None:
            cluster.start(node_id)
    wait_for_isr(cluster, TOPIC, timeout=90, what="every node in every ISR")
    wait_for(lambda: replicas_in_sync(cluster, TOPIC, range(PARTITIONS)), timeout=60,
             what="identical replica logs")


def check_nothing_lost(cluster, acked: dict):
    got = read_topic(cluster.bootstrap(), TOPIC, PARTITIONS, set(acked))
    missing = set(acked) - set(got)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:3]}"
    for kv, (p, off) in acked.items():
        # librdkafka reports some deliveries as persisted without an offset (None): a retry
        # of a batch its first leader had written, answered by the next leader (see the
        # controlled shutdown test); then only the partition is known
        want = (p, off) if off is not None else (p, got[kv][1])
        assert got[kv] == want, f"{kv} acknowledged at {p}/{off}, read at {got[kv]}"


def test_replicated_produce(cluster, acked, all_up):
    acks = produce(cluster.bootstrap(), TOPIC, records("p", 120))
    assert not acks.failed, acks.failed[:3]
    acked.update(acks.acked)
    wait_for_isr(cluster, TOPIC)
    leo = wait_for(lambda: replicas_in_sync(cluster, TOPIC, range(PARTITIONS)), timeout=60,
                   what="identical replica logs")
    per_partition = {p: sum(1 for q, _ in acked.values() if q == p) for p in range(PARTITIONS)}
    assert leo == per_partition, "one copy of each record (idempotent producer), on every replica"
    check_nothing_lost(cluster, acked)


def test_kill_a_leader(cluster, acked, all_up):
    before = wait_for_isr(cluster, TOPIC)
    victim = before[0].leader
    led = [p for p, s in before.items() if s.leader == victim]
    cluster.kill(victim)
    after = wait_for(lambda: (lambda s: s if s and all(s[p].leader not in (-1, victim) for p in led) else None)(
        agreed_state(cluster, TOPIC)), timeout=60, what=f"new leaders for {led}")
    for p in led:
        assert after[p].leader in before[p].isr
        assert after[p].leader_epoch == before[p].leader_epoch + 1, (before[p], after[p])
    # the fenced node leaves every ISR (including the partitions it only followed)
    after = wait_for_isr(cluster, TOPIC, isr=[n for n in (1, 2, 3) if n != victim])
    assert all(s.leader != victim for s in after.values())
    check_nothing_lost(cluster, acked)
    # producing goes on with acks=all: the ISR (2) still meets min.insync.replicas (2)
    acks = produce(cluster.bootstrap(), TOPIC, records("b", 300))
    assert not acks.failed, acks.failed[:3]
    acked.update(acks.acked)
    check_nothing_lost(cluster, acked)


def test_killed_node_rejoins(cluster, acked, all_up):
    victim = wait_for_isr(cluster, TOPIC)[2].leader
    cluster.kill(victim)
    wait_for_isr(cluster, TOPIC, isr=[n for n in (1, 2, 3) if n != victim],
                 what=f"node {victim} out of every ISR")
    # records the dead node misses, to catch up on when it is back
    acks = produce(cluster.bootstrap(), TOPIC, records("r", 120))
    assert not acks.failed, acks.failed[:3]
    acked.update(acks.acked)
    cluster.start(victim)
    st = wait_for_isr(cluster, TOPIC, timeout=90, what="the restarted node back in every ISR")
    assert all(sorted(s.isr) == [1, 2, 3] for s in st.values())
    leo = wait_for(lambda: replicas_in_sync(cluster, TOPIC, range(PARTITIONS)), timeout=60,
                   what="the restarted replica's logs matching the leaders'")
    assert sum(leo.values()) == len(acked)
    check_nothing_lost(cluster, acked)


def test_controlled_shutdown_of_a_leader(cluster, acked, all_up):
    before = wait_for_isr(cluster, TOPIC)
    victim = before[1].leader
    led = [p for p, s in before.items() if s.leader == victim]
    survivors = ",".join(n.bootstrap for n in cluster.alive() if n.node_id != victim)
    acks = Acks()
    stop = threading.Event()
    errors: list = []

    def keep_producing():
        p = make_producer(survivors, error_cb=lambda e: errors.append(e))
        i = 0
        while not stop.is_set():
            k, v = f"c-k{i % 97}".encode(), f"c-v{i}".encode()
            try:
                p.produce(TOPIC, key=k, value=v, on_delivery=acks.callback)
                i += 1
            except BufferError:
                pass
            p.poll(0.005)
        assert p.flush(90) == 0

    t = threading.Thread(target=keep_producing)
    t.start()
    try:
        wait_for(lambda: len(acks.acked) >= 100, what="the producer under way")
        node = cluster.nodes[victim]
        log_from = len(node.log_text())
        rc = node.stop(timeout=60)
        assert rc == 0, "SIGTERM is a clean shutdown"
        assert "granted the controlled shutdown" in node.log_text(log_from), \
            "the controller let the broker go (not the shutdown timeout)"
        # The controller grants the shutdown only once this broker leads nothing, is in no
        # ISR and the other brokers have seen that: so no waiting here, the survivors'
        # metadata already says so the moment the process has exited.
        for n in cluster.alive():
            after = topic_state(n.port, TOPIC)
            for p, s in after.items():
                assert s.leader != victim and victim not in s.isr, (n.node_id, p, s)
            for p in led:
                assert after[p].leader in before[p].isr
                assert after[p].leader_epoch == before[p].leader_epoch + 1, (before[p], after[p])
        n_before = len(acks.acked)
        wait_for(lambda: len(acks.acked) >= n_before + 100, timeout=60, what="producing after the shutdown")
    finally:
        stop.set()
        t.join(120)
        if not cluster.nodes[victim].running:
            cluster.start(victim)
    assert not acks.failed, f"records not delivered: {acks.failed[:3]}"
    fatal = [e for e in errors if e.fatal()]
    assert not fatal, fatal
    acked.update(acks.acked)
    check_nothing_lost(cluster, acked)
    wait_for_isr(cluster, TOPIC, timeout=90, what="the node back in every ISR")
    wait_for(lambda: replicas_in_sync(cluster, TOPIC, range(PARTITIONS)), timeout=60,
             what="identical replica logs after the restart")


def test_group_resumes_on_a_new_coordinator(cluster, all_up):
    topic, group = "group-input", "failover-group"
    create_topic(cluster, topic, 3, rf=3)
    acks = produce(cluster.bootstrap(), topic, records("g", 60))
    assert not acks.failed
    conf = {"bootstrap.servers": cluster.bootstrap(), "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100, "session.timeout.ms": 6000,
            "topic.metadata.refresh.interval.ms": 1000}
    c = Consumer(conf)
    c.subscribe([topic])
    seen = []
    deadline = time.monotonic() + 60
    while len(seen) < 30 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen.append(m)
    assert len(seen) >= 30
    c.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in
                 c.committed([TopicPartition(topic, p) for p in range(3)], timeout=20)}
    c.close()
    positions = {}
    for m in seen:
        positions[m.partition()] = max(positions.get(m.partition(), 0), m.offset() + 1)
    assert {p: o for p, o in committed.items() if o >= 0} == positions

    offsets_topic = wait_for_isr(cluster, "__consumer_offsets", what="__consumer_offsets fully replicated")
    assert all(len(s.replicas) == 3 for s in offsets_topic.values())
    err, coordinator = find_coordinator(cluster.any_port(), group)
    assert err == 0 and coordinator in (1, 2, 3)
    cluster.kill(coordinator)
    try:
        def new_coordinator():
            e, node = find_coordinator(cluster.any_port(exclude=(coordinator,)), group)
            return node if e == 0 and node not in (-1, coordinator) else None
        wait_for(new_coordinator, timeout=60, what="a new group coordinator")

        c = Consumer(dict(conf, **{"bootstrap.servers": cluster.bootstrap()}))
        c.subscribe([topic])
        first: dict[int, int] = {}
        rest = []
        deadline = time.monotonic() + 90
        while len(seen) + len(rest) < 60 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error() is not None:
                continue
            first.setdefault(m.partition(), m.offset())
            rest.append(m)
        c.close()
        # resumed exactly where the group had committed: nothing re-read, nothing skipped
        for p, off in first.items():
            assert off == max(committed.get(p, -1), 0), (p, off, committed)
        assert {(m.key(), m.value()) for m in seen + rest} == set(acks.acked)
    finally:
        cluster.start(coordinator)
