"""Preferred leaders and replica reassignment on three real combined nodes.

1. ElectLeaders through confluent-kafka's ``AdminClient.elect_leaders``: a node that led
   partitions is SIGKILLed and restarted; once it is back in the ISR, the partitions it is
   the preferred (first) replica of are still led by others (unfencing moves nothing), and
   a preferred election gives them back to it with the next leader epoch; the others answer
   ELECTION_NOT_NEEDED. No acknowledged record is lost.
2. Reassignment through kafka-python's ``alter_partition_reassignments``: a partition on
   [1, 2] with data moves to [2, 3] while a producer writes to it (acks=all); the data
   reaches node 3 (byte-identical to 2's), node 1's log is removed, the reassignment is no
   longer listed, consumers read every acknowledged record; idle afterwards, no node answers
   more than a few Fetch requests a second (node 2 no longer fetches from node 1).
3. The automatic rebalance (``auto.leader.rebalance.enable`` with a 2 s check interval) on
   a second cluster: after a kill and restart leadership returns to the preferred replicas
   with no admin call.
"""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import ElectionType, TopicPartition as CTP
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic

from .replication_support import Acks, create_topic, make_producer, produce, read_topic, records, replicas_in_sync
from .support import Cluster, agreed_state, replica_dir, requests_received, wait_for, wait_for_isr

ELECTION_NOT_NEEDED = 84


def start_cluster(root, **extra):
    c = Cluster(root, extra={"replica.lag.time.max.ms": "5000", "kbroker.http.listen": "127.0.0.1:0",
                             **extra})
    c.start_all()
    return c


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("rebalance"), **{"auto.leader.rebalance.enable": "false"})
    try:
        yield c
    finally:
        c.shutdown()


def check_nothing_lost(cluster, topic, partitions, acked):
    got = read_topic(cluster.bootstrap(), topic, partitions, set(acked))
    missing = set(acked) - set(got)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:3]}"
    for kv, (p, off) in acked.items():
        assert got[kv][0] == p and (off is None or got[kv][1] == off), (kv, (p, off), got[kv])


def restart_preferred_leader(cluster, topic):
    """SIGKILL the preferred leader of partition 0 and restart it; return (victim, the state
    once it is back in every ISR)."""
    before = wait_for_isr(cluster, topic)
    victim = before[0].replicas[0]
    assert before[0].leader == victim
    cluster.kill(victim)
    wait_for(lambda: (lambda s: s if s and all(p.leader not in (-1, victim) for p in s.values()) else None)(
        agreed_state(cluster, topic)), timeout=60, what="leaders off the killed node")
    cluster.start(victim)
    return victim, before


def test_elect_leaders_gives_leadership_back_to_the_preferred_replica(cluster):
    topic = "preferred"
    st = create_topic(cluster, topic, 3, rf=3)
    assert {s.leader for s in st.values()} == {s.replicas[0] for s in st.values()} == {1, 2, 3}
    acks = produce(cluster.bootstrap(), topic, records("e", 300))
    assert not acks.failed, acks.failed[:3]
    victim, before = restart_preferred_leader(cluster, topic)
    back = wait_for_isr(cluster, topic, timeout=90, what="the restarted node back in every ISR")
    theirs = [p for p, s in back.items() if s.replicas[0] == victim]
    assert theirs and all(back[p].leader != victim for p in theirs), "unfencing does not move leaders"

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    result = admin.elect_leaders(ElectionType.PREFERRED, [CTP(topic, p) for p in range(3)]).result(60)
    answers = {tp.partition: (err.code() if err is not None else 0) for tp, err in result.items()}
    assert answers == {p: 0 if p in theirs else ELECTION_NOT_NEEDED for p in range(3)}, answers

    def preferred_everywhere():
        s = agreed_state(cluster, topic)
        return s if s and all(p.leader == p.replicas[0] for p in s.values()) else None
    after = wait_for(preferred_everywhere, timeout=30, what="preferred leaders on every broker")
    for p in theirs:
        assert after[p].leader == victim
        assert after[p].leader_epoch == back[p].leader_epoch + 1, (back[p], after[p])
    # again: nothing to do
    result = admin.elect_leaders(ElectionType.PREFERRED, [CTP(topic, p) for p in range(3)]).result(60)
    assert {err.code() for err in result.values() if err is not None} == {ELECTION_NOT_NEEDED}
    assert all(err is not None for err in result.values())

    more = produce(cluster.bootstrap(), topic, records("f", 300))
    assert not more.failed, more.failed[:3]
    check_nothing_lost(cluster, topic, 3, {**acks.acked, **more.acked})


