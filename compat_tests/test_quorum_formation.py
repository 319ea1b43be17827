"""Metadata quorums formed and changed as Kafka's operations documentation says, run on both
targets with the same steps and the same assertions (issue 19):

1. **Formation**: three combined nodes, each with its own server.properties naming the three
   voters in `controller.quorum.voters`; `random-uuid`, then `format -t ID -c FILE` on each
   node, start; a replicated topic takes and returns records (acks=all), and
   `kafka-metadata-quorum describe --status / --replication` name three voters and a leader.
   On the kbroker target the directories are formatted by Kafka's own `kafka-storage`; on the
   Kafka target by `kbroker storage` (each broker starts on the other's format).
2. **Grow and shrink (KIP-853)**: node 1 formatted `--standalone`, nodes 2 and 3
   `--no-initial-controllers` with `controller.quorum.bootstrap.servers`; while a producer
   writes (acks=all), `kafka-metadata-quorum add-controller` makes 2 and 3 voters, then
   `remove-controller` takes them out again; `describe --replication` after each step shows the
   same voters and roles on both targets; every acknowledged record is read back in order.
3. **A partitioned follower**: every node runs in its own test host (`tests/support/netns.py`:
   a network namespace with its own address, bound, advertised, named in
   `controller.quorum.voters` and announced as leader); a follower cut off from both others by
   the hosts' packet filters, then healed, comes back without a new epoch, thanks to pre-vote
   (KIP-996). The cut is proven on both targets: the leader's DescribeQuorum shows the
   victim's log end offset stalled while the leader writes.
4. **A foreign cluster id**: a fourth node formatted with another cluster id never joins; Kafka
   refuses it (INCONSISTENT_CLUSTER_ID), kbroker logs one line naming the error.
5. **Another voter list**: a fourth node that believes it is a voter (its
   `controller.quorum.voters` lists 1,2,3,4) is refused, follows the leader as an observer and
   changes neither the leader nor its epoch nor the voters.
6. **Upgrading the static quorum (KAFKA-16538)**: the controller listener serves every KRaft RPC
   version Kafka 4.3.1 defines; `kafka-features upgrade --release-version 4.0 [--dry-run]`
   upgrades kraft.version to 1 (as Kafka 4.3.1's tool includes it in a release's levels), every
   voter then has its directory id, and `remove-controller` / `add-controller` work.

Scenarios 1 and 3 to 6 share one module-scoped three-node cluster per target (about 60 s on
Kafka, 45 s on kbroker; the upgrade runs last); scenario 2 starts three more JVMs and runs a producer through four
voter changes (about 55 s on Kafka), so it is marked `slow`: `make compat` runs it, `make test`
does not.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from compat_tests import cli_fork
from compat_tests.cli import run_tool
from compat_tests.helpers import read_until
from compat_tests.kafka_runner import (BROKER_LOG4J, BROKER_MAIN, class_sharing, java_command,
                                       publish_class_archive, random_cluster_id)
from compat_tests.runner import SINGLE_NODE_CONFIG, BrokerProcess, free_port, tail
from kbroker.wire import messages as w
from tests.cluster.support import (AckedProducer as Producer, assert_fetches_stalled, call,
                                   describe_quorum, wait_for)
from tests.support.netns import TestNet
from tests.support.parallel import in_threads
from tests.support.tap import Tap

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"

# Shorter quorum timers, the same on both targets (Kafka's own integration tests shorten them too)
QUORUM_TIMERS = {
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "controller.quorum.request.timeout.ms": "2000",
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
}


def deadline_wait(check, what: str, timeout: float = 90.0):
    """``check()`` until it is true; any error is retried until the deadline."""
    return wait_for(check, timeout, 0.5, what, errors=(Exception,))


class QuorumNode(BrokerProcess):
    """One combined node of a multi-node quorum, on either target, started from its own
    server.properties (written once; formatting is the scenario's explicit step). With
    ``net`` it runs inside test host ``node_id`` and listens at that host's address."""

    start_timeout = 150.0
    stop_timeout = 45.0

    def __init__(self, target: str, root: Path, node_id: int, quorum: dict[str, str],
                 net: TestNet | None = None):
        super().__init__(root / f"node-{node_id}")
        self.target = target
        self.node_id = node_id
        self.net = net
        self.host = net.address(node_id) if net is not None else HOST
        self.need_metadata = target == "kafka"
        self.controller_port = quorum.pop("controller_port")
        self.config_path = self.workdir / "server.properties"
        self.logs_dir = self.workdir / "logs"
        props = {
            "process.roles": "broker,controller", "node.id": str(node_id),
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir), **SINGLE_NODE_CONFIG, **QUORUM_TIMERS, **quorum}
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    @property
    def addr(self) -> tuple[str, int]:
        return self.host, self.port

    def command(self) -> list[str]:
        enter = self.net.enter(self.node_id) if self.net is not None else []
        if self.target == "kbroker":
            return enter + [sys.executable, "-m", "kbroker", "serve", "--config", str(self.config_path)]
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        # the brokers' class archive (kafka_runner's class data sharing: the same classes,
        # mapped instead of read from the jars), written by this node at its stop if there is
        # none yet; published (or dropped) by stop() and kill()
        cds, self._class_dump = class_sharing("broker")
        return enter + java_command(BROKER_MAIN, [str(self.config_path)], heap="512m", log4j=BROKER_LOG4J,
                            extra_jvm=[f"-Dkafka.logs.dir={self.logs_dir}", "-Xms128m",
                                       "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", *cds])

    def stop(self, timeout: float | None = None) -> int | None:
        try:
            return super().stop(timeout)
        finally:
            self._publish_class_dump()

    def kill(self) -> int | None:
        try:
            return super().kill()
        finally:
            self._publish_class_dump()

    def _publish_class_dump(self) -> None:
        publish_class_archive("broker", getattr(self, "_class_dump", None))
        self._class_dump = None

    def env(self) -> dict[str, str]:
        env = super().env()
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def start_hint(self) -> str:
        log = self.logs_dir / "server.log"
        return f"--- {log} ---\n{tail(log)}\n" if log.exists() else ""

    def log_text(self) -> str:
        text = self.output_path.read_text(errors="replace")
        log = self.logs_dir / "server.log"
        return text + (log.read_text(errors="replace") if log.exists() else "")

    def broker_only(self) -> "QuorumNode":
        """Made with ``controller_port: None`` and ``process.roles=broker``: its listeners lose
        the CONTROLLER entry (a broker-only node must not have one, as in Kafka)."""
        props = self.config_path.read_text().replace(f",CONTROLLER://{self.host}:None", "")
        self.config_path.write_text(props)
        return self

    def controller_only(self) -> "QuorumNode":
        """``process.roles=controller``: its listeners keep only the CONTROLLER entry (a
        controller-only node has no client listener, as in Kafka), which is then the port it
        is probed on (ApiVersions; a controller serves no Metadata)."""
        props = [p for p in self.config_path.read_text().splitlines()
                 if not p.startswith(("process.roles=", "listeners=", "advertised.listeners=",
                                      "inter.broker.listener.name="))]
        props += ["process.roles=controller", f"listeners=CONTROLLER://{HOST}:{self.controller_port}"]
        self.config_path.write_text("\n".join(props) + "\n")
        self.port, self.need_metadata = self.controller_port, False
        return self

    @property
    def directory_id(self) -> str:
        props = (self.data_dir / "meta.properties").read_text().splitlines()
        return next(line.split("=", 1)[1] for line in props if line.startswith("directory.id="))


