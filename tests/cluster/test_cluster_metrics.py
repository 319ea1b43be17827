"""Replication metrics of a real three-node cluster (issue 20): a crashed follower shows up
as ISR shrinks and under-replicated partitions on the leaders, its return as ISR expansions;
exactly one node counts as the active controller."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kbroker.testing.processes import Admin, KbrokerCluster
from tests.support.prometheus_text import scrape, total, value
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


def sums(cluster, nodes, name, **labels) -> float:
    return sum(total(scrape(cluster.nodes[i].metrics_url), name, **labels) for i in nodes)


def test_isr_shrink_and_expand_are_counted(tmp_path):
    cluster = KbrokerCluster(tmp_path, 3, {"replica.lag.time.max.ms": "1000"})
    cluster.start()
    try:
        admin = Admin(cluster.bootstrap_servers)
        admin.create_topic("replicated", partitions=3, replication_factor=3)
        assert sums(cluster, [1, 2, 3], "kafka_controller_kafkacontroller_activecontrollercount") == 1
        assert sums(cluster, [1, 2, 3], "kafka_server_replicamanager_underreplicatedpartitions") == 0
        assert sums(cluster, [1, 2, 3], "kafka_server_replicamanager_leadercount") >= 3

        cluster.nodes[3].kill()
        boot = ",".join(cluster.nodes[i].bootstrap_servers for i in (1, 2))
        producer = Producer({"bootstrap.servers": boot, "acks": "1", "linger.ms": 0})

        def keep_producing():
            for p in range(3):
                producer.produce("replicated", b"x" * 100, partition=p)
            producer.poll(0)

        # followers fall behind the leaders' log end: after replica.lag.time.max.ms the
        # leaders drop node 3 from their ISRs (or the controller does once it is fenced)
        wait_for(lambda: sums(cluster, [1, 2], "kafka_server_replicamanager_underreplicatedpartitions") >= 1,
                 90, what="under-replicated partitions", during=keep_producing)
        assert sums(cluster, [1, 2], "kafka_server_replicamanager_isrshrinks_total") >= 1
        producer.flush(30)
        # bytes went into the two live nodes' topic counters
        assert sums(cluster, [1, 2], "kafka_server_brokertopicmetrics_messagesin_total",
                    topic="replicated") > 0

        cluster.start_node(3)
        wait_for(lambda: sums(cluster, [1, 2, 3], "kafka_server_replicamanager_underreplicatedpartitions") == 0,
                 90, what="ISR expansion back to full")
        assert sums(cluster, [1, 2, 3], "kafka_server_replicamanager_isrexpands_total") >= 1
        assert sums(cluster, [1, 2, 3], "kafka_controller_kafkacontroller_activecontrollercount") == 1
        active = [i for i in (1, 2, 3) if value(scrape(cluster.nodes[i].metrics_url),
                                                "kafka_controller_kafkacontroller_activecontrollercount") == 1]
        assert value(scrape(cluster.nodes[active[0]].metrics_url),
                     "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    finally:
        cluster.stop()
