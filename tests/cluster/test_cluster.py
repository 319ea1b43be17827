"""A real three-process cluster on loopback: three combined nodes (broker + controller)
of one metadata quorum (``kbroker.tools.local_cluster.node_overrides``, short session/election
timeouts). The tests share one cluster (the module's fixture) and the topics ``from-1``..3,
each created through another node (``from_topics``); each test starts with every node up, so
any one runs alone (``-k``) or on another worker:

1. topics created through any node; every node answers the same metadata; clients
   bootstrapped from any node produce and consume across the nodes' partitions;
2. SIGKILL the active controller: a new one is elected, admin operations keep working
   through the survivors, the dead broker is fenced and its partitions lose their leader;
   it comes back, is unfenced and leads them again;
3. stop and restart all three: all metadata is intact.
"""
from __future__ import annotations

import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import InvalidPartitionsError, KafkaError, TopicAlreadyExistsError

import pytest

from .support import describe_quorum, metadata, wait_for


def view(port: int):
    """What a client sees from one node: brokers, controller and every partition's leader."""
    md = metadata(port)
    return (sorted((b.node_id, b.port) for b in md.brokers),
            {t.name: (str(t.topic_id), sorted((p.partition_index, p.leader_id, tuple(p.replica_nodes))
                                              for p in t.partitions))
             for t in md.topics if not t.name.startswith("__")})

def same_everywhere(cluster):
    views = [view(n.port) for n in cluster.alive()]
    return views[0] if all(v == views[0] for v in views) else None

def quorum_leader(port: int) -> int:
    p, _ = describe_quorum(port)
    return p.leader_id if p is not None and p.error_code == 0 else -1

def admin(cluster, node_id: int) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap(node_id), request_timeout_ms=20000)


def retry_admin(cluster, node_id: int, op, timeout: float = 30.0):
    """Run ``op(admin)`` until it succeeds: right after a kill the dead broker is still
    listed (until its session expires) and kafka-python gives up on a refused connection
    instead of trying another node, as the Java client would."""
    deadline = time.monotonic() + timeout
    while True:
        a = None
        try:
            a = admin(cluster, node_id)
            return op(a)
        except (TopicAlreadyExistsError, InvalidPartitionsError):
            return None                  # an earlier attempt got through after all
        except (KafkaError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
        finally:
            if a is not None:
                a.close()

@pytest.fixture(scope="module")
def from_topics(cluster):
    """``from-1``, ``from-2``, ``from-3``: three partitions each, created through node i."""
    for i in (1, 2, 3):
        a = admin(cluster, i)
        a.create_topics([NewTopic(f"from-{i}", num_partitions=3, replication_factor=1)])
        a.close()
    return [f"from-{i}" for i in (1, 2, 3)]


@pytest.fixture
def all_up(cluster, from_topics):
    """Every node running, registered and leading its partitions (a test before may have
    stopped one)."""
    for n in cluster.nodes.values():
        if not n.running:
            n.start()

    def healed():
        v = same_everywhere(cluster)
        if not v or [b for b, _ in v[0]] != [1, 2, 3] or not set(from_topics) <= set(v[1]):
            return None
        return v if all(leader != -1 for _, parts in v[1].values() for _, leader, _ in parts) else None
    return wait_for(healed, what="every node up and leading its partitions")


def test_topics_through_any_node_and_the_same_metadata_everywhere(cluster, from_topics, all_up):
    md = wait_for(lambda: (lambda v: v if v and set(from_topics) <= set(v[1]) else None)(same_everywhere(cluster)),
                  what="the same metadata on every node")
    brokers, topics = md
    topics = {name: topics[name] for name in from_topics}
    assert [b for b, _ in brokers] == [1, 2, 3]
    leaders = {leader for _, parts in topics.values() for _, leader, _ in parts}
    assert leaders == {1, 2, 3}, "partitions are spread over all brokers"
    # every node names the same quorum leader, and DescribeQuorum lists the three voters
    p, resp = describe_quorum(cluster.nodes[1].port)
    assert sorted(v.replica_id for v in p.current_voters) == [1, 2, 3]
    assert {quorum_leader(n.port) for n in cluster.alive()} == {p.leader_id}
    assert sorted(n.node_id for n in resp.nodes) == [1, 2, 3]
    for version in (0, 1):                       # older admin clients; forwarded from followers
        for n in cluster.alive():
            q, _ = describe_quorum(n.port, version)
            assert (q.error_code, q.leader_id) == (0, p.leader_id)

    # clients bootstrapped from different nodes see and use all partitions
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(1))
    for name in topics:
        for part in range(3):
            producer.send(name, value=f"{name}/{part}".encode(), partition=part).get(timeout=20)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(3), auto_offset_reset="earliest",
                             consumer_timeout_ms=10000)
    tps = [TopicPartition(name, part) for name in topics for part in range(3)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    got = set()
    deadline = time.monotonic() + 20
    while len(got) < len(tps) and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=500).values():
            got.update(r.value.decode() for r in recs)
    consumer.close()
    assert got == {f"{tp.topic}/{tp.partition}" for tp in tps}

    # a consumer group: FindCoordinator sends every node's clients to the broker leading the
    # group's __consumer_offsets partition; its commits are read back through another node
    group = KafkaConsumer("from-1", bootstrap_servers=cluster.bootstrap(2), group_id="cluster-group",
                          auto_offset_reset="earliest", enable_auto_commit=False)
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 3 and time.monotonic() < deadline:
        seen += sum(len(r) for r in group.poll(timeout_ms=500).values())
    group.commit()
    group.close()
    assert seen == 3
    a = admin(cluster, 3)
    committed = a.list_group_offsets("cluster-group")["cluster-group"]
    a.close()
    assert {tp.partition: om.offset for tp, om in committed.items()} == {0: 1, 1: 1, 2: 1}