def storage_format(tool: str, node: QuorumNode, cluster_id: str, *flags: str) -> None:
    """`format -t ID -c FILE [flags]` with Kafka's `kafka-storage` (in the resident tool JVM) or
    `kbroker storage` (`python -m kbroker`, forked from the resident Python: compat_tests/cli_fork.py)."""
    args = ["format", "-t", cluster_id, "-c", str(node.config_path), *flags]
    if tool == "kafka":
        run_tool("kafka-storage", args, timeout=120).check()
        return
    r = cli_fork.run(["storage", *args], None, dict(os.environ), ROOT, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def start_all(nodes: list[QuorumNode]) -> None:
    """Start the nodes at once (a node of a forming quorum serves only once a majority runs):
    launched from this thread (children die with the thread that spawned them), awaited in
    threads."""
    for n in nodes:
        n.launch()
    in_threads(lambda n: n.await_serving(), nodes)


def replication(bootstrap: str) -> dict[int, str]:
    """`describe --replication` as {node id: Leader | Follower | Observer}."""
    out = run_tool("kafka-metadata-quorum", ["--bootstrap-server", bootstrap, "describe",
                                             "--replication"], timeout=120).check()
    header, *rows = out.lines
    assert header.split()[0] == "NodeId" and header.split()[-1] == "Status", header
    return {int(r.split()[0]): r.split()[-1] for r in rows}


def status(bootstrap: str) -> dict[str, str]:
    out = run_tool("kafka-metadata-quorum", ["--bootstrap-server", bootstrap, "describe",
                                             "--status"], timeout=120).check()
    return {k.strip(): v.strip() for k, v in (ln.split(":", 1) for ln in out.lines)}


def voters_in(replicas: dict[int, str]) -> set[int]:
    return {i for i, role in replicas.items() if role in ("Leader", "Follower")}


def one_leader(replicas: dict[int, str]) -> bool:
    return list(replicas.values()).count("Leader") == 1



def read_all(bootstrap: str, topic: str) -> list[int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition(topic, 0)])
    got = [int(m.value) for m in consumer]
    consumer.close()
    return got


