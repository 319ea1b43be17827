"""min.insync.replicas with brokers down. Three dedicated controllers (nodes 1-3) and three
brokers (4-6): two brokers can die while the metadata quorum lives on, so the controller
fences them and shrinks the ISR (with three combined nodes, two dead nodes would take the
quorum with them and nothing could change).

A topic with replication factor 3 and min.insync.replicas=2: with two of its replicas'
brokers dead the ISR is the one survivor; acks=all produce is refused with
NOT_ENOUGH_REPLICAS, acks=1 is accepted; one broker back in the ISR restores acks=all, and
every acknowledged record is readable.
"""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from .replication_support import Acks, create_topic, produce, read_topic, records
from .support import Cluster, wait_for, wait_for_isr

CONTROLLERS = (1, 2, 3)
BROKERS = (4, 5, 6)
TOPIC = "min-isr"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("min-isr"), nodes=6,
                roles={i: ("controller" if i in CONTROLLERS else "broker") for i in range(1, 7)},
                extra={"replica.lag.time.max.ms": "5000"})
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def test_acks_all_needs_min_insync_replicas(cluster):
    st = create_topic(cluster, TOPIC, 1, rf=3, configs={"min.insync.replicas": "2"})
    assert sorted(st[0].replicas) == list(BROKERS)
    wait_for_isr(cluster, TOPIC)
    acked = dict(produce(cluster.bootstrap(), TOPIC, records("all3", 20)).acked)
    assert len(acked) == 20

    survivor = st[0].replicas[-1]
    dead = [b for b in BROKERS if b != survivor]
    for b in dead:
        cluster.kill(b)
    st = wait_for_isr(cluster, TOPIC, isr=[survivor], timeout=60, what="the ISR shrunk to the survivor")
    assert st[0].leader == survivor

    # acks=all: refused, with the broker's own error (no retries, so nothing hides it)
    refused = produce(cluster.bootstrap(), TOPIC, records("refused", 5), retries=0,
                      **{"enable.idempotence": False, "message.timeout.ms": 20_000})
    assert not refused.acked
    assert {err.code() for _, err in refused.failed} == {KafkaError.NOT_ENOUGH_REPLICAS}, refused.failed
    # acks=1 needs only the leader
    one = produce(cluster.bootstrap(), TOPIC, records("one", 10), acks="1",
                  **{"enable.idempotence": False})
    assert not one.failed and len(one.acked) == 10
    acked.update(one.acked)

    # one broker back: it catches up, joins the ISR, and acks=all works again
    cluster.start(dead[0])
    wait_for_isr(cluster, TOPIC, isr=sorted([survivor, dead[0]]), timeout=90,
                 what="the restarted broker back in the ISR")
    again = produce(cluster.bootstrap(), TOPIC, records("again", 10))
    assert not again.failed and len(again.acked) == 10
    acked.update(again.acked)

    got = read_topic(cluster.bootstrap(), TOPIC, 1, set(acked))
    assert set(acked) <= set(got)
    assert not {kv for kv in got if kv[1].startswith(b"refused")}, "a refused record was stored"
