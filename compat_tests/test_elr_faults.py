"""Eligible leader replicas (KIP-966) under faults, with the same steps and assertions on
kbroker and Apache Kafka: one controller (node 1) and three brokers (2-4), unclean leader
election off (the default), ``eligible.leader.replicas.version`` 1 (what both format new
clusters with), topics with ``min.insync.replicas=2``.

1. **The last ISR member lost** (replicas 2, 3, 4): brokers 3 and then 4 stop cleanly
   (SIGTERM); 4 takes the ISR below the minimum and becomes the eligible leader replica; the
   leader, 2, is killed. Broker 4 comes back and is elected from the ELR while 2 is still
   down; 3 comes back and the ISR is at the minimum again (ELR cleared), and every record
   acknowledged with acks=all is read back.
2. **A clean and an unclean restart** (``PreviousBrokerEpoch``): partitions on 2+3 and on
   2+4; 3 stops with SIGTERM and 4 is SIGKILLed, each becomes its partition's ELR, then 2
   stops too. When 3 and 4 come back, 3 (its clean-shutdown marker names its broker epoch)
   is elected from the ELR, 4 (no marker) is dropped from it and the partition waits for 2,
   whose last known ELR names it as the last leader.

States are read with DescribeTopicPartitions (leader, ISR, ELR, last known ELR). One cluster
per target for the module, formatted by the target's own storage tool.
"""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from compat_tests.kafka_runner import random_cluster_id
from compat_tests.runner import free_port
from compat_tests.test_quorum_formation import HOST, QuorumNode, deadline_wait, start_all, stop_all, storage_format
from kbroker.wire import messages as w
from tests.cluster.support import call
from tests.support.drain import values_to_end
from tests.support.parallel import in_threads

CLIENT = "hand-built"
BROKERS = (2, 3, 4)


@pytest.fixture(scope="module")
def cluster(target, tmp_path_factory):
    """{node id: QuorumNode}: node 1 the only controller, 2-4 brokers."""
    root = tmp_path_factory.mktemp(f"elr-{target}")
    cport = free_port()
    voters = f"1@{HOST}:{cport}"
    nodes = {1: QuorumNode(target, root, 1, {"controller_port": cport,
                                             "controller.quorum.voters": voters}).controller_only()}
    for i in BROKERS:
        nodes[i] = QuorumNode(target, root, i, {"controller_port": None, "controller.quorum.voters": voters,
                                                "process.roles": "broker"}).broker_only()
    cluster_id = random_cluster_id()
    in_threads(lambda n: storage_format(target, n, cluster_id), list(nodes.values()))
    try:
        start_all(list(nodes.values()))
        yield nodes
    finally:
        stop_all(list(nodes.values()))


def state(node: QuorumNode, topic: str) -> tuple[int, tuple, tuple, tuple]:
    """(leader, ISR, ELR, last known ELR) of partition 0 as ``node`` answers
    DescribeTopicPartitions."""
    R = w.DescribeTopicPartitionsRequest
    resp = call(node.addr, 75, 0, R(topics=[R.TopicRequest(name=topic)], response_partition_limit=10))
    [p] = resp.topics[0].partitions
    return (p.leader_id, tuple(sorted(p.isr_nodes)), tuple(sorted(p.eligible_leader_replicas)),
            tuple(sorted(p.last_known_elr)))


def wait_state(node: QuorumNode, topic: str, want: tuple, what: str) -> None:
    seen = []

    def check():
        seen[:] = [state(node, topic)]
        return seen[0] == want
    try:
        deadline_wait(check, what, timeout=120)
    except AssertionError:
        raise AssertionError(f"{what}: {topic} is {seen} on node {node.node_id}, not {want}") from None


def create(nodes, topic: str, replicas: list[int]) -> None:
    """One partition on ``replicas`` (leader first), ``min.insync.replicas=2``."""
    R = w.CreateTopicsRequest
    T = R.CreatableTopic
    req = R(topics=[T(name=topic, num_partitions=-1, replication_factor=-1,
                      assignments=[T.CreatableReplicaAssignment(partition_index=0, broker_ids=replicas)],
                      configs=[T.CreatableTopicConfig(name="min.insync.replicas", value="2")])],
            timeout_ms=30_000, validate_only=False)
    resp = deadline_wait(lambda: call(nodes[replicas[0]].addr, 19, 5, req), "CreateTopics answered")
    assert resp.topics[0].error_code == 0, resp.topics[0]
    wait_state(nodes[replicas[0]], topic, (replicas[0], tuple(sorted(replicas)), (), ()), f"{topic} in sync")


def bootstrap(nodes, *ids) -> str:
    return ",".join(nodes[i].bootstrap_servers for i in ids)


def produce(servers: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=servers, acks="all", retries=10)
    try:
        deadline_wait(lambda: producer.send(topic, values[0], partition=0).get(timeout=20), "a first write")
        for v in values[1:]:
            producer.send(topic, v, partition=0).get(timeout=30)
    finally:
        producer.close()


def read(servers: str, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=servers, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        return values_to_end(consumer)
    finally:
        consumer.close()


def test_last_isr_member_lost_leader_elected_from_elr(cluster):
    topic = "elr-lost"
    create(cluster, topic, [2, 3, 4])
    acked = [b"v%d" % i for i in range(30)]
    produce(bootstrap(cluster, *BROKERS), topic, acked)
    cluster[3].stop()
    wait_state(cluster[2], topic, (2, (2, 4), (), ()), "broker 3 out of the ISR")
    cluster[4].stop()
    wait_state(cluster[2], topic, (2, (2,), (4,), ()), "broker 4 the eligible leader")
    cluster[2].kill()                       # the last ISR member is lost
    cluster[4].start()
    wait_state(cluster[4], topic, (4, (4,), (2,), ()), "broker 4 elected from the ELR")
    cluster[3].start()
    wait_state(cluster[4], topic, (4, (3, 4), (), ()), "the ISR at the minimum again")
    got = read(bootstrap(cluster, 3, 4), topic)
    assert got[:len(acked)] == acked, "an acknowledged record was lost"
    cluster[2].start()
    wait_state(cluster[4], topic, (4, (2, 3, 4), (), ()), "broker 2 back in the ISR")


def test_a_clean_restart_stays_eligible_an_unclean_one_does_not(cluster):
    create(cluster, "elr-clean", [2, 3])
    create(cluster, "elr-crashed", [2, 4])
    cluster[3].stop()
    cluster[4].kill()
    wait_state(cluster[2], "elr-clean", (2, (2,), (3,), ()), "broker 3 the ELR")
    wait_state(cluster[2], "elr-crashed", (2, (2,), (4,), ()), "broker 4 the ELR")
    cluster[2].stop()                       # the last ISR member of both, cleanly
    cluster[4].start()
    cluster[3].start()
    wait_state(cluster[3], "elr-clean", (3, (3,), (2,), ()), "the cleanly stopped broker elected")
    wait_state(cluster[3], "elr-crashed", (-1, (), (2,), (2,)), "the crashed broker out of the ELR")
    cluster[2].start()
    wait_state(cluster[3], "elr-crashed", (2, (2, 4), (), ()), "broker 2 elected, broker 4 in sync")
    wait_state(cluster[3], "elr-clean", (3, (2, 3), (), ()), "broker 2 back in sync")