def stop_all(nodes) -> None:
    for n in nodes:
        if n.is_running():
            n.kill()


# ------------------------------------------------------------------------ 1. static formation

@pytest.fixture(scope="module")
def static_cluster(target, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"static-{target}")
    # hosts 1-3 hold the voters (the partition test cuts between them); host 4 the extra node
    # of the refusal scenarios
    net = TestNet(4)
    ports = {i: free_port() for i in (1, 2, 3)}
    voters = ",".join(f"{j}@{net.address(j)}:{ports[j]}" for j in ports)
    nodes = [QuorumNode(target, root, i, {"controller_port": ports[i],
                                          "controller.quorum.voters": voters,
                                          "default.replication.factor": "3"}, net)
             for i in (1, 2, 3)]
    tool = "kafka" if target == "kbroker" else "kbroker"     # each starts on the other's format
    cluster_id = random_cluster_id()
    for n in nodes:
        # at 4.0 (kraft.version 0): the last test upgrades the quorum with --release-version 4.0
        storage_format(tool, n, cluster_id, "--release-version", "4.0")
    try:
        start_all(nodes)
        yield nodes, cluster_id
    finally:
        stop_all(nodes)
        net.close()


def test_three_voters_formed_from_formatted_directories(static_cluster):
    nodes, cluster_id = static_cluster
    bootstrap = ",".join(n.bootstrap_servers for n in nodes)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert admin.describe_cluster()["cluster_id"] == cluster_id
        admin.create_topics([NewTopic("formed", 1, 3)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=10)
    deadline_wait(lambda: producer.send("formed", b"0").get(timeout=20), "a first write")
    for i in range(1, 10):
        producer.send("formed", str(i).encode()).get(timeout=30)
    producer.close()
    got = read_all(nodes[2].bootstrap_servers, "formed")
    assert got[-9:] == list(range(1, 10))

    replicas = deadline_wait(lambda: (r := replication(nodes[0].bootstrap_servers))
                             and voters_in(r) == {1, 2, 3} and one_leader(r) and r, "three voters")
    assert voters_in(replicas) == {1, 2, 3}
    st = status(nodes[1].bootstrap_servers)
    assert st["ClusterId"] == cluster_id
    assert {v["id"] for v in json.loads(st["CurrentVoters"])} == {1, 2, 3}
    assert int(st["LeaderId"]) in (1, 2, 3)


def test_a_partitioned_follower_returns_without_a_new_epoch(static_cluster):
    """A follower cut off from both other voters for longer than its fetch timeout, then healed:
    with pre-vote (KIP-996) it changes nothing; the leader and its epoch stay (issue 19). The
    cut must bite: Kafka 4.3's follower fetches from the endpoint its leader announces, which
    is its host's address like every other, so while the cut holds the leader's DescribeQuorum
    shows the victim's log end offset stalled although the leader writes (a topic is created
    through the leader), and afterwards the victim catches up."""
    nodes, _ = static_cluster
    net = nodes[0].net

    def leader_and_epoch(asked=nodes):
        for n in asked:
            try:
                p, _ = describe_quorum(n.addr)
            except OSError:     # a cut-off Kafka broker forwards DescribeQuorum and times out
                continue
            if p is not None and p.error_code == 0 and p.leader_id > 0:
                return p.leader_id, p.leader_epoch
        return None
    leader, epoch = deadline_wait(leader_and_epoch, "a leader")
    lead = nodes[leader - 1]
    victim = next(n for n in nodes if n.node_id != leader)

    def write():    # CreateTopics v7 at the leader's broker (Kafka forwards it to its controller)
        R = w.CreateTopicsRequest
        call(lead.addr, 19, 7, R(topics=[R.CreatableTopic(
            name="during-partition", num_partitions=1, replication_factor=2, assignments=[],
            configs=[])], timeout_ms=15000, validate_only=False), timeout=20)
    net.isolate(victim.node_id)
    try:
        # > 2 fetch timeouts: the victim looks for a new leader meanwhile
        assert_fetches_stalled(lead.addr, leader, victim.node_id, hold=4.5, write=write)
        assert leader_and_epoch([lead]) == (leader, epoch)
    finally:
        net.heal()

    def victim_follows():
        p, _ = describe_quorum(lead.addr)
        ends = {v.replica_id: v.log_end_offset for v in p.current_voters}
        return p.error_code == 0 and ends.get(victim.node_id, -1) >= p.high_watermark
    deadline_wait(victim_follows, "the victim back as a follower")
    assert leader_and_epoch([lead]) == (leader, epoch), "the returning node forced an election"


def test_a_raft_fetch_of_another_cluster_is_refused_as_a_whole(static_cluster):
    """On the wire: a voter answers a metadata-log Fetch naming another cluster with
    INCONSISTENT_CLUSTER_ID at the top and no partitions (what the fetching node logs)."""
    from kbroker.raft import messages as m
    from kbroker.raft.wire_map import FETCH, VERSIONS, fetch_request_to_wire
    nodes, _ = static_cluster
    req = fetch_request_to_wire(m.FetchRequest(
        replica_id=4, current_leader_epoch=0, fetch_offset=0, last_fetched_epoch=0,
        log_start_offset=0, max_wait_ms=0, max_bytes=1024, correlation_id=0), random_cluster_id())
    resp = call((nodes[0].host, nodes[0].controller_port), 1, VERSIONS[FETCH], req)  # as replicas send
    assert (resp.error_code, list(resp.responses)) == (104, [])


def test_a_node_of_another_cluster_is_refused(static_cluster, target, tmp_path):
    """A fourth (broker-only) node formatted with another cluster id never registers; Kafka
    and kbroker both name INCONSISTENT_CLUSTER_ID in its log."""
    nodes, cluster_id = static_cluster
    voters = ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in nodes)
    stray = QuorumNode(target, tmp_path, 4, {"controller_port": None,
                                             "controller.quorum.voters": voters,
                                             "process.roles": "broker"}, nodes[0].net).broker_only()
    storage_format(target, stray, random_cluster_id())
    try:
        stray.launch()          # not awaited: it must never register
        deadline_wait(lambda: "INCONSISTENT_CLUSTER_ID" in stray.log_text()
                      or "InconsistentClusterId" in stray.log_text(), "the refusal in the log",
                      timeout=60)
        admin = KafkaAdminClient(bootstrap_servers=nodes[0].bootstrap_servers)
        try:
            assert {b["broker_id"] for b in admin.describe_cluster()["brokers"]} == {1, 2, 3}
        finally:
            admin.close()
        if target == "kbroker":   # one line per refusing voter, with the fix (Kafka: one per fetch)
            lines = [ln for ln in stray.log_text().splitlines() if "INCONSISTENT_CLUSTER_ID" in ln]
            assert 1 <= len(lines) <= 3, lines
            assert "format every node with the same id" in lines[0], lines[0]
    finally:
        stray.kill()


