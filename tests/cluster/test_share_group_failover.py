"""A share group on a three-node cluster survives the SIGKILL of its share-partition's
leader: the data topic, ``__consumer_offsets`` and ``__share_group_state`` have replication
factor 3; a librdkafka share consumer accepts some records (the state is written where its
``__share_group_state`` partition is led, with acks=all) and leaves; the leader of the
data partition is SIGKILLed; a new share consumer on the survivors gets exactly the records
never accepted — nothing acknowledged comes back, nothing unacknowledged is lost."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

from .support import Cluster, leader_of, wait_for, wait_for_isr

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
