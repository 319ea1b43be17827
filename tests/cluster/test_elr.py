"""Eligible leader replicas (KIP-966) under faults: the last ISR member lost, unclean leader
election off, and the partition still gets a clean leader without losing an acknowledged
record.

One dedicated controller (node 1) and three brokers (2-4), so the controller lives on while
every replica of the partition is down. A topic with replication factor 3 and
``min.insync.replicas=2`` (ELR is on: ``eligible.leader.replicas.version`` 1 is what a new
cluster finalizes). The scenario KIP-966 was written for:

1. the two followers stop one after the other (SIGTERM, controlled shutdown); the second one
   takes the ISR below the minimum, so it becomes an eligible leader replica (ELR), and an
   acks=all producer is refused from then on (every acknowledged record is on it);
2. the leader -- the last ISR member -- is killed (SIGKILL); the controller fences it: the ISR
   is empty, both are in the ELR, nobody leads;
3. the ELR follower comes back: the controller elects it cleanly while the old leader is
   still down (without ELR the partition would wait for that one broker, or lose data to an
   unclean election);
4. the other follower comes back and joins the ISR, which is at the minimum again: the high
   watermark (held while the ISR was below the minimum) moves, the ELR is cleared, and every
   acknowledged record is read back.

And ``PreviousBrokerEpoch`` (KIP-966): a broker stopped with SIGTERM wrote its broker epoch in
its log dirs' clean-shutdown markers and stays an eligible leader when it registers again; a
SIGKILLed one proves nothing and is dropped from the ELR on its registration, so it is never
elected from there (the last known ELR keeps naming the last leader, as in Kafka 4.4).
"""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kbroker.wire import messages as w

from .replication_support import create_topic, produce, read_topic, records
from .support import Cluster, call, topic_state, wait_for, wait_for_isr

TOPIC = "elr"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("elr"), nodes=4,
                roles={1: "controller", 2: "broker", 3: "broker", 4: "broker"},
                extra={"replica.lag.time.max.ms": "5000", "unclean.leader.election.enable": "false"})
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def elr_of(port: int, topic: str = TOPIC) -> tuple[int, tuple, tuple, tuple]:
    """(leader, ISR, ELR, last known ELR) of partition 0 as DescribeTopicPartitions answers."""
    R = w.DescribeTopicPartitionsRequest
    resp = call(port, 75, 0, R(topics=[R.TopicRequest(name=topic)], response_partition_limit=10))
    [p] = resp.topics[0].partitions
    return (p.leader_id, tuple(sorted(p.isr_nodes)), tuple(sorted(p.eligible_leader_replicas)),
            tuple(sorted(p.last_known_elr)))


def test_last_isr_member_lost_leader_elected_from_elr(cluster):
    st = create_topic(cluster, TOPIC, 1, rf=3, configs={"min.insync.replicas": "2"})
    wait_for_isr(cluster, TOPIC)
    leader = st[0].leader
    first, second = [b for b in st[0].replicas if b != leader]
    acked = dict(produce(cluster.bootstrap(), TOPIC, records("all", 30)).acked)
    assert len(acked) == 30

    # 1. the followers go; the second takes the ISR below min.insync.replicas: ELR
    cluster.nodes[first].stop()
    wait_for_isr(cluster, TOPIC, isr=sorted([leader, second]), what="the first follower out of the ISR")
    more = produce(cluster.bootstrap(), TOPIC, records("two", 20)).acked
    assert len(more) == 20
    acked.update(more)
    cluster.nodes[second].stop()
    port = cluster.nodes[leader].port
    assert wait_for(lambda: elr_of(port) == (leader, (leader,), (second,), ()) or None,
                    what="the second follower in the ELR")
    refused = produce(cluster.bootstrap(), TOPIC, records("refused", 5), retries=0,
                      **{"enable.idempotence": False, "message.timeout.ms": 20_000})
    assert not refused.acked
    assert {err.code() for _, err in refused.failed} == {KafkaError.NOT_ENOUGH_REPLICAS}, refused.failed

    # 2. the last ISR member crashes; 3. the ELR member comes back and is elected cleanly
    cluster.kill(leader)
    cluster.start(second)
    sport = cluster.nodes[second].port
    state = wait_for(lambda: (lambda s: s if s and s[0].leader == second else None)(topic_state(sport, TOPIC)),
                     timeout=60, what="the ELR member elected")
    assert state[0].isr == (second,)
    assert elr_of(sport) == (second, (second,), (leader,), ())

    # 4. the other follower back: ISR at the minimum, ELR cleared, nothing acknowledged lost
    cluster.start(first)
    wait_for_isr(cluster, TOPIC, isr=sorted([second, first]), timeout=90, what="the ISR at the minimum again")
    assert wait_for(lambda: elr_of(sport) == (second, tuple(sorted([second, first])), (), ()) or None,
                    what="the ELR cleared")
    got = read_topic(cluster.bootstrap(), TOPIC, 1, set(acked))
    missing = set(acked) - set(got)
    assert not missing, f"{len(missing)} acknowledged record(s) lost, e.g. {sorted(missing)[:3]}"
    for kv, (part, offset) in acked.items():
        assert got[kv] == (part, offset), kv
    assert not {kv for kv in got if kv[1].startswith(b"refused")}, "a refused record was stored"
    cluster.start(leader)
    wait_for_isr(cluster, TOPIC, timeout=90, what="the old leader back in the ISR")