def test_a_node_with_a_longer_voter_list_does_not_disturb_the_quorum(static_cluster, target, tmp_path):
    """A fourth combined node whose controller.quorum.voters names itself too (1,2,3,4)
    learns the leader and follows it as an observer; the leader, its epoch and the voters
    {1,2,3} stay (issue 19). How it learns differs: kbroker's node asks for pre-votes, the
    voters refuse with INCONSISTENT_VOTER_SET and the leader they name (it logs one line per
    refusing voter, with the fix); Kafka 4.3's unattached node fetches from the voters it
    knows and is told the leader before its election timeout."""
    nodes, cluster_id = static_cluster
    leader_port = None

    def leader_and_epoch():
        nonlocal leader_port
        for n in nodes:
            try:
                p, _ = describe_quorum(n.addr)
            except OSError:
                continue
            if p is not None and p.error_code == 0 and p.leader_id > 0:
                leader_port = nodes[p.leader_id - 1].addr
                return p.leader_id, p.leader_epoch
        return None
    before = deadline_wait(leader_and_epoch, "a leader")
    port = free_port()
    net = nodes[0].net
    voters = ",".join([f"{n.node_id}@{n.host}:{n.controller_port}" for n in nodes] + [f"4@{net.address(4)}:{port}"])
    other = QuorumNode(target, tmp_path, 4, {"controller_port": port, "controller.quorum.voters": voters}, net)
    storage_format(target, other, cluster_id)
    try:
        other.launch()

        def observed():
            p, _ = describe_quorum(leader_port)
            return p.error_code == 0 and 4 in {o.replica_id for o in p.observers} and p
        quorum = deadline_wait(observed, "node 4 following the leader as an observer", timeout=120)
        assert sorted(v.replica_id for v in quorum.current_voters) == [1, 2, 3]
        assert leader_and_epoch() == before
        if target == "kbroker":
            lines = [ln for ln in other.log_text().splitlines() if "INCONSISTENT_VOTER_SET" in ln]
            assert 1 <= len(lines) <= 3, lines
            assert "give every node the same controller.quorum.voters" in lines[0], lines[0]
    finally:
        other.kill()


