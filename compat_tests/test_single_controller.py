"""One controller and separate brokers, and a single node's controller listener, on both
targets with the same steps and the same assertions (issue 19, "KRaft as operators run it").

1. **One controller, two brokers** — the smallest layout of Kafka's KRaft documentation with
   dedicated roles: node 1 is the only voter (``process.roles=controller``, its CONTROLLER
   listener alone), nodes 2 and 3 are brokers (``process.roles=broker``); all three name
   ``controller.quorum.voters=1@…`` and are formatted with the target's own storage tool
   (``kafka-storage`` on Kafka, ``kbroker storage`` on kbroker). The brokers register,
   ``kafka-metadata-quorum --bootstrap-controller`` reports voter 1 leading and the brokers
   as its observers, ``kafka-features --bootstrap-controller`` answers, clients see only the
   brokers, and a topic created with ``kafka-topics`` on both brokers takes acks=all writes
   and returns them. One module-scoped cluster per target (about 12 s on Kafka, 8 s on
   kbroker, mostly the tools' JVMs).
2. **A single combined node** (the suite's shared broker: ``controller.quorum.voters=1@…``
   and a CONTROLLER listener) answers ``kafka-metadata-quorum`` and ``kafka-features``
   through ``--bootstrap-controller``, as Kafka's does.
"""
from __future__ import annotations

import json
import re

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from compat_tests.cli import run_tool
from compat_tests.kafka_runner import random_cluster_id
from compat_tests.runner import free_port
from compat_tests.test_quorum_formation import (HOST, QuorumNode, deadline_wait, start_all, stop_all,
                                                storage_format)
from tests.support.drain import values_to_end
from tests.support.parallel import in_threads

CLIENT = "kafka-cli"
BROKERS = (2, 3)


def describe(controller: str, what: str) -> list[str]:
    """``kafka-metadata-quorum --bootstrap-controller CONTROLLER describe --WHAT`` (lines)."""
    return run_tool("kafka-metadata-quorum", ["--bootstrap-controller", controller, "describe", f"--{what}"],
                    timeout=120).check().lines


def status(controller: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (ln.split(":", 1) for ln in describe(controller, "status"))}


def replication(controller: str) -> dict[int, str]:
    """``describe --replication`` as {node id: Leader | Follower | Observer}."""
    header, *rows = describe(controller, "replication")
    assert header.split()[0] == "NodeId" and header.split()[-1] == "Status", header
    return {int(r.split()[0]): r.split()[-1] for r in rows}


def finalized_metadata_version(controller: str) -> str:
    out = run_tool("kafka-features", ["--bootstrap-controller", controller, "describe"], timeout=120).check()
    [line] = [ln for ln in out.lines if ln.startswith("Feature: metadata.version")]
    return line.split("FinalizedVersionLevel:")[1].split()[0]


@pytest.fixture(scope="module")
def one_controller(target, tmp_path_factory):
    """Node 1 the only controller, nodes 2 and 3 brokers; yields (controller, brokers)."""
    root = tmp_path_factory.mktemp(f"one-controller-{target}")
    cport = free_port()
    voters = f"1@{HOST}:{cport}"
    controller = QuorumNode(target, root, 1, {"controller_port": cport,
                                              "controller.quorum.voters": voters}).controller_only()
    brokers = [QuorumNode(target, root, i, {"controller_port": None, "controller.quorum.voters": voters,
                                            "process.roles": "broker"}).broker_only() for i in BROKERS]
    nodes = [controller, *brokers]
    cluster_id = random_cluster_id()
    in_threads(lambda n: storage_format(target, n, cluster_id), nodes)
    try:
        start_all(nodes)
        yield controller, brokers
    finally:
        stop_all(nodes)


def test_brokers_register_with_the_only_controller(one_controller):
    controller, brokers = one_controller
    at = f"{HOST}:{controller.controller_port}"
    st = deadline_wait(lambda: (s := status(at)) and sorted(
        o["id"] for o in json.loads(s["CurrentObservers"])) == list(BROKERS) and s, "both brokers observing")
    assert st["LeaderId"] == "1"
    assert [v["id"] for v in json.loads(st["CurrentVoters"])] == [1]
    assert replication(at) == {1: "Leader", 2: "Observer", 3: "Observer"}
    assert finalized_metadata_version(at)          # answered by the controller itself
    admin = KafkaAdminClient(bootstrap_servers=brokers[0].bootstrap_servers)
    try:
        seen = deadline_wait(lambda: (b := {x["broker_id"] for x in admin.describe_cluster()["brokers"]})
                             == set(BROKERS) and b, "both brokers in DescribeCluster")
    finally:
        admin.close()
    assert seen == set(BROKERS), "clients see the brokers only, never the controller"


def test_a_topic_replicated_on_both_brokers(one_controller):
    _, brokers = one_controller
    bootstrap = ",".join(b.bootstrap_servers for b in brokers)
    run_tool("kafka-topics", ["--bootstrap-server", bootstrap, "--create", "--topic", "two-brokers",
                              "--partitions", "2", "--replication-factor", "2"], timeout=120).check()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=10)
    sent = [str(i).encode() for i in range(20)]
    deadline_wait(lambda: producer.send("two-brokers", sent[0], partition=0).get(timeout=20), "a first write")
    for i, v in enumerate(sent[1:], 1):
        producer.send("two-brokers", v, partition=i % 2).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition("two-brokers", p) for p in (0, 1)])
    got = sorted(values_to_end(consumer))
    consumer.close()
    assert got == sorted(sent)
    out = run_tool("kafka-topics", ["--bootstrap-server", bootstrap, "--describe", "--topic", "two-brokers"],
                   timeout=120).check()
    rows = [dict(re.findall(r"(\w+): (\S+)", ln)) for ln in out.lines if "Partition:" in ln and "Leader:" in ln]
    assert [r["Partition"] for r in rows] == ["0", "1"], out.stdout
    for r in rows:
        assert sorted(r["Replicas"].split(",")) == ["2", "3"] and r["Leader"] in ("2", "3"), r
        assert sorted(r["Isr"].split(",")) == ["2", "3"], r


def test_a_single_node_answers_on_its_controller_listener(broker):
    at = f"{HOST}:{broker.controller_port}"
    st = status(at)
    assert st["LeaderId"] == "1"
    voters = json.loads(st["CurrentVoters"])
    assert [v["id"] for v in voters] == [1]
    assert voters[0]["endpoints"] == [f"CONTROLLER://{at}"]
    assert json.loads(st["CurrentObservers"]) == []
    assert replication(at) == {1: "Leader"}
    assert finalized_metadata_version(at)