def create_assigned(cluster, name: str, replicas: list[int], min_isr: int):
    """One partition on ``replicas`` (leader first), with its ``min.insync.replicas``."""
    R = w.CreateTopicsRequest
    req = R(topics=[R.CreatableTopic(
        name=name, num_partitions=-1, replication_factor=-1,
        assignments=[R.CreatableTopic.CreatableReplicaAssignment(partition_index=0, broker_ids=replicas)],
        configs=[R.CreatableTopic.CreatableTopicConfig(name="min.insync.replicas", value=str(min_isr))])],
        timeout_ms=30_000, validate_only=False)
    resp = call(cluster.any_port(), 19, 5, req)
    assert resp.topics[0].error_code == 0, resp.topics[0]
    wait_for_isr(cluster, name, isr=sorted(replicas), what=f"{name} in sync")


def test_sigterm_keeps_a_broker_eligible_sigkill_does_not(cluster):
    """Two partitions of replication factor 2 and min ISR 2 led by broker 2: ``clean`` with
    broker 3, which stops with SIGTERM, ``crashed`` with broker 4, which is SIGKILLed. Each
    becomes its partition's ELR; then the leader stops too, so nothing can take them back
    into an ISR, and both come back: 3 is elected from the ELR, 4 is dropped from it."""
    create_assigned(cluster, "clean", [2, 3], 2)
    create_assigned(cluster, "crashed", [2, 4], 2)
    acked = dict(produce(cluster.bootstrap(), "crashed", records("c", 20)).acked)
    assert len(acked) == 20
    port = cluster.nodes[2].port
    cluster.nodes[3].stop()
    cluster.kill(4)
    assert wait_for(lambda: elr_of(port, "clean") == (2, (2,), (3,), ())
                    and elr_of(port, "crashed") == (2, (2,), (4,), ()) or None,
                    what="brokers 3 and 4 in their partitions' ELR")
    cluster.nodes[2].stop()             # the last ISR member of both, cleanly
    cluster.start(4)
    cluster.start(3)
    port = cluster.nodes[3].port
    assert wait_for(lambda: elr_of(port, "clean") == (3, (3,), (2,), ()) or None,
                    what="the cleanly stopped broker elected from the ELR")
    assert wait_for(lambda: elr_of(port, "crashed") == (-1, (), (2,), (2,)) or None,
                    what="the crashed broker out of the ELR")
    cluster.start(2)                    # clean as well: elected, and the crashed one catches up
    wait_for_isr(cluster, "crashed", isr=[2, 4], timeout=90, what="the crashed broker back in the ISR")
    assert elr_of(port, "crashed") == (2, (2, 4), (), ())
    got = read_topic(cluster.bootstrap(), "crashed", 1, set(acked))
    assert {kv: got.get(kv) for kv in acked} == acked
    wait_for_isr(cluster, "clean", isr=[2, 3], timeout=90, what="the clean partition in sync")
