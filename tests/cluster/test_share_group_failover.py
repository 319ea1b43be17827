"""A share group on a three-node cluster survives the SIGKILL of its share-partition's
leader: the data topic, ``__consumer_offsets`` and ``__share_group_state`` have replication
factor 3; a librdkafka share consumer accepts some records (the state is written where its
``__share_group_state`` partition is led, with acks=all) and leaves; the leader of the
data partition is SIGKILLed; a new share consumer on the survivors gets exactly the records
never accepted — nothing acknowledged comes back, nothing unacknowledged is lost.
And the share group itself survives the SIGKILL of its coordinator: the new leader of its
``__consumer_offsets`` partition replays the share group records and keeps its epochs."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

from kbroker.wire.error_codes import ErrorCode as E

from .support import Cluster, call, leader_of, wait_for, wait_for_isr

pytestmark = pytest.mark.slow

EXTRA = {
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "3",
    "share.coordinator.state.topic.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}
TOPIC, GROUP, N = "share-failover", "share-failover-group", 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("share-cluster"), extra=EXTRA)
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def consume(bootstrap, want, *, accept_at_most=None, timeout=90):
    """Poll with explicit acks: accept up to ``accept_at_most`` records (release the rest);
    returns the accepted offsets."""
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([TOPIC])
    accepted: list[int] = []
    deadline = time.time() + timeout
    try:
        while len(accepted) < want and time.time() < deadline:
            for m in c.poll(0.5):
                if m.error() is not None:
                    continue
                if accept_at_most is None or len(accepted) < accept_at_most:
                    c.acknowledge(m)
                    accepted.append(m.offset())
                else:
                    c.acknowledge(m, AcknowledgeType.RELEASE)
            c.commit_sync()
    finally:
        c.close()
    return accepted


def test_share_partition_leader_sigkill_keeps_acknowledged_records(cluster):
    bootstrap = cluster.bootstrap()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(timeout=30)
    entry = ConfigEntry("share.auto.offset.reset", "earliest",
                        incremental_operation=AlterConfigOpType.SET)
    for f in admin.incremental_alter_configs([ConfigResource("GROUP", GROUP,
                                                             incremental_configs=[entry])]).values():
        f.result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(N):
        p.produce(TOPIC, str(i).encode())
    assert p.flush(60) == 0
    first = consume(bootstrap, 80, accept_at_most=80)
    assert len(set(first)) == 80
    wait_for_isr(cluster, "__share_group_state")
    victim = leader_of(cluster, TOPIC, 0)
    cluster.kill(victim)
    survivors = ",".join(n.bootstrap for n in cluster.alive())
    wait_for(lambda: leader_of(cluster, TOPIC, 0) not in (victim, -1), 60,
             what="a new leader of the data partition")
    rest = consume(survivors, N - 80)
    assert not set(rest) & set(first), "an acknowledged record was delivered again"
    assert set(rest) | set(first) == set(range(N)), "an unacknowledged record was lost"


def _heartbeat(port, member, epoch, topics=None):
    from kbroker.wire import messages as w
    return call(port, 76, 1, w.ShareGroupHeartbeatRequest(
        group_id=COORD_GROUP, member_id=member, member_epoch=epoch, rack_id=None,
        subscribed_topic_names=topics))


def _describe(port):
    from kbroker.wire import messages as w
    return call(port, 77, 1, w.ShareGroupDescribeRequest(
        group_ids=[COORD_GROUP], include_authorized_operations=False)).groups[0]


COORD_TOPIC, COORD_GROUP = "share-coord-failover", "share-coord-failover-group"


def test_share_group_coordinator_failover_keeps_epochs_and_assignments(cluster):
    """The share group's records in ``__consumer_offsets`` (replication factor 3) are replayed
    by the new coordinator after a SIGKILL: same group and assignment epochs, the member
    heartbeats on at its epoch (no fencing, no rejoin) and keeps its partitions."""
    from kbroker.group.records import partition_for
    for nid, n in cluster.nodes.items():            # the test above may have killed one
        if n.proc is None or n.proc.poll() is not None:
            cluster.start(nid)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(COORD_TOPIC, 3, 3)])[COORD_TOPIC].result(timeout=30)
    from kbroker.wire import messages as w
    wait_for(lambda: call(cluster.any_port(), 10, 4, w.FindCoordinatorRequest(   # creates the topic
        key_type=0, coordinator_keys=[COORD_GROUP])).coordinators[0].error_code == 0, 60,
        interval=0.5, what="a group coordinator")
    wait_for_isr(cluster, "__consumer_offsets", timeout=90)
    p = partition_for(COORD_GROUP, 3)
    coordinator = leader_of(cluster, "__consumer_offsets", p)
    port = cluster.nodes[coordinator].port
    joined = wait_for(lambda: (lambda r: r if r.error_code == 0 else None)(
        _heartbeat(port, "m1", 0, [COORD_TOPIC])), 30, what="m1 joins")
    epoch = joined.member_epoch

    def assigned():
        nonlocal epoch
        r = _heartbeat(port, "m1", epoch)
        assert r.error_code == 0, r
        epoch = r.member_epoch
        return r.assignment if r.assignment and r.assignment.topic_partitions else None
    assignment = wait_for(assigned, 30, interval=0.5, what="an assignment")
    assert sorted(assignment.topic_partitions[0].partitions) == [0, 1, 2]
    before = _describe(port)
    assert before.error_code == 0 and before.members[0].member_epoch == epoch
    wait_for_isr(cluster, "__consumer_offsets", partitions={p}, timeout=60)

    cluster.kill(coordinator)
    wait_for(lambda: leader_of(cluster, "__consumer_offsets", p) not in (coordinator, -1), 60,
             what="a new coordinator")
    new_port = cluster.nodes[leader_of(cluster, "__consumer_offsets", p)].port
    r = wait_for(lambda: (lambda r: r if r.error_code not in (
        E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE) else None)(
        _heartbeat(new_port, "m1", epoch)), 60, interval=0.5, what="the new coordinator answers")
    assert r.error_code == 0 and r.member_epoch == epoch, r
    after = _describe(new_port)
    assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch, before.assignment_epoch)
    [m] = after.members
    assert m.member_id == "m1" and m.member_epoch == epoch
    assert sorted(m.assignment.topic_partitions[0].partitions) == [0, 1, 2]
    assert _heartbeat(new_port, "m1", -1).error_code == 0
    cluster.start(coordinator)
