"""One controller and separate brokers, and a single node's CONTROLLER listener, as real
processes checked with Kafka's own tools (issue 19, "KRaft as operators run it").

1. ``kbroker cluster --controllers 1 --nodes 2``: node 1 is the only voter and has only its
   CONTROLLER listener; brokers 2 and 3 register there. Kafka's ``kafka-topics`` creates a
   topic replicated on both brokers, records written with acks=all are read back,
   ``kafka-metadata-quorum --bootstrap-controller`` reports voter 1 leading and the brokers
   as observers. One SIGTERM to the runner stops the brokers before the controller, so each
   broker's controlled shutdown is granted.
2. The same layout from hand-written properties files formatted with ``kbroker storage
   format``, as Kafka's documentation sets it up (``process.roles=controller`` on node 1,
   ``controller.quorum.voters=1@...`` everywhere).
3. A single combined node binds the CONTROLLER listener its file names, as Kafka does:
   Kafka 4.3.1's stock ``config/server.properties`` (``controller.quorum.bootstrap.servers``
   naming itself) and a file with ``controller.quorum.voters=1@localhost:PORT`` both answer
   ``kafka-metadata-quorum`` and ``kafka-features`` through ``--bootstrap-controller``, and
   the node still serves clients as one node.
4. A fresh three-node cluster registers every broker at the first attempt: no registration
   is refused while the bootstrap feature levels are not committed yet.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kbroker.tools.local_cluster import ports
from tests.support.broker_proc import stock_properties
from tests.support.drain import values_to_end
from tests.support.parallel import in_threads

from .support import (FAST, BrokerProcess, Cluster, ConfiguredNode, cluster_command, describe_quorum,
                      free_base_port, free_port, kafka_tool, kbroker_cli, metadata, wait_for)

REFUSAL = "does not support finalized version"


# ---------------------------------------------------------------------- shared checks

def quorum_tool(controller: str, what: str) -> list[str]:
    """``kafka-metadata-quorum --bootstrap-controller CONTROLLER describe --WHAT`` (lines)."""
    out = kafka_tool("kafka-metadata-quorum", "--bootstrap-controller", controller, "describe", f"--{what}")
    assert out.returncode == 0, out.stdout + out.stderr
    return out.lines


def status(controller: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (ln.split(":", 1) for ln in quorum_tool(controller, "status"))}


def replication(controller: str) -> dict[int, str]:
    """``describe --replication`` as {node id: Leader | Follower | Observer}."""
    header, *rows = quorum_tool(controller, "replication")
    assert header.split()[0] == "NodeId" and header.split()[-1] == "Status", header
    return {int(r.split()[0]): r.split()[-1] for r in rows}


def check_one_controller_two_brokers(controller_port: int, broker_ports: dict[int, int], topic: str) -> None:
    """Node 1 is the only voter and leads; brokers 2 and 3 serve a topic replicated on both."""
    controller = f"127.0.0.1:{controller_port}"
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in broker_ports.values())
    for port in broker_ports.values():
        wait_for(lambda port=port: sorted(b.node_id for b in metadata(port).brokers) == [2, 3],
                 what="both brokers registered and unfenced")
    # the observers show up in DescribeQuorum once they have fetched from the leader
    wait_for(lambda: (lambda p: p is not None and p.error_code == 0
                      and sorted(o.replica_id for o in p.observers) == [2, 3])(describe_quorum(controller_port)[0]),
             what="the brokers as observers of the quorum")
    st = status(controller)
    assert st["LeaderId"] == "1"
    assert [v["id"] for v in json.loads(st["CurrentVoters"])] == [1]
    assert sorted(o["id"] for o in json.loads(st["CurrentObservers"])) == [2, 3]
    assert replication(controller) == {1: "Leader", 2: "Observer", 3: "Observer"}

    created = kafka_tool("kafka-topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                         "--partitions", "2", "--replication-factor", "2")
    assert created.returncode == 0, created.stdout + created.stderr
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=10)
    sent = [f"{topic}-{i}".encode() for i in range(20)]
    for i, v in enumerate(sent):
        producer.send(topic, v, partition=i % 2).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition(topic, p) for p in (0, 1)])
    got = sorted(values_to_end(consumer))
    consumer.close()
    assert got == sorted(sent)
    described = kafka_tool("kafka-topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
    assert described.returncode == 0, described.stdout + described.stderr
    rows = [ln for ln in described.lines if "Partition:" in ln and "Leader:" in ln]
    assert len(rows) == 2, described.stdout
    for row in rows:
        fields = dict(re.findall(r"(\w+): (\S+)", row))
        assert sorted(fields["Replicas"].split(",")) == ["2", "3"], row
        assert fields["Leader"] in ("2", "3"), row
        assert sorted(fields["Isr"].split(",")) == ["2", "3"], row
    # the controller serves the controller plane only, as Kafka's controller-only nodes
    with pytest.raises(OSError):
        metadata(controller_port)


# ---------------------------------------------------------------------- 1. kbroker cluster

def test_kbroker_cluster_with_one_controller_and_two_brokers(tmp_path):
    base = free_base_port(6)
    data = tmp_path / "data"
    args = ["--controllers", "1", "--nodes", "2", "--base-port", str(base), "--data-dir", str(data)]
    for k, v in FAST.items():
        args += ["--override", f"{k}={v}"]
    with cluster_command(args, tmp_path / "out.txt") as line:
        assert f"bootstrap 127.0.0.1:{ports(2, base)[0]},127.0.0.1:{ports(3, base)[0]} " in line, line
        assert f"(controllers 1@127.0.0.1:{ports(1, base)[1]})" in line, line
        check_one_controller_two_brokers(ports(1, base)[1], {i: ports(i, base)[0] for i in (2, 3)}, "cli")
    logs = {i: (data / f"node-{i}.log").read_text(errors="replace") for i in (1, 2, 3)}
    for i, text in logs.items():
        assert "shut down cleanly" in text, f"node {i}"
        assert REFUSAL not in text, f"node {i}"
    for b in (2, 3):
        # the controller was still there to grant each broker's controlled shutdown
        assert "no controlled shutdown granted" not in logs[b], logs[b][-2000:]
        assert f"broker {b} may shut down now" in logs[1]


# ---------------------------------------------------------------------- 2. hand-written files

def test_one_controller_and_two_brokers_from_formatted_properties_files(tmp_path):
    controller = free_port()
    voters = {"controller.quorum.voters": f"1@127.0.0.1:{controller}"}
    nodes = [ConfiguredNode(tmp_path, 1, None, controller, voters),
             ConfiguredNode(tmp_path, 2, free_port(), None, voters),
             ConfiguredNode(tmp_path, 3, free_port(), None, voters)]
    props = nodes[0].config_path.read_text()
    assert "process.roles=controller\n" in props and f"listeners=CONTROLLER://127.0.0.1:{controller}\n" in props
    cluster_id = kbroker_cli("storage", "random-uuid").stdout.strip()
    for n in nodes:
        r = kbroker_cli("storage", "format", "-t", cluster_id, "-c", str(n.config_path))
        assert r.returncode == 0, r.stdout + r.stderr
    try:
        in_threads(lambda n: n.start(), nodes)
        check_one_controller_two_brokers(controller, {n.node_id: n.port for n in nodes[1:]}, "files")
        for n in nodes:
            assert REFUSAL not in n.log_text()
    finally:
        for n in nodes:
            n.kill()


# ---------------------------------------------------------------------- 3. a single node


class FileNode(BrokerProcess):
    """``kbroker serve --config FILE``, with the file's own listeners."""

    def __init__(self, config_path: Path, port: int):
        self.config_path = config_path
        super().__init__(config_path.parent / "logs", port=port)

    def command(self) -> list[str]:
        return [self.python, "-m", "kbroker", "serve", "--config", str(self.config_path)]