# ------------------------------------------------------------------------ 6. the upgrade

RAFT_APIS = (1, 52, 53, 54, 55, 59, 80, 81, 82)   # Fetch, Vote … UpdateRaftVoter


def test_the_controller_listener_serves_kafkas_raft_versions(static_cluster):
    """Every version of the KRaft RPCs that Kafka 4.3.1 defines is served on the controller
    listener (Kafka's voters send the highest both sides serve: Vote v2, BeginQuorumEpoch and
    EndQuorumEpoch v1, Fetch v18, FetchSnapshot v1), and kraft.version 0-1 is supported."""
    nodes, _ = static_cluster

    def api_versions(version):
        return call((nodes[0].host, nodes[0].controller_port), 18, version, w.ApiVersionsRequest(
            client_software_name="compat", client_software_version="1"))
    resp = api_versions(4)
    served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    for key in RAFT_APIS:
        valid = w.request_class(key)._message.valid
        assert served.get(key) == (max(valid.low, 4 if key == 1 else 0), valid.high), key
    assert {f.name: (f.min_version, f.max_version) for f in resp.supported_features}["kraft.version"] == (0, 1)
    # KIP-1022: below v4 a feature whose minimum level is 0 is not listed (a leader asking a new
    # voter's range must ask v4, as Kafka's AddVoterHandler does)
    assert "kraft.version" not in {f.name for f in api_versions(3).supported_features}


def test_a_static_quorum_upgraded_to_kraft_version_1(static_cluster):
    """KAFKA-16538 as Kafka 4.3.1 does it: `kafka-features upgrade --release-version 4.0` (the
    level both targets run at here) includes kraft.version 1 (KAFKA-21426: the release's
    default levels include it), validated by the dry run; afterwards every voter has its
    directory id and `remove-controller` / `add-controller` work. Runs last on the shared
    static cluster: it changes its voters."""
    nodes, _ = static_cluster
    controller = f"{nodes[0].host}:{nodes[0].controller_port}"

    def features(*args):
        return run_tool("kafka-features", ["--bootstrap-controller", controller, *args], timeout=120)
    # the dry run passes once every voter told the current leader who it is (UpdateRaftVoter)
    deadline_wait(lambda: "kraft.version can be upgraded to 1." in features(
        "upgrade", "--release-version", "4.0", "--dry-run").stdout, "the upgrade validated")
    out = features("upgrade", "--release-version", "4.0").check().stdout
    assert "kraft.version was upgraded to 1." in out, out

    def finalized():
        return {ln.split()[1]: ln.split()[ln.split().index("FinalizedVersionLevel:") + 1]
                for ln in features("describe").check().lines if ln.startswith("Feature:")}
    # describe may ask another controller than the one that committed the upgrade: a
    # follower shows it once it has replayed the record (read until it does, bounded)
    described = read_until(finalized, lambda d: d.get("kraft.version") == "1", interval=0.5)
    assert described["kraft.version"] == "1"
    expected = {n.node_id: n.directory_id for n in nodes}
    deadline_wait(lambda: {v["id"]: v.get("directoryId") for v in json.loads(
        status(nodes[1].bootstrap_servers)["CurrentVoters"])} == expected, "voters with directory ids")
    n3 = nodes[2]
    run_tool("kafka-metadata-quorum", ["--bootstrap-controller", controller, "remove-controller",
                                       "--controller-id", "3", "--controller-directory-id", n3.directory_id],
             timeout=120).check()
    deadline_wait(lambda: (r := replication(nodes[0].bootstrap_servers)) and voters_in(r) == {1, 2}
                  and one_leader(r), "voter 3 removed")
    deadline_wait(lambda: run_tool("kafka-metadata-quorum", [
        "--bootstrap-controller", controller, "--command-config", str(n3.config_path), "add-controller"],
        timeout=120).check(), "add-controller 3")
    deadline_wait(lambda: (r := replication(nodes[0].bootstrap_servers)) and voters_in(r) == {1, 2, 3}
                  and one_leader(r), "voter 3 back")
    producer = KafkaProducer(bootstrap_servers=nodes[1].bootstrap_servers, acks="all", retries=10)
    deadline_wait(lambda: producer.send("formed", b"after-upgrade").get(timeout=20), "a write after the upgrade")
    producer.close()


