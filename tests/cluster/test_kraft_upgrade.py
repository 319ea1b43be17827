"""A static metadata quorum upgraded to ``kraft.version`` 1 on real processes, with Kafka
4.3.1's own tools (issue 19, KAFKA-16538), as Kafka's documentation says:

1. three combined nodes with ``controller.quorum.voters``, each formatted with ``kbroker
   storage format``; only nodes 1 and 2 start at first;
2. on a static quorum ``add-controller`` is refused, and so is ``kafka-features upgrade
   --feature kraft.version=1`` while node 3 has never told the leader its directory id
   ("not all of the voters support it");
3. node 3 starts and a producer (acks=all) writes the whole time; ``upgrade --dry-run``
   passes once every voter has sent UpdateRaftVoter to the leader, then the upgrade itself;
4. ``kafka-features describe`` shows ``kraft.version`` 1 and ``kafka-metadata-quorum describe
   --status`` every voter's directory id (those of the nodes' meta.properties);
5. ``remove-controller`` takes node 3 out and ``add-controller`` puts it back; node 3
   restarted from its static configuration is a voter of the dynamic quorum;
6. every acknowledged record is read back, in order.

A second test asks a leader to add voters that cannot be: it asks a new voter's ApiVersions
first (Kafka's AddVoterHandler), so one that does not answer is REQUEST_TIMED_OUT and one
whose ``kraft.version`` range lacks level 1 is INVALID_REQUEST.
"""
from __future__ import annotations

import json
import socket
import struct
import threading

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import NewTopic

from compat_tests.kafka_runner import kafka_libs
from kbroker.raft.control import uuid_from_kafka
from kbroker.wire import messages as w
from kbroker.wire.protocol import decode_request, encode_response
from tests.support.parallel import in_threads

from .support import (AckedProducer, ConfiguredNode, call, describe_quorum, free_base_port, free_port,
                      kafka_tool, kbroker_cli, voters_of, wait_for)


@pytest.fixture(scope="module", autouse=True)
def _kafka_tools():
    kafka_libs()


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("kraft-upgrade")
    base = free_base_port(6)
    voters = ",".join(f"{i}@127.0.0.1:{base + 2 * (i - 1) + 1}" for i in (1, 2, 3))
    ns = {i: ConfiguredNode(root, i, base + 2 * (i - 1), base + 2 * (i - 1) + 1,
                            {"controller.quorum.voters": voters, "default.replication.factor": 3})
          for i in (1, 2, 3)}
    cid = kbroker_cli("storage", "random-uuid").stdout.strip()
    for n in ns.values():
        r = kbroker_cli("storage", "format", "-t", cid, "-c", str(n.config_path))
        assert r.returncode == 0, r.stderr
    yield ns
    for n in ns.values():
        if n.running():
            n.kill()


def features(controller: str) -> dict[str, str]:
    """`kafka-features describe`: feature -> finalized level."""
    out = kafka_tool("kafka-features", "--bootstrap-controller", controller, "describe").check().stdout
    levels = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "Feature:":
            levels[parts[1]] = parts[parts.index("FinalizedVersionLevel:") + 1]
    return levels


def status_voters(bootstrap: str) -> dict[int, str | None]:
    """`kafka-metadata-quorum describe --status`: voter id -> directory id (None if not shown)."""
    out = kafka_tool("kafka-metadata-quorum", "--bootstrap-server", bootstrap, "describe", "--status").check()
    line = next(x for x in out.stdout.splitlines() if x.startswith("CurrentVoters:"))
    return {v["id"]: v.get("directoryId") for v in json.loads(line.split(":", 1)[1])}


