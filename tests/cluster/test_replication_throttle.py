"""A reassignment with ``kafka-reassign-partitions --throttle`` on a 3-node cluster (issue 15):
the replication throttle visibly limits how fast the new replica is filled, and is gone
once ``--verify`` clears it.

The cluster measures replication over ``replication.quota.window.num=2`` windows of 1 s (so
a rate counts after one window instead of ten) and fetches at most 16 KB per partition, so
one fetch overshoots the limit by little. What is asserted comes from the brokers' own
meters (``/metrics``), never from elapsed time: partitions were held back, every byte of the
moved partition went through the throttled path, the measured rate never went far above the
limit, and no throttle is left afterwards.
"""
from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from compat_tests.cli import run_tool
from compat_tests.kafka_runner import kafka_libs
from kbroker.testing.processes import KbrokerCluster
from tests.support.prometheus_text import scrape, total, value
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
RATE = 100_000                      # bytes per second
RECORDS, SIZE = 400, 1000           # 400 KB into the moved partition: ~3 s at the limit


def metric(cluster, node: int, name: str, **labels) -> float:
    return total(scrape(cluster.nodes[node].metrics_url), name, **labels)


def tool(name, *args):
    return run_tool(name, list(args), timeout=120).check()


def test_reassignment_throttle_limits_replication_and_is_removed(tmp_path):
    kafka_libs()
    cluster = KbrokerCluster(tmp_path, 3, {"replication.quota.window.num": "2",
                                           "replica.fetch.max.bytes": "16384",
                                           "auto.leader.rebalance.enable": "false"})
    cluster.start()
    try:
        bs = ["--bootstrap-server", cluster.bootstrap_servers]
        topic = "throttled-move"
        tool("kafka-topics", *bs, "--create", "--topic", topic, "--replica-assignment", "1")
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0,
                      "batch.size": 8192, "compression.type": "none"})
        for i in range(RECORDS):
            p.produce(topic, b"t" * SIZE, partition=0)
            p.poll(0)
        assert p.flush(60) == 0
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1, 3]}]}))
        out = tool(REASSIGN, *bs, "--execute", "--reassignment-json-file", str(plan),
                   "--throttle", str(RATE))
        assert f"The inter-broker throttle limit was set to {RATE} B/s" in out.stdout

        def verified():
            v = tool(REASSIGN, *bs, "--verify", "--reassignment-json-file", str(plan))
            return v if f"Reassignment of partition {topic}-0 is completed." in v.stdout else None
        v = wait_for(verified, 120, 0.5, "the reassignment to complete")
        assert "Clearing broker-level throttles" in v.stdout, v.stdout

        # the throttle was applied: the new replica (follower side, node 3) and the leader
        # (node 1) counted the partition's bytes as throttled, and held it back at the limit
        moved = RECORDS * SIZE
        follower_bytes = metric(cluster, 3, "kbroker_replication_throttled_bytes_total", side="follower")
        leader_bytes = metric(cluster, 1, "kbroker_replication_throttled_bytes_total", side="leader")
        assert follower_bytes >= moved and leader_bytes >= moved, (follower_bytes, leader_bytes)
        held = (metric(cluster, 3, "kbroker_replication_throttle_held_back_total", side="follower")
                + metric(cluster, 1, "kbroker_replication_throttle_held_back_total", side="leader"))
        assert held > 0, "the throttle never held the partition back"
        # the measured rate stayed near the limit: at most one 16 KB fetch over a 1 s window
        for node, side in ((3, "follower"), (1, "leader")):
            peak = metric(cluster, node, "kbroker_replication_throttle_peak_byte_rate", side=side)
            assert 0 < peak <= RATE * 1.5, (node, side, peak)
        # ...and removed afterwards: no rate in force on any node, and new data flows freely
        for node in (1, 2, 3):
            def cleared(node=node):
                return all(value(scrape(cluster.nodes[node].metrics_url),
                                 "kbroker_replication_throttle_limit_bytes", side=s) == 0
                           for s in ("leader", "follower"))
            wait_for(cleared, 30, 0.5, f"node {node}'s throttle cleared")
        held_before = metric(cluster, 3, "kbroker_replication_throttle_held_back_total", side="follower")
        for i in range(200):
            p.produce(topic, b"u" * SIZE, partition=0)
        assert p.flush(60) == 0
        assert metric(cluster, 3, "kbroker_replication_throttle_held_back_total",
                      side="follower") == held_before
    finally:
        cluster.stop()