# ------------------------------------------------------------------------ 7. announced endpoints

def test_followers_fetch_from_the_endpoint_their_leader_announces(target, tmp_path):
    """KIP-853 as Kafka 4.3.1 does it (``FollowerState``): a leader announces its controller
    endpoint (BeginQuorumEpoch v1 ``LeaderEndpoints``, the ``NodeEndpoints`` of answers) and
    its followers fetch from there, not from the address their ``controller.quorum.voters``
    names for it. Every node names the other voters through a tap (``tests/support/tap.py``:
    node i's entry for j is tap (i, j)); the nodes advertise their own controller listeners.
    Once the quorum stands, the followers fetch a new record while the taps toward the leader
    forward none of their Fetch requests -- yet those taps carry the followers' broker
    heartbeats (the controller channel uses the voter set's address), and the leader's
    BeginQuorumEpoch went out through its taps."""
    ports = {i: free_port() for i in (1, 2, 3)}
    taps = {(i, j): Tap((HOST, ports[j])) for i in ports for j in ports if i != j}

    def voters(i):
        return ",".join(f"{j}@{HOST}:{ports[j] if j == i else taps[(i, j)].port}" for j in ports)
    # each announces its CONTROLLER listener (not in advertised.listeners: Kafka and kbroker
    # then announce the bound one). A fetch timeout that a loaded machine does not reach: a
    # leader stalled past the 2 s request timeout loses its followers' connections, and a
    # follower whose fetch timeout then passes asks for (pre-)votes through the voter list's
    # addresses; Kafka fetches over the connection its Vote opened there (one connection per
    # node id), also when the same node wins again -- an election, not what this test is about
    nodes = [QuorumNode(target, tmp_path, i, {"controller_port": ports[i], "controller.quorum.voters": voters(i),
                                              "controller.quorum.fetch.timeout.ms": "15000"})
             for i in (1, 2, 3)]
    cluster_id = random_cluster_id()
    for n in nodes:
        storage_format(target, n, cluster_id)
    try:
        start_all(nodes)

        def settled():
            p, _ = describe_quorum(nodes[0].addr)
            if p is None or p.error_code or p.leader_id < 1:
                return None
            ends = {v.replica_id: v.log_end_offset for v in p.current_voters}
            return all(e >= p.high_watermark for e in ends.values()) and \
                (p.leader_id, p.leader_epoch, p.high_watermark)
        leader, epoch, _ = deadline_wait(settled, "a leader followed by both voters")
        lead = nodes[leader - 1]
        followers = [i for i in (1, 2, 3) if i != leader]
        # Kafka's network client keeps one connection per node id, made to whichever address
        # was asked first (a Vote, or a Fetch before any leader was known, both go to the voter
        # list's): reset them, so that every follower connects again where it fetches from now
        # (reset() returns once every request that went through before it is counted)
        for t in taps.values():
            t.reset()
        _, _, settled_hw = deadline_wait(settled, "both voters following again")
        fetches = {i: taps[(i, leader)].count(1) for i in followers}
        heartbeats = {i: taps[(i, leader)].count(63) for i in followers}
        R = w.CreateTopicsRequest
        call(lead.addr, 19, 7, R(topics=[R.CreatableTopic(
            name="announced", num_partitions=1, replication_factor=3, assignments=[], configs=[])],
            timeout_ms=15000, validate_only=False), timeout=20)
        last = deadline_wait(lambda: (lambda st: st and st[2] > settled_hw and st)(settled()),
                             "both followers fetched the new records")
        deadline_wait(lambda: all(taps[(i, leader)].count(63) > heartbeats[i] for i in followers),
                      "heartbeats through the taps toward the leader")
        assert last[:2] == (leader, epoch), \
            f"leader {leader} epoch {epoch} became leader {last[0]} epoch {last[1]}: an election"
        assert {i: taps[(i, leader)].count(1) for i in followers} == fetches, \
            "a follower fetched through the address controller.quorum.voters names"
        assert sum(taps[(leader, i)].count(53) for i in followers) >= 1, \
            "the leader's BeginQuorumEpoch did not use the voter list's addresses"
    finally:
        stop_all(nodes)
        for t in taps.values():
            t.close()