def test_kill_the_active_controller(cluster, all_up):
    old = quorum_leader(cluster.nodes[1].port)
    assert old in (1, 2, 3)
    cluster.nodes[old].kill()
    survivor = next(i for i in cluster.nodes if i != old)
    new = wait_for(lambda: (lambda l: l if l not in (-1, old) else None)(quorum_leader(cluster.nodes[survivor].port)),
                   what="a new quorum leader")
    assert new != old   # (failover time is measured by benchmarks/controller_bench.py, not asserted)

    # admin operations keep working through every survivor
    for i in cluster.nodes:
        if i == old:
            continue
        retry_admin(cluster, i, lambda a, i=i: a.create_topics(
            [NewTopic(f"after-kill-{i}", num_partitions=2, replication_factor=1)]))
        retry_admin(cluster, i, lambda a, i=i: a.create_partitions({f"from-{i}": NewPartitions(total_count=4)}))
    # the dead broker is fenced after broker.session.timeout.ms: it leaves the broker list
    # and its partitions have no leader (replication factor 1: nowhere to move)
    def fenced_view():
        v = same_everywhere(cluster)
        return v if v and old not in [b for b, _ in v[0]] else None
    brokers, topics = wait_for(fenced_view, what="the dead broker fenced everywhere")
    assert {f"after-kill-{i}" for i in cluster.nodes if i != old} <= set(topics)
    for name, (_, parts) in topics.items():
        for _, leader, replicas in parts:
            assert leader == (-1 if replicas == (old,) else replicas[0])
    retry_admin(cluster, survivor, lambda a: a.create_topics(
        [NewTopic("while-fenced", num_partitions=4, replication_factor=1)]))
    _, topics = wait_for(lambda: (lambda v: v if v and "while-fenced" in v[1] else None)(same_everywhere(cluster)),
                         what="while-fenced everywhere")
    assert {leader for _, leader, _ in topics["while-fenced"][1]} <= {i for i in cluster.nodes if i != old}

    # the node comes back: registered, unfenced, leads its partitions again
    cluster.nodes[old].start()
    def healed():
        v = same_everywhere(cluster)
        if not v or [b for b, _ in v[0]] != [1, 2, 3]:
            return None
        return v if all(leader != -1 for _, parts in v[1].values() for _, leader, _ in parts) else None
    wait_for(healed, what="the restarted node leading its partitions again")

def test_stop_and_restart_all_keeps_metadata(cluster, all_up):
    a = admin(cluster, 2)
    a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "from-1", configs={"retention.ms": "123456"})])
    a.close()
    before = wait_for(lambda: same_everywhere(cluster), what="a settled cluster")
    cluster.stop_all()
    cluster.start_all()
    after = wait_for(lambda: (lambda v: v if v and [b for b, _ in v[0]] == [1, 2, 3] else None)(same_everywhere(cluster)),
                     what="the restarted cluster")
    assert after[1].keys() == before[1].keys()
    for name, (tid, parts) in before[1].items():
        assert after[1][name][0] == tid
        assert [(p, r) for p, _, r in after[1][name][1]] == [(p, r) for p, _, r in parts]
    a = admin(cluster, 3)
    cfg = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "from-1")])
    a.close()
    assert "123456" in repr(cfg)
