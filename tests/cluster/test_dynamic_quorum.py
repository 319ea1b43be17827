"""A dynamic metadata quorum (KIP-853) formed and changed as Kafka's documentation says, on
real processes, with Kafka 4.3.1's own ``kafka-metadata-quorum`` (issue 19):

1. ``kbroker storage random-uuid``; node 1 formatted ``--standalone``, nodes 2 and 3
   ``--no-initial-controllers``; all three name node 1 in ``controller.quorum.bootstrap.servers``;
2. a producer (acks=all) writes through node 1 the whole time;
3. nodes 2 and 3 start, join as observers, and ``kafka-metadata-quorum add-controller`` makes
   each a voter (its directory id read from its meta.properties); ``describe --status`` and
   ``kbroker cluster quorum`` show three voters with their directory ids;
4. a follower refuses a pre-vote (Vote v2, KIP-996) while its leader is alive, and its epoch
   does not move;
5. ``kafka-metadata-quorum remove-controller`` removes node 3; two voters remain; a
   broker-only node joins through the bootstrap servers and registers;
6. every acknowledged record is read back, in order.

Then: a voter restarted under another host name updates its entry (UpdateRaftVoter), and a
leader restarted on another port is followed at once (BeginQuorumEpoch v1's endpoints).
Each test brings the module's nodes to the state it needs, so any one of them runs alone
(``-k``) or on another worker.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from kbroker.wire import messages as w
from compat_tests.kafka_runner import kafka_libs

from .support import (AckedProducer, ConfiguredNode, call, describe_quorum, free_base_port, free_port, kafka_tool,
                      kbroker_cli, metadata, voters_of, wait_for)



@pytest.fixture(scope="module", autouse=True)
def _kafka_tools():
    kafka_libs()                # kafka-metadata-quorum's jars (fetched once if missing)


def dynamic_node(root: Path, node_id: int, client: int, controller: int | None, bootstrap: str):
    return ConfiguredNode(root, node_id, client, controller, {"controller.quorum.bootstrap.servers": bootstrap})


def quorum_tool(*args: str):
    return kafka_tool("kafka-metadata-quorum", *args)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("dynamic")
    base = free_base_port(8)
    bootstrap = f"127.0.0.1:{base + 1}"
    ns = {i: dynamic_node(root, i, base + 2 * (i - 1), base + 2 * (i - 1) + 1, bootstrap) for i in (1, 2, 3)}
    ns[4] = dynamic_node(root, 4, base + 6, None, bootstrap)      # a broker-only node
    cid = kbroker_cli("storage", "random-uuid").stdout.strip()
    for i, n in ns.items():
        flag = {1: ["--standalone"], 4: []}.get(i, ["--no-initial-controllers"])
        r = kbroker_cli("storage", "format", "-t", cid, "-c", str(n.config_path), *flag)
        assert r.returncode == 0, r.stderr
    yield ns
    for n in ns.values():
        if n.proc is not None and n.proc.poll() is None:
            n.kill()


def two_voters(nodes) -> None:
    """Nodes 1 and 2 running, both voters (whatever ran before on this module's nodes: the
    first test leaves them so; alone, a test gets node 2 added here), nodes 3 and 4 as they
    were."""
    n1, n2 = nodes[1], nodes[2]
    for n in (n1, n2):
        if not n.running():
            n.start()
    if 2 not in voters_of(n1.port):
        wait_for(lambda: any(o.replica_id == 2 for o in describe_quorum(n1.port, 2)[0].observers),
                 what="node 2 fetching as an observer")
        r = quorum_tool("--bootstrap-controller", f"127.0.0.1:{n1.controller_port}",
                        "--command-config", str(n2.config_path), "add-controller")
        assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: {1, 2} <= set(voters_of(n1.port)), what="nodes 1 and 2 voters")


def test_standalone_grown_to_three_and_shrunk_while_writes_go_on(nodes):
    n1, n2, n3 = nodes[1], nodes[2], nodes[3]
    n1.start()
    assert voters_of(n1.port) == {1: n1.directory_id}
    producer = AckedProducer(n1.bootstrap, "dq")
    producer.start()
    try:
        n2.start()
        n3.start()
        wait_for(lambda: len(producer.acked) > 20, what="writes before the change")
        for n in (n2, n3):
            r = quorum_tool("--bootstrap-controller", f"127.0.0.1:{n1.controller_port}",
                            "--command-config", str(n.config_path), "add-controller")
            assert r.returncode == 0, r.stdout + r.stderr
        expected = {i: n.directory_id for i, n in nodes.items() if n.controller_port}
        wait_for(lambda: voters_of(n1.port) == expected, what="three voters")
        status = quorum_tool("--bootstrap-server", n1.bootstrap, "describe", "--status").check().stdout
        line = next(x for x in status.splitlines() if x.startswith("CurrentVoters:"))
        voters = json.loads(line.split(":", 1)[1])
        assert {v["id"]: v["directoryId"] for v in voters} == expected
        mine = json.loads(kbroker_cli("cluster", "quorum", "-b", n2.bootstrap, "--json").stdout)
        assert {r["node"]: r["directory_id"] for r in mine["replicas"] if r["role"] != "observer"} == expected
        replication = quorum_tool("--bootstrap-server", n2.bootstrap, "describe", "--replication").check().stdout
        assert {ln.split()[0] for ln in replication.splitlines()[1:]} >= {"1", "2", "3"}

        # KIP-996 on the wire: node 2 follows a live leader, so it refuses a pre-vote
        epoch = describe_quorum(n1.port, 2)[0].leader_epoch
        R = w.VoteRequest
        pre = R(cluster_id=None, voter_id=2, topics=[R.TopicData(topic_name="__cluster_metadata", partitions=[
            R.PartitionData(partition_index=0, replica_epoch=epoch + 1, replica_id=3,
                            last_offset_epoch=epoch + 5, last_offset=1 << 40, pre_vote=True)])])
        answer = call(n2.controller_port, 52, 2, pre).topics[0].partitions[0]
        assert answer.vote_granted is False and answer.leader_epoch == epoch
        assert describe_quorum(n1.port, 2)[0].leader_epoch == epoch

        # Kafka's errors for what the rules refuse, through a follower's client listener
        # (forwarded to the leader) and at the leader's controller listener
        from kbroker.raft.control import uuid_from_kafka
        A, D, U = w.AddRaftVoterRequest, w.RemoveRaftVoterRequest, w.UpdateRaftVoterRequest
        dup = A(cluster_id=None, timeout_ms=5000, voter_id=2, voter_directory_id=uuid_from_kafka(n2.directory_id),
                listeners=[A.Listener(name="CONTROLLER", host="127.0.0.1", port=n2.controller_port)],
                ack_when_committed=True)
        assert call(n3.port, 80, 1, dup).error_code == 126                    # DUPLICATE_VOTER
        gone = D(cluster_id=None, voter_id=7, voter_directory_id=uuid_from_kafka(n2.directory_id))
        assert call(n1.controller_port, 81, 0, gone).error_code == 127       # VOTER_NOT_FOUND
        assert call(n2.controller_port, 81, 0, gone).error_code == 6         # not the leader
        upd = U(cluster_id=None, current_leader_epoch=epoch - 1, voter_id=2,
                voter_directory_id=uuid_from_kafka(n2.directory_id), listeners=dup.listeners,
                k_raft_version_feature=U.KRaftVersionFeature(min_supported_version=0, max_supported_version=1))
        assert call(n1.controller_port, 82, 0, upd).error_code == 74         # FENCED_LEADER_EPOCH
        upd.current_leader_epoch = epoch
        assert call(n1.controller_port, 82, 0, upd).error_code == 0          # same endpoints

        r = quorum_tool("--bootstrap-controller", f"127.0.0.1:{n1.controller_port}", "remove-controller",
                        "--controller-id", "3", "--controller-directory-id", n3.directory_id)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_for(lambda: set(voters_of(n1.port)) == {1, 2}, what="two voters")
        # a broker-only node finds the quorum through controller.quorum.bootstrap.servers
        nodes[4].start()
        wait_for(lambda: 4 in {b.node_id for b in metadata(n1.port).brokers}, what="broker 4 registered")
        from kbroker.raft.control import uuid_to_kafka
        # KIP-853: an observer names its metadata log dir in Fetch v17 ReplicaDirectoryId
        wait_for(lambda: {o.replica_id: uuid_to_kafka(o.replica_directory_id)
                          for o in describe_quorum(n1.port, 2)[0].observers}.get(4) == nodes[4].directory_id,
                 what="observer 4 with its directory id")
        before = len(producer.acked)
        wait_for(lambda: len(producer.acked) > before + 20, what="writes after the change")
    finally:
        producer.stopped.set()
        producer.join(60)
    consumer = KafkaConsumer(bootstrap_servers=n1.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    tp = TopicPartition("dq", 0)
    consumer.assign([tp])
    got = [int(m.value) for m in consumer]
    consumer.close()
    assert set(producer.acked) <= set(got), "an acknowledged record is missing"
    assert got == sorted(got), "records out of order"



def test_a_voter_restarted_with_another_endpoint_updates_it(nodes):
    """KIP-853: a voter whose controller listener differs from its VotersRecord entry sends
    UpdateRaftVoter (82) to the leader after it starts; describe then shows the new endpoint
    (the port stays: the other voter reaches it under either name)."""
    n1, n2 = nodes[1], nodes[2]
    two_voters(nodes)
    n2.stop()
    port = n2.controller_port
    text = n2.config_path.read_text().replace(f"CONTROLLER://127.0.0.1:{port}", f"CONTROLLER://localhost:{port}")
    n2.config_path.write_text(text)
    n2.start()

    def endpoint_of_2():
        part, resp = describe_quorum(n1.port, 2)
        if part is None or part.error_code:
            return None
        return {(lst.host, lst.port) for nd in resp.nodes if nd.node_id == 2 for lst in nd.listeners}

    wait_for(lambda: endpoint_of_2() == {("localhost", port)}, what="node 2's new endpoint recorded")
    status = quorum_tool("--bootstrap-server", n1.bootstrap, "describe", "--status").check().stdout
    assert f"localhost:{port}" in status


def test_a_leader_restarted_on_another_port_is_followed_at_once(nodes):
    """KIP-853 BeginQuorumEpoch v1: the leader names its endpoints. With two voters, a leader
    restarted on a new controller port is unreachable at its recorded address, so the other
    voter cannot win an election; the restarted node wins, and its BeginQuorumEpoch tells the
    other where to fetch (with v0 the quorum could never commit again: the follower would
    keep calling the old port, and the new entry needs that commit)."""
    n1, n2 = nodes[1], nodes[2]
    two_voters(nodes)
    # the earlier tests' other nodes find the quorum through node 1's first controller port
    # only (controller.quorum.bootstrap.servers): once it moves they are lost, and a client
    # that asked one of them for the controller would wait on it. Not part of this scenario.
    for n in (nodes[3], nodes[4]):
        if n.running():
            n.stop()
    wait_for(lambda: set(voters_of(n1.port)) == {1, 2}, what="two voters")
    wait_for(lambda: {b.node_id for b in metadata(n1.port).brokers} == {1, 2},
             what="only nodes 1 and 2 serving")
    leader = describe_quorum(n1.port)[0].leader_id
    moved, other = nodes[leader], nodes[3 - leader]
    old_port, new_port = moved.controller_port, free_port()
    moved.stop()
    text = moved.config_path.read_text().replace(f":{old_port}\n", f":{new_port}\n")
    moved.config_path.write_text(text)
    moved.controller_port = new_port
    moved.start()

    def moved_endpoint():
        part, resp = describe_quorum(other.port, 2)
        if part is None or part.error_code or part.leader_id < 0:
            return None
        return {lst.port for nd in resp.nodes if nd.node_id == moved.node_id for lst in nd.listeners}
    wait_for(lambda: moved_endpoint() == {new_port}, timeout=60, what="the moved voter's new endpoint recorded")
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=other.bootstrap, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic("after-move", 1, 1)])        # the quorum commits again
    finally:
        admin.close()
    # answered once committed; the other voter serves it once it has fetched and applied it
    wait_for(lambda: "after-move" in {t.name for t in metadata(other.port).topics},
             what="the topic created after the move in the other voter's metadata")


def test_auto_join_adds_controllers_and_replaces_a_reformatted_one(tmp_path):
    """``controller.quorum.auto.join.enable`` (Kafka's QuorumConfig autoJoin): controllers
    formatted ``--no-initial-controllers`` become voters by themselves; one whose disk is
    replaced (a new directory id behind the same node id) first removes the entry of its old
    disk, then adds itself."""
    import shutil
    base = free_base_port(6)
    bootstrap = f"127.0.0.1:{base + 1}"
    auto = {"controller.quorum.bootstrap.servers": bootstrap, "controller.quorum.auto.join.enable": "true"}
    ns = {i: ConfiguredNode(tmp_path, i, base + 2 * (i - 1), base + 2 * (i - 1) + 1, auto) for i in (1, 2, 3)}
    cid = kbroker_cli("storage", "random-uuid").stdout.strip()

    def fmt(i):
        r = kbroker_cli("storage", "format", "-t", cid, "-c", str(ns[i].config_path),
                        "--standalone" if i == 1 else "--no-initial-controllers")
        assert r.returncode == 0, r.stderr
    for i in ns:
        fmt(i)
    try:
        ns[1].start()
        ns[2].start()
        ns[3].start()
        wait_for(lambda: voters_of(ns[1].port) == {i: n.directory_id for i, n in ns.items()}, timeout=60,
                 what="nodes 2 and 3 joined by themselves")
        old = ns[3].directory_id
        ns[3].stop()
        shutil.rmtree(ns[3].data_dir)
        fmt(3)
        assert ns[3].directory_id != old
        ns[3].start()
        wait_for(lambda: voters_of(ns[1].port) == {i: n.directory_id for i, n in ns.items()}, timeout=60,
                 what="node 3's new disk in place of its old one")
        # node 3 logs each step when the leader's answer reaches it, which can be after the
        # leader (asked above) has committed it
        wait_for(lambda: "auto-join: add voter 3" in ns[3].log_text(), timeout=60,
                 what="node 3 logging the answer to its AddRaftVoter")
        log = ns[3].log_text()
        assert "auto-join: remove voter 3" in log and "auto-join: add voter 3" in log, log[-3000:]
    finally:
        for n in ns.values():
            if n.running():
                n.kill()