# ------------------------------------------------------------------------ 2. grow and shrink

@pytest.fixture(scope="module")
def dynamic_cluster(target, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"dynamic-{target}")
    ports = {i: free_port() for i in (1, 2, 3)}
    nodes = [QuorumNode(target, root, i, {"controller_port": ports[i],
                                          "controller.quorum.bootstrap.servers": f"{HOST}:{ports[1]}"})
             for i in (1, 2, 3)]
    cluster_id = random_cluster_id()
    storage_format(target, nodes[0], cluster_id, "--standalone")
    for n in nodes[1:]:
        storage_format(target, n, cluster_id, "--no-initial-controllers")
    try:
        yield nodes
    finally:
        stop_all(nodes)


@pytest.mark.slow
def test_standalone_grown_to_three_and_shrunk_back_while_a_producer_runs(dynamic_cluster):
    n1, n2, n3 = dynamic_cluster
    n1.start()
    controller = f"{HOST}:{n1.controller_port}"
    assert replication(n1.bootstrap_servers) == {1: "Leader"}
    admin = KafkaAdminClient(bootstrap_servers=n1.bootstrap_servers)
    admin.create_topics([NewTopic("grown", 1, 1)])
    admin.close()
    producer = Producer(n1.bootstrap_servers, "grown")
    producer.start()
    steps = []
    try:
        start_all([n2, n3])
        deadline_wait(lambda: len(producer.acked) > 20, "writes before the change")
        for n in (n2, n3):
            # an observer that has caught up can be added (Kafka refuses one still catching up)
            deadline_wait(lambda: run_tool("kafka-metadata-quorum", [
                "--bootstrap-controller", controller, "--command-config", str(n.config_path),
                "add-controller"], timeout=120).check(), f"add-controller {n.node_id}")
            steps.append(deadline_wait(
                lambda: (r := replication(n1.bootstrap_servers)) and n.node_id in voters_in(r)
                and one_leader(r) and r, f"voter {n.node_id}"))
        assert voters_in(steps[-1]) == {1, 2, 3}
        for n in (n3, n2):
            run_tool("kafka-metadata-quorum", [
                "--bootstrap-controller", controller, "remove-controller", "--controller-id",
                str(n.node_id), "--controller-directory-id", n.directory_id], timeout=120).check()
            steps.append(deadline_wait(
                lambda: (r := replication(n1.bootstrap_servers)) and n.node_id not in voters_in(r)
                and one_leader(r) and r, f"voter {n.node_id} removed"))
        assert voters_in(steps[-1]) == {1} and steps[-1][1] == "Leader"
        before = len(producer.acked)
        deadline_wait(lambda: len(producer.acked) > before + 10, "writes after the change")
    finally:
        producer.stopped.set()
        producer.join(60)
    # the same voters after each step on both targets (ids and one leader; roles of the removed
    # controllers are compared as "not a voter": Kafka lists them as observers while they run)
    assert [sorted(voters_in(s)) for s in steps] == [[1, 2], [1, 2, 3], [1, 2], [1]]
    got = read_all(n1.bootstrap_servers, "grown")
    assert set(producer.acked) <= set(got), "an acknowledged record is missing"
    assert got == sorted(got), "records out of order"