def test_reassignment_moves_a_partition_with_its_data(cluster):
    topic = "moving"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(), request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2]})])
        wait_for(lambda: (lambda s: s if s and s[0].leader == 1 and s[0].isr == (1, 2) else None)(
            agreed_state(cluster, topic)), what="the topic on [1, 2] with a full ISR")
        acks = produce(cluster.bootstrap(), topic, records("m", 2000), acks="all")
        assert not acks.failed, acks.failed[:3]
        assert replica_dir(cluster, 1, topic, 0).exists() and not replica_dir(cluster, 3, topic, 0).exists()

        # keep producing through the reassignment
        during = Acks()
        stop = threading.Event()
        errors: list = []

        def keep_producing():
            p = make_producer(cluster.bootstrap(), error_cb=lambda e: errors.append(e))
            i = 0
            while not stop.is_set():
                try:
                    p.produce(topic, key=f"d-k{i % 97}".encode(), value=f"d-v{i}".encode(),
                              on_delivery=during.callback)
                    i += 1
                except BufferError:
                    pass
                p.poll(0.005)
            assert p.flush(90) == 0

        t = threading.Thread(target=keep_producing)
        t.start()
        try:
            wait_for(lambda: len(during.acked) >= 100, what="the producer under way")
            result = admin.alter_partition_reassignments({TopicPartition(topic, 0): [2, 3]})
            assert result == {TopicPartition(topic, 0): None}, result

            def moved():
                s = agreed_state(cluster, topic)
                return s if s and s[0].replicas == (2, 3) and s[0].isr == (2, 3) and s[0].leader == 2 else None
            wait_for(moved, timeout=90, what="the partition on [2, 3]")
            assert admin.list_partition_reassignments() == {}
            n = len(during.acked)
            wait_for(lambda: len(during.acked) >= n + 100, timeout=60, what="producing after the move")
        finally:
            stop.set()
            t.join(120)
        assert not during.failed, during.failed[:3]
        assert not [e for e in errors if e.fatal()]

        wait_for(lambda: not replica_dir(cluster, 1, topic, 0).exists(), timeout=30,
                 what="node 1's replica removed")
        sizes = wait_for(lambda: replicas_in_sync(cluster, topic, [0], nodes=[2, 3]), timeout=60,
                         what="node 3's log identical to node 2's")
        acked = {**acks.acked, **during.acked}
        assert sizes[0] == len(acked), "one copy of every record"

        # idle now: the followers' fetches are long polls (replica.fetch.wait.max.ms), a few
        # a second per leader. Node 2, made leader, must have left its fetcher of node 1: it
        # used to send it ~1,000 empty incremental fetches a second, answered at once.
        before = requests_received(cluster, "Fetch", (1, 2, 3))
        time.sleep(3)           # an observation window, not a wait
        after = requests_received(cluster, "Fetch", (1, 2, 3))
        received = {i: after[i] - before[i] for i in before}
        assert all(n < 50 for n in received.values()), f"Fetch requests in 3 s of idle: {received}"
        check_nothing_lost(cluster, topic, 1, acked)
    finally:
        admin.close()


def test_automatic_rebalance_returns_leadership(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("auto-rebalance"),
                      **{"leader.imbalance.check.interval.seconds": "2"})
    try:
        topic = "auto"
        create_topic(c, topic, 3, rf=3)
        acks = produce(c.bootstrap(), topic, records("a", 300))
        assert not acks.failed
        victim, before = restart_preferred_leader(c, topic)

        def preferred_again():
            s = agreed_state(c, topic)
            if not s or any(p.leader != p.replicas[0] or len(p.isr) != 3 for p in s.values()):
                return None
            return s
        after = wait_for(preferred_again, timeout=120, what="leaders back on the preferred replicas")
        for p, s in after.items():
            if s.replicas[0] == victim:
                assert s.leader_epoch >= before[p].leader_epoch + 2, "moved away, then back"
        assert any("leader rebalance: " in n.log_text() for n in c.nodes.values())
        check_nothing_lost(c, topic, 3, acks.acked)
    finally:
        c.shutdown()
