"""Dedicated controllers and brokers, as production KRaft clusters run them: nodes 1-3 are
controller-only voters (``process.roles=controller``, a CONTROLLER listener and nothing
else), nodes 4-5 broker-only (``process.roles=broker``, a client listener and nothing else).
The tests run in order on one cluster:

1. the brokers register with the quorum; clients bootstrapped from either broker see both
   brokers (and never a controller) and create topics, produce and consume;
2. a controller-only node serves no client APIs: its only listener is the controller one,
   whose ApiVersions lists the controller plane's APIs and no Produce/Fetch/Metadata;
3. DescribeQuorum through a broker (what ``kafka-metadata-quorum --bootstrap-server`` does)
   names the three controllers as voters and the brokers as observers;
4. SIGKILL the active controller: another controller takes over, both brokers stay
   registered and unfenced, admin operations keep working through either broker.
"""
from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewPartitions, NewTopic
from kafka.errors import InvalidPartitionsError, KafkaError, TopicAlreadyExistsError

from kbroker.tools.local_cluster import ports
from kbroker.wire import messages as w

from .support import Cluster, call, describe_quorum, metadata, wait_for

CONTROLLERS = (1, 2, 3)
BROKERS = (4, 5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("roles"), nodes=5,
                roles={i: ("controller" if i in CONTROLLERS else "broker") for i in range(1, 6)})
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def brokers_seen(port: int) -> list[int]:
    return sorted(b.node_id for b in metadata(port).brokers)


def quorum_leader(port: int) -> int:
    p, _ = describe_quorum(port)
    return p.leader_id if p is not None and p.error_code == 0 else -1


def retry_admin(cluster, node_id: int, op, timeout: float = 30.0):
    """``op(admin)`` until it succeeds (a refused connection to a just-killed node makes
    kafka-python give up rather than try the next node)."""
    deadline = time.monotonic() + timeout
    while True:
        a = None
        try:
            a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(node_id), request_timeout_ms=20000)
            return op(a)
        except (TopicAlreadyExistsError, InvalidPartitionsError):
            return None
        except (KafkaError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
        finally:
            if a is not None:
                a.close()


def leaders(port: int, topic: str) -> dict[int, int]:
    md = call(port, 3, 12, w.MetadataRequest(topics=[w.MetadataRequest.MetadataRequestTopic(name=topic)],
                                              allow_auto_topic_creation=False))
    return {p.partition_index: p.leader_id for t in md.topics if t.name == topic and t.error_code == 0
            for p in t.partitions}


def test_brokers_serve_clients(cluster):
    for b in BROKERS:
        assert wait_for(lambda b=b: brokers_seen(cluster.nodes[b].port) == list(BROKERS),
                        what=f"both brokers in broker {b}'s metadata")
    for b in BROKERS:
        retry_admin(cluster, b, lambda a, b=b: a.create_topics(
            [NewTopic(f"roles-{b}", num_partitions=4, replication_factor=1)]))
    for b in BROKERS:
        for name in (f"roles-{x}" for x in BROKERS):
            got = wait_for(lambda: (lambda l: l if len(l) == 4 and all(v in BROKERS for v in l.values()) else None)(
                leaders(cluster.nodes[b].port, name)), what=f"leaders of {name} seen from {b}")
            assert set(got.values()) == set(BROKERS), "partitions are spread over both brokers"

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(4))
    sent = set()
    for name in (f"roles-{x}" for x in BROKERS):
        for part in range(4):
            v = f"{name}/{part}"
            producer.send(name, value=v.encode(), partition=part).get(timeout=20)
            sent.add(v)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(5), auto_offset_reset="earliest")
    consumer.assign([TopicPartition(f"roles-{x}", p) for x in BROKERS for p in range(4)])
    consumer.seek_to_beginning()
    got = set()
    deadline = time.monotonic() + 30
    while got != sent and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=500).values():
            got.update(r.value.decode() for r in recs)
    consumer.close()
    assert got == sent