def single_node(tmp_path: Path, quorum: str) -> tuple[BrokerProcess, int]:
    """Kafka 4.3.1's stock config/server.properties on free ports (``quorum="stock"``: its
    controller.quorum.bootstrap.servers=localhost:CONTROLLER), or the same file with
    ``controller.quorum.voters=1@localhost:CONTROLLER`` instead (``quorum="voters"``)."""
    client, controller = free_port(), free_port()
    text = stock_properties(tmp_path / "logs", client, controller)
    if quorum == "voters":
        text = text.replace("controller.quorum.bootstrap.servers=", "controller.quorum.voters=1@")
    path = tmp_path / "server.properties"
    path.write_text(text)
    return FileNode(path, client), controller


@pytest.mark.parametrize("quorum", ["stock", "voters"])
def test_a_single_node_answers_on_its_controller_listener(tmp_path, quorum):
    node, controller_port = single_node(tmp_path, quorum)
    assert ("controller.quorum.voters=1@localhost:" in node.config_path.read_text()) == (quorum == "voters")
    node.start()
    try:
        controller = f"localhost:{controller_port}"
        st = status(controller)
        assert st["LeaderId"] == "1"
        assert json.loads(st["CurrentVoters"]) == [{"id": 1, "endpoints": [f"CONTROLLER://localhost:{controller_port}"]}]
        assert json.loads(st["CurrentObservers"]) == []
        features = kafka_tool("kafka-features", "--bootstrap-controller", controller, "describe")
        assert features.returncode == 0, features.stdout + features.stderr
        mv = [ln for ln in features.lines if ln.startswith("Feature: metadata.version")]
        assert len(mv) == 1 and "FinalizedVersionLevel: 4.4-IV2" in mv[0], features.stdout
        # still one node serving clients: it is the only broker and the partitions' replica
        assert [b.node_id for b in metadata(node.port).brokers] == [1]
        producer = KafkaProducer(bootstrap_servers=node.bootstrap, acks="all")
        assert producer.send("one-node", b"x").get(timeout=30).offset == 0
        producer.close()
        assert describe_quorum(node.port)[0].leader_id == 1
    finally:
        assert node.stop() == 0


# ---------------------------------------------------------------------- 4. first registration

def test_a_fresh_three_node_cluster_registers_without_a_refusal(tmp_path):
    cluster = Cluster(tmp_path, nodes=3)
    try:
        cluster.start_all()
        wait_for(lambda: sorted(b.node_id for b in metadata(cluster.nodes[1].port).brokers) == [1, 2, 3],
                 what="three registered brokers")
        text = "".join(n.log_text() for n in cluster.nodes.values())
        assert REFUSAL not in text
        assert "broker registration failed" not in text
        for b in (1, 2, 3):
            assert len(re.findall(rf"broker {b} registered with epoch", text)) == 1, b
    finally:
        cluster.shutdown()
