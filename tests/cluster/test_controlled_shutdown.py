"""Controlled shutdown on a real three-process cluster (three combined nodes, one quorum).

SIGTERM to a node that leads partitions: while it still serves, it asks the active
controller to move its leaderships and take it out of every ISR (KIP-631 controlled
shutdown), waits until the controller grants the shutdown, and only then closes its
listeners. The survivors lead every partition, the stopped node is in no ISR, and once fenced
Metadata lists it as an offline replica of its partitions; it comes back and is unfenced. Finally the nodes stop one after another: the last one, alone with no
quorum, still stops (the controlled shutdown gives up after its bound).
"""
from __future__ import annotations

import os

from kbroker.wire import messages as w

from .support import agreed_state, call, metadata, wait_for


def create_topic(port: int, name: str, partitions: int, rf: int):
    R = w.CreateTopicsRequest
    resp = call(port, 19, 7, R(timeout_ms=20000, validate_only=False, topics=[
        R.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                         assignments=[], configs=[])]))
    assert resp.topics[0].error_code == 0, resp


def test_sigterm_moves_leaderships_before_the_node_leaves(cluster):
    port = cluster.any_port()
    create_topic(port, "cs", 6, 3)
    state = wait_for(lambda: (lambda s: s if s and all(p.leader >= 0 for p in s.values()) else None)(
        agreed_state(cluster, "cs")), what="every node agreeing on the topic")
    leaders = {p.leader for p in state.values()}
    assert len(leaders) > 1, "partitions are spread over the nodes"
    victim = cluster.nodes[state[0].leader]
    mark = os.path.getsize(victim.log_path)

    assert victim.stop() == 0
    text = victim.log_text(mark)
    assert "beginning controlled shutdown" in text
    assert "the controller granted the controlled shutdown" in text, text[-3000:]
    assert "no controlled shutdown granted" not in text

    def moved():
        s = agreed_state(cluster, "cs")
        if not s:
            return None
        if all(p.leader >= 0 and p.leader != victim.node_id and victim.node_id not in p.isr
               for p in s.values()):
            return s
        return None
    after = wait_for(moved, what="leaderships moved off the stopped node")
    for i, p in after.items():
        if state[i].leader == victim.node_id:
            assert p.leader_epoch > state[i].leader_epoch, "a new leader has a new epoch"
    # the controller logged the controlled-shutdown state (whichever node it is)
    assert any(f"broker {victim.node_id} is in controlled shutdown" in n.log_text()
               for n in cluster.nodes.values())

    # once its session is over it is fenced: Metadata still lists it among each partition's
    # replicas, and as an offline one (Kafka's KRaftMetadataCache), and not among the brokers
    other = cluster.any_port(exclude=(victim.node_id,))

    def offline() -> dict[int, list[int]]:
        [t] = call(other, 3, 12, w.MetadataRequest(topics=[w.MetadataRequest.MetadataRequestTopic(
            name="cs")], allow_auto_topic_creation=False)).topics
        return {p.partition_index: p.offline_replicas for p in t.partitions
                if victim.node_id in p.replica_nodes}
    wait_for(lambda: offline() == {i: [victim.node_id] for i in range(6)},
             what="the stopped node listed as an offline replica")
    assert victim.node_id not in {b.node_id for b in metadata(other).brokers}

    # it comes back: registered again, unfenced, listed as a broker, no replica offline
    victim.start()
    wait_for(lambda: victim.node_id in {b.node_id for b in metadata(port).brokers},
             what="the restarted node listed again")
    wait_for(lambda: (lambda s: s and all(p.leader >= 0 for p in s.values()))(agreed_state(cluster, "cs")),
             what="every partition led after the restart")
    assert offline() == {i: [] for i in range(6)}


def test_the_last_node_stops_without_a_quorum(cluster):
    order = sorted(cluster.nodes)
    for node_id in order:
        n = cluster.nodes[node_id]
        assert n.stop(timeout=30.0) == 0, f"node {node_id} stopped cleanly"
    last = cluster.nodes[order[-1]]
    assert "shut down cleanly" in last.log_text()