def test_controller_only_nodes_have_no_client_listener(cluster):
    for c in CONTROLLERS:
        node = cluster.nodes[c]
        assert node.client_port is None and node.port == node.controller_port
        assert "PLAINTEXT" not in node.overrides["listeners"]
        # its ready line names the listener it has: the controller plane's
        assert f"kbroker ready: listening on CONTROLLER://127.0.0.1:{node.controller_port} (node {c}," \
            in node.log_text()
        # nothing listens where a combined node would serve clients
        client_port = ports(c, cluster.base)[0]
        with pytest.raises(OSError):
            call(client_port, 18, 3, w.ApiVersionsRequest(client_software_name="t",
                                                          client_software_version="1"), timeout=2)
        # the controller listener answers ApiVersions with controller-plane APIs only
        resp = call(node.controller_port, 18, 3, w.ApiVersionsRequest(client_software_name="t",
                                                                     client_software_version="1"))
        assert resp.error_code == 0
        keys = {k.api_key for k in resp.api_keys}
        assert 55 in keys                     # DescribeQuorum (kafka-metadata-quorum --bootstrap-controller)
        # (Fetch, key 1, is there: the KRaft followers' fetch of the metadata log)
        assert not keys & {0, 3, 10, 11}, "no Produce, Metadata, FindCoordinator or JoinGroup"
        # ApiVersions v5 (KIP-1242) on the controller plane: another cluster's name is told to
        # rebootstrap, half a name is invalid
        for cluster_id, node_id, code in [("another-cluster", c, 129), (None, c, 42)]:
            resp = call(node.controller_port, 18, 5, w.ApiVersionsRequest(
                client_software_name="t", client_software_version="1", cluster_id=cluster_id,
                node_id=node_id))
            assert (resp.error_code, resp.api_keys) == (code, [])
    # and no broker ever advertises a controller-only node to clients
    for b in BROKERS:
        assert not set(brokers_seen(cluster.nodes[b].port)) & set(CONTROLLERS)


def test_describe_quorum_through_a_broker(cluster):
    for b in BROKERS:
        p, resp = describe_quorum(cluster.nodes[b].port)
        assert p is not None and p.error_code == 0
        assert sorted(v.replica_id for v in p.current_voters) == list(CONTROLLERS)
        assert p.leader_id in CONTROLLERS
        assert sorted(o.replica_id for o in p.observers) == list(BROKERS)
        # v2 lists the voters' controller endpoints
        assert sorted(n.node_id for n in resp.nodes) == list(CONTROLLERS)
    # every controller names the same leader
    leaders_named = {quorum_leader(cluster.nodes[c].controller_port) for c in CONTROLLERS}
    assert len(leaders_named) == 1 and leaders_named <= set(CONTROLLERS)


def test_kill_the_active_controller(cluster):
    old = quorum_leader(cluster.nodes[4].port)
    assert old in CONTROLLERS
    cluster.kill(old)
    survivors = [c for c in CONTROLLERS if c != old]
    new = wait_for(lambda: (lambda l: l if l in survivors else None)(quorum_leader(cluster.nodes[4].port)),
                   what="a new active controller seen through broker 4")
    # broker 5 learns of the new leader on its own schedule (its next metadata fetch)
    wait_for(lambda: quorum_leader(cluster.nodes[5].port) == new, what="broker 5 following the new controller")
    for b in BROKERS:
        retry_admin(cluster, b, lambda a, b=b: a.create_topics(
            [NewTopic(f"after-kill-{b}", num_partitions=2, replication_factor=1)]))
        retry_admin(cluster, b, lambda a, b=b: a.create_partitions({f"roles-{b}": NewPartitions(total_count=6)}))
    # brokers keep heartbeating to the new controller: after more than a session timeout
    # (broker.session.timeout.ms=3000) both are still registered and lead partitions
    time.sleep(4)
    for b in BROKERS:
        assert brokers_seen(cluster.nodes[b].port) == list(BROKERS)
        for name, count in ((f"after-kill-{x}", 2) for x in BROKERS):
            got = wait_for(lambda: (lambda l: l if len(l) == count and all(v in BROKERS for v in l.values()) else None)(
                leaders(cluster.nodes[b].port, name)), what=f"leaders of {name}")
            assert set(got.values()) <= set(BROKERS)
        assert len(leaders(cluster.nodes[b].port, f"roles-{b}")) == 6
    # produce to a new partition through the new controller's metadata
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap())
    md = producer.send("after-kill-4", value=b"x", partition=1).get(timeout=30)
    producer.close()
    assert md.offset == 0
    # the killed controller comes back and follows the new leader
    cluster.start(old)
    wait_for(lambda: quorum_leader(cluster.nodes[old].controller_port) == new,
             what="the restarted controller following the new leader")