def test_a_static_quorum_upgraded_while_a_producer_runs(nodes):
    n1, n2, n3 = nodes[1], nodes[2], nodes[3]
    controller = f"127.0.0.1:{n1.controller_port}"
    in_threads(lambda n: n.start(), [n1, n2])       # two of three voters: a majority
    assert features(controller)["kraft.version"] == "0"
    assert set(status_voters(n1.bootstrap).values()) == {None}      # no directory ids yet

    # static: no voter changes; and node 3 never told a leader who it is
    r = kafka_tool("kafka-metadata-quorum", "--bootstrap-controller", controller, "--command-config",
                   str(n3.config_path), "add-controller")
    assert r.returncode != 0 and "UnsupportedVersion" in r.stdout + r.stderr, r.stdout + r.stderr
    r = kafka_tool("kafka-features", "--bootstrap-controller", controller, "upgrade", "--feature",
                   "kraft.version=1")
    assert r.returncode != 0 and "because not all of the voters support it" in r.stdout, r.stdout + r.stderr
    assert features(controller)["kraft.version"] == "0"

    n3.start()
    admin = KafkaAdminClient(bootstrap_servers=n1.bootstrap)
    admin.create_topics([NewTopic("upgraded", 1, 3)])
    admin.close()
    producer = AckedProducer(n1.bootstrap, "upgraded")
    producer.start()
    try:
        wait_for(lambda: len(producer.acked) > 20, what="writes before the upgrade")
        wait_for(lambda: "kraft.version can be upgraded to 1." in kafka_tool(
            "kafka-features", "--bootstrap-controller", controller, "upgrade", "--feature", "kraft.version=1",
            "--dry-run").stdout, timeout=60, what="every voter known to the leader")
        assert features(controller)["kraft.version"] == "0"            # the dry run wrote nothing
        r = kafka_tool("kafka-features", "--bootstrap-controller", controller, "upgrade", "--feature",
                       "kraft.version=1").check()
        assert "kraft.version was upgraded to 1." in r.stdout, r.stdout
        expected = {i: n.directory_id for i, n in nodes.items()}
        wait_for(lambda: features(f"127.0.0.1:{n3.controller_port}")["kraft.version"] == "1",
                 what="kraft.version 1 on node 3")
        assert status_voters(n2.bootstrap) == expected
        assert voters_of(n3.port) == expected
        before = len(producer.acked)
        wait_for(lambda: len(producer.acked) > before + 20, what="writes after the upgrade")

        # dynamic now: node 3 out, then back in
        kafka_tool("kafka-metadata-quorum", "--bootstrap-controller", controller, "remove-controller",
                   "--controller-id", "3", "--controller-directory-id", n3.directory_id).check()
        wait_for(lambda: set(voters_of(n1.port)) == {1, 2}, what="two voters")
        wait_for(lambda: kafka_tool("kafka-metadata-quorum", "--bootstrap-controller", controller,
                                    "--command-config", str(n3.config_path), "add-controller").returncode == 0,
                 timeout=60, what="node 3 added back")
        wait_for(lambda: voters_of(n1.port) == expected, what="three voters again")

        # a restart from the static configuration: the log says dynamic, node 3 still votes
        n3.stop()
        n3.start()
        leader = describe_quorum(n1.port)[0].leader_id

        def three_follow():
            p, _ = describe_quorum(nodes[leader].port)
            ends = {v.replica_id: v.log_end_offset for v in p.current_voters}
            return p.error_code == 0 and ends.get(3, -1) >= p.high_watermark and p.leader_id == leader
        wait_for(three_follow, what="node 3 a caught-up voter after its restart")
        assert voters_of(n3.port) == expected
        before = len(producer.acked)
        wait_for(lambda: len(producer.acked) > before + 20, what="writes after the changes")
    finally:
        producer.stopped.set()
        producer.join(60)
    consumer = KafkaConsumer(bootstrap_servers=n2.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition("upgraded", 0)])
    got = [int(m.value) for m in consumer]
    consumer.close()
    assert set(producer.acked) <= set(got), "an acknowledged record is missing"
    assert got == sorted(got), "records out of order"


class OldController:
    """A stand-in for a controller that cannot serve ``kraft.version`` 1 (Kafka before 3.9):
    a listener answering ApiVersions with ``kraft.version`` 0-0, and nothing else."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.asked = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                try:
                    size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
                    header, _ = decode_request(conn.recv(size, socket.MSG_WAITALL))
                except (OSError, struct.error):
                    continue
                R = w.ApiVersionsResponse
                body = R(error_code=0, api_keys=[R.ApiVersion(api_key=18, min_version=0, max_version=3)],
                         supported_features=[R.SupportedFeatureKey(name="kraft.version", min_version=0,
                                                                   max_version=0)])
                self.asked += 1
                conn.sendall(b"".join(encode_response(18, header.api_version, header.correlation_id, body)))

    def close(self) -> None:
        self.server.close()


def test_the_leader_asks_a_new_voters_api_versions_first(tmp_path):
    """On a ``--standalone`` controller (a dynamic quorum of one)."""
    client, controller = free_port(), free_port()
    node = ConfiguredNode(tmp_path, 1, client, controller,
                          {"controller.quorum.bootstrap.servers": f"127.0.0.1:{controller}"})
    cid = kbroker_cli("storage", "random-uuid").stdout.strip()
    r = kbroker_cli("storage", "format", "-t", cid, "-c", str(node.config_path), "--standalone")
    assert r.returncode == 0, r.stderr
    node.start()
    A = w.AddRaftVoterRequest

    def add(port: int):
        return call(controller, 80, 1, A(
            cluster_id=None, timeout_ms=3000, voter_id=9,
            voter_directory_id=uuid_from_kafka("d1AAAAAAAAAAAAAAAAAACQ"),
            listeners=[A.Listener(name="CONTROLLER", host="127.0.0.1", port=port)], ack_when_committed=True),
            timeout=30)
    old = OldController()
    try:
        assert add(free_port()).error_code == 7               # nobody listens: REQUEST_TIMED_OUT
        refused = add(old.port)
        assert refused.error_code == 42, refused              # INVALID_REQUEST
        assert "doesn't support the finalized version 1" in refused.error_message
        assert old.asked == 1
        assert voters_of(client) == {1: node.directory_id}
    finally:
        old.close()
        node.stop()
