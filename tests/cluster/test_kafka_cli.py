"""Apache Kafka's own command-line tools (the pinned 4.x release's jars, run by
``compat_tests.cli.run_tool``) against a 3-node kbroker cluster: partition reassignment
(``kafka-reassign-partitions.sh --generate / --execute [--throttle] / --verify``), preferred
leader election after a restart (``kafka-leader-election.sh``), the health views of
``kafka-topics.sh --describe`` while a node is down, and ``kafka-metadata-quorum.sh``.

What a tool prints is what an operator reads, so the tests check the tools' output (and exit
codes) and, independently, the cluster's state over the wire and on disk. Automatic leader
rebalancing is off so that only the election tool moves leadership back.
"""
from __future__ import annotations

import json
import re

import pytest

from compat_tests.cli import run_tool
from compat_tests.kafka_runner import kafka_libs

from .replication_support import produce, records, replicas_in_sync
from .support import Cluster, agreed_state, call, wait_for, wait_for_isr

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    kafka_libs()                      # the tools' jars (fetched once if missing)
    c = Cluster(tmp_path_factory.mktemp("kafka-cli"),
                extra={"auto.leader.rebalance.enable": "false", "replica.lag.time.max.ms": "5000"})
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def tool(name: str, *args: str, check: bool = True):
    r = run_tool(name, list(args), timeout=120)
    return r.check() if check else r


def bs(cluster) -> list[str]:
    return ["--bootstrap-server", cluster.bootstrap()]


def create(cluster, topic: str, assignment: str, *configs: str):
    """``kafka-topics.sh --create`` with an explicit replica assignment ("1:2,2:3,3:1")."""
    args = [*bs(cluster), "--create", "--topic", topic, "--replica-assignment", assignment]
    for c in configs:
        args += ["--config", c]
    out = tool("kafka-topics", *args)
    assert f"Created topic {topic}." in out.stdout
    st = wait_for_isr(cluster, topic, what=f"{topic} created with full ISRs", timeout=60)
    assert [list(st[i].replicas) for i in sorted(st)] == [ids(a.replace(":", ",")) for a in assignment.split(",")]
    return st


def described(cluster, *args: str) -> dict[tuple[str, int], dict[str, str]]:
    """``kafka-topics.sh --describe`` partition lines as {(topic, partition): fields}."""
    out = tool("kafka-topics", *bs(cluster), "--describe", *args)
    rows = {}
    for line in out.lines:
        if "Partition:" not in line:
            continue
        fields = dict(re.findall(r"(\w+): (\S*)", line))
        rows[(fields["Topic"], int(fields["Partition"]))] = fields
    return rows


def ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def json_after(text: str, heading: str):
    """The JSON document on the line after ``heading`` in a tool's output."""
    lines = text.splitlines()
    i = lines.index(heading)
    return json.loads(next(line for line in lines[i + 1:] if line.strip()))


def broker_configs(cluster, broker: int) -> dict[str, str]:
    """Dynamic configs of one broker as ``kafka-configs.sh --describe`` lists them."""
    out = tool("kafka-configs", *bs(cluster), "--describe", "--entity-type", "brokers",
               "--entity-name", str(broker))
    return dict(re.findall(r"^\s+([\w.]+)=(\S*) sensitive=", out.stdout, re.M))


def topic_configs(cluster, topic: str) -> dict[str, str]:
    out = tool("kafka-configs", *bs(cluster), "--describe", "--entity-type", "topics",
               "--entity-name", topic)
    return dict(re.findall(r"^\s+([\w.]+)=(\S*) sensitive=", out.stdout, re.M))


def log_dirs(cluster, topic: str) -> dict[int, dict[int, int]]:
    """``kafka-log-dirs.sh --describe``: {broker: {partition: size}} of ``topic``."""
    out = tool("kafka-log-dirs", *bs(cluster), "--describe", "--topic-list", topic,
               "--broker-list", "1,2,3")
    doc = json.loads(next(line for line in out.lines if line.startswith("{")))
    sizes: dict[int, dict[int, int]] = {}
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            assert d["error"] is None, d
            for p in d["partitions"]:
                name, _, part = p["partition"].rpartition("-")
                if name == topic:
                    assert not p["isFuture"]
                    sizes.setdefault(b["broker"], {})[int(part)] = p["size"]
    return sizes


def verify_until_complete(cluster, plan_file, partitions: list[str]):
    """Run ``--verify`` until it says every partition's reassignment completed; its output."""
    last = []

    def done():
        out = tool(REASSIGN, *bs(cluster), "--verify", "--reassignment-json-file", str(plan_file))
        last[:] = [out.stdout]
        return out if all(f"Reassignment of partition {p} is completed." in out.stdout
                          for p in partitions) else None
    try:
        return wait_for(done, timeout=120, interval=0.5, what="--verify reporting completion")
    except AssertionError as e:
        raise AssertionError(f"{e}\nlast --verify output:\n{last[0] if last else None}") from None


def execute_reassignment(cluster, tmp_path, topic: str, target: dict[int, list[int]], *extra: str):
    """Produce keyed records, then ``--generate`` (checked) and ``--execute`` a move of
    ``topic``'s partitions to ``target``; the execute output and the plan file."""
    acks = produce(cluster.bootstrap(), topic, records(topic, 600))
    assert not acks.failed, acks.failed[:3]
    before = wait_for_isr(cluster, topic)

    # --generate: the current assignment as the cluster has it, and a proposal over the brokers
    (tmp_path / "topics.json").write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    gen = tool(REASSIGN, *bs(cluster), "--generate", "--topics-to-move-json-file",
               str(tmp_path / "topics.json"), "--broker-list", "1,2,3")
    current = json_after(gen.stdout, "Current partition replica assignment")
    assert {p["partition"]: p["replicas"] for p in current["partitions"]} == \
        {i: list(s.replicas) for i, s in before.items()}
    proposed = json_after(gen.stdout, "Proposed partition reassignment configuration")
    assert sorted(p["partition"] for p in proposed["partitions"]) == sorted(before)
    for p in proposed["partitions"]:
        assert p["topic"] == topic
        assert len(p["replicas"]) == len(before[p["partition"]].replicas)
        assert len(set(p["replicas"])) == len(p["replicas"]) and set(p["replicas"]) <= {1, 2, 3}

    plan = tmp_path / f"{topic}-plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": i, "replicas": r} for i, r in target.items()]}))
    out = tool(REASSIGN, *bs(cluster), "--execute", "--reassignment-json-file", str(plan), *extra)
    assert "Successfully started partition reassignment" in out.stdout, out.stdout
    rollback = json_after(out.stdout, "Current partition replica assignment")
    assert {p["partition"]: p["replicas"] for p in rollback["partitions"]} == \
        {i: list(s.replicas) for i, s in before.items()}
    return out, plan, acks


def check_moved(cluster, topic: str, target: dict[int, list[int]], produced: int):
    """The data is on the new replicas (and only there), as the tools and the files say."""
    st = wait_for_isr(cluster, topic, what=f"{topic}'s new replicas in sync")
    assert {i: list(s.replicas) for i, s in st.items()} == target
    rows = described(cluster, "--topic", topic)
    for i, r in target.items():
        assert ids(rows[(topic, i)]["Replicas"]) == r
        assert sorted(ids(rows[(topic, i)]["Isr"])) == sorted(r)
        assert int(rows[(topic, i)]["Leader"]) in r
    leo = wait_for(lambda: replicas_in_sync(cluster, topic, target), timeout=60,
                   what="byte-identical replicas of every partition")
    assert sum(leo.values()) == produced

    def sizes_settled():
        s = log_dirs(cluster, topic)
        ok = all(sorted(b for b, parts in s.items() if i in parts) == sorted(r) for i, r in target.items())
        return s if ok else None
    sizes = wait_for(sizes_settled, timeout=60, interval=1,
                     what="kafka-log-dirs listing each partition on exactly its new replicas")
    for i, r in target.items():
        assert len({sizes[b][i] for b in r}) == 1, (i, sizes)      # same size on every replica
        if leo[i]:
            assert sizes[r[0]][i] > 0


def test_reassign_generate_execute_verify(cluster, tmp_path):
    topic = "cli-move"
    create(cluster, topic, "1:2,2:3,3:1")
    target = {0: [2, 3], 1: [3, 1], 2: [1, 2]}           # every partition gets a new replica
    _out, plan, acks = execute_reassignment(cluster, tmp_path, topic, target)
    v = verify_until_complete(cluster, plan, [f"{topic}-{i}" for i in target])
    assert "Status of partition reassignment:" in v.stdout
    check_moved(cluster, topic, target, len(acks.acked))
    # nothing left in flight: a second --verify still says completed
    again = tool(REASSIGN, *bs(cluster), "--verify", "--reassignment-json-file", str(plan))
    assert all(f"Reassignment of partition {topic}-{i} is completed." in again.stdout for i in target)


def test_reassign_with_throttle(cluster, tmp_path):
    topic = "cli-throttled"
    create(cluster, topic, "1:2,2:3,3:1")
    # partition 0 moves fully (1,2 -> 3,2), partition 1 grows to three replicas, 2 stays
    target = {0: [3, 2], 1: [2, 3, 1], 2: [3, 1]}
    rate = "50000000"
    out, plan, acks = execute_reassignment(cluster, tmp_path, topic, target, "--throttle", rate)
    assert f"The inter-broker throttle limit was set to {rate} B/s" in out.stdout
    assert "Warning: You must run --verify periodically" in out.stdout
    # the tool set the throttle rates on every broker of the moved partitions...
    for b in (1, 2, 3):
        got = broker_configs(cluster, b)
        assert {k: got.get(k) for k in THROTTLE_RATES} == dict.fromkeys(THROTTLE_RATES, rate), got
    # ...and the throttled replicas of the topic: leaders = the current replicas of every
    # partition in the plan (the tool does not leave out unmoved ones), followers = the
    # replicas being added
    tc = topic_configs(cluster, topic)
    leader = set(tc["leader.replication.throttled.replicas"].split(","))
    follower = set(tc["follower.replication.throttled.replicas"].split(","))
    assert leader == {"0:1", "0:2", "1:2", "1:3", "2:3", "2:1"}, tc
    assert follower == {"0:3", "1:1"}, tc

    v = verify_until_complete(cluster, plan, [f"{topic}-{i}" for i in target])
    assert "Clearing broker-level throttles on brokers 1,2,3" in v.stdout, v.stdout
    assert f"Clearing topic-level throttles on topic {topic}" in v.stdout, v.stdout
    for b in (1, 2, 3):
        assert not set(broker_configs(cluster, b)) & set(THROTTLE_RATES)
    assert not set(topic_configs(cluster, topic)) & set(THROTTLED_REPLICAS)
    check_moved(cluster, topic, target, len(acks.acked))


def test_preferred_leader_election_after_restart(cluster):
    topic = "cli-elect"
    create(cluster, topic, "1:2:3,2:3:1,3:1:2,1:3:2")
    assert all(s.leader == s.replicas[0] for s in wait_for_isr(cluster, topic).values())
    cluster.kill(1)
    wait_for(lambda: (lambda s: s if s and all(p.leader not in (-1, 1) for p in s.values()) else None)(
        agreed_state(cluster, topic)), timeout=60, what="leaders elsewhere while node 1 is down")
    cluster.start(1)
    st = wait_for_isr(cluster, topic, timeout=90, what="node 1 back in every ISR")
    moved = [i for i, s in st.items() if s.leader != s.replicas[0]]
    assert sorted(moved) == [0, 3], st                     # node 1 led these before the restart
    rows = described(cluster, "--topic", topic)
    assert all(int(rows[(topic, i)]["Leader"]) != 1 for i in moved)

    out = tool("kafka-leader-election", *bs(cluster), "--election-type", "PREFERRED",
               "--all-topic-partitions")
    assert "Successfully completed leader election (PREFERRED) for partitions" in out.stdout, out.stdout
    line = next(x for x in out.lines if x.startswith("Successfully completed"))
    for i in moved:
        assert f"{topic}-{i}" in line
    for i in set(st) - set(moved):
        assert f"{topic}-{i}" not in line               # already led by the preferred replica

    def preferred():
        rows = described(cluster, "--topic", topic)
        return rows if all(int(r["Leader"]) == ids(r["Replicas"])[0] for r in rows.values()) else None
    rows = wait_for(preferred, timeout=30, interval=0.5, what="kafka-topics showing preferred leaders")
    assert [int(rows[(topic, i)]["Leader"]) for i in range(4)] == [1, 2, 3, 1]
    # a second run has nothing to do and says so (exit code 0)
    again = tool("kafka-leader-election", *bs(cluster), "--election-type", "PREFERRED",
                 "--topic", topic, "--partition", "0")
    assert "Valid replica already elected for partitions" in again.stdout, again.stdout


def test_under_replicated_and_unavailable_partitions(cluster):
    create(cluster, "cli-urp", "1:2,2:3,3:1")
    create(cluster, "cli-solo", "3,1")
    ours = lambda rows: {k for k in rows if k[0] in ("cli-urp", "cli-solo")}   # noqa: E731
    assert ours(described(cluster, "--under-replicated-partitions")) == set()
    assert ours(described(cluster, "--unavailable-partitions")) == set()

    cluster.kill(3)
    try:
        # with ELR (KIP-966, on by default as in Kafka 4.4) the partition only node 3 holds
        # has an empty ISR (node 3 is its eligible leader): under-replicated too, as Kafka lists it
        want_urp = {("cli-urp", 1), ("cli-urp", 2), ("cli-solo", 0)}
        rows = wait_for(lambda: (lambda r: r if ours(r) == want_urp else None)(
            described(cluster, "--under-replicated-partitions")), timeout=60, interval=1,
            what="--under-replicated-partitions listing the partitions that lost node 3")
        for k in want_urp:
            assert "3" in rows[k]["Replicas"].split(",") and "3" not in rows[k]["Isr"].split(",")
        assert rows[("cli-solo", 0)]["Isr"] == ""
        rows = wait_for(lambda: (lambda r: r if ours(r) == {("cli-solo", 0)} else None)(
            described(cluster, "--unavailable-partitions")), timeout=60, interval=1,
            what="--unavailable-partitions listing the partition only node 3 holds")
        assert rows[("cli-solo", 0)]["Leader"] == "none"
    finally:
        cluster.start(3)
    wait_for_isr(cluster, "cli-urp", timeout=90)
    wait_for_isr(cluster, "cli-solo", timeout=90)
    assert ours(described(cluster, "--under-replicated-partitions")) == set()
    assert ours(described(cluster, "--unavailable-partitions")) == set()


def test_metadata_quorum_describe(cluster):
    wait_for(lambda: len(cluster.alive()) == 3, what="all nodes up")
    out = tool("kafka-metadata-quorum", *bs(cluster), "describe", "--replication")
    header, *rows = [line.split() for line in out.lines]
    assert header[:4] == ["NodeId", "DirectoryId", "LogEndOffset", "Lag"] and header[-1] == "Status"
    table = {int(r[0]): dict(zip(header, r)) for r in rows}
    assert sorted(table) == [1, 2, 3]
    assert sorted(r["Status"] for r in table.values()) == ["Follower", "Follower", "Leader"]
    leader = next(n for n, r in table.items() if r["Status"] == "Leader")
    for r in table.values():
        assert int(r["LogEndOffset"]) > 0 and int(r["Lag"]) >= 0
        assert int(r["LogEndOffset"]) + int(r["Lag"]) == int(table[leader]["LogEndOffset"])
    assert table[leader]["Lag"] == "0"
    status = tool("kafka-metadata-quorum", *bs(cluster), "describe", "--status")
    fields = dict(line.split(":", 1) for line in status.lines)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    assert int(fields["LeaderId"]) == leader
    assert fields["ClusterId"] == cluster.cluster_id
    assert sorted(v["id"] for v in json.loads(fields["CurrentVoters"])) == [1, 2, 3]
    assert int(fields["HighWatermark"]) > 0


def test_throttle_configs_by_hand(cluster):
    """What the reassignment tool sets, set with kafka-configs: broker throttle rates are
    shown with their values (Kafka types them LONG, they are not secrets), and throttled
    replica lists are checked as Kafka checks them."""
    topic = "cli-throttle-configs"
    create(cluster, topic, "1:2")
    entity = ["--entity-type", "topics", "--entity-name", topic]
    bad = tool("kafka-configs", *bs(cluster), "--alter", *entity, "--add-config",
               "leader.replication.throttled.replicas=abc", check=False)
    assert bad.returncode != 0
    assert "must be the literal '*' or a list of replicas" in bad.stdout + bad.stderr
    tool("kafka-configs", *bs(cluster), "--alter", *entity, "--add-config",
         "leader.replication.throttled.replicas=[0:1,0:2],follower.replication.throttled.replicas=*")
    assert {k: v for k, v in topic_configs(cluster, topic).items() if k in THROTTLED_REPLICAS} == \
        {"leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": "*"}

    broker = ["--entity-type", "brokers", "--entity-name", "2"]
    tool("kafka-configs", *bs(cluster), "--alter", *broker, "--add-config",
         "leader.replication.throttled.rate=1000,follower.replication.throttled.rate=2000")
    out = tool("kafka-configs", *bs(cluster), "--describe", *broker)
    assert ("leader.replication.throttled.rate=1000 sensitive=false "
            "synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000}") in out.stdout
    assert "follower.replication.throttled.rate=2000 sensitive=false" in out.stdout
    tool("kafka-configs", *bs(cluster), "--alter", *broker, "--delete-config",
         "leader.replication.throttled.rate,follower.replication.throttled.rate")
    tool("kafka-configs", *bs(cluster), "--alter", *entity, "--delete-config",
         "leader.replication.throttled.replicas,follower.replication.throttled.replicas")
    assert not set(broker_configs(cluster, 2)) & set(THROTTLE_RATES)
    assert not set(topic_configs(cluster, topic)) & set(THROTTLED_REPLICAS)


def _finalized(cluster, node_id: int, feature: str) -> int:
    from kbroker.wire import messages as w
    r = call(cluster.nodes[node_id].port, 18, 3, w.ApiVersionsRequest(client_software_name="t",
                                                                      client_software_version="1"))
    return {f.name: f.max_version_level for f in r.finalized_features}.get(feature, 0)


def test_features_through_every_node(cluster):
    """kafka-features.sh downgrade/upgrade sent to each node in turn: non-controllers forward
    UpdateFeatures to the active controller, and every node then finalizes the new level.
    The feature is ELR's (KIP-966): a new cluster's metadata.version, 4.4-IV2, cannot be
    downgraded (Kafka refuses a downgrade that might delete metadata)."""
    feature = "eligible.leader.replicas.version"
    mv = _finalized(cluster, 1, "metadata.version")
    nodes = sorted(cluster.nodes)
    try:
        for n, (verb, level) in zip(nodes, [("downgrade", 0), ("upgrade", 1), ("downgrade", 0)]):
            out = tool("kafka-features", "--bootstrap-server", cluster.bootstrap(n), verb,
                       "--feature", f"{feature}={level}").stdout
            assert f"{feature} was {verb}d to {level}." in out
            for m in nodes:
                wait_for(lambda m=m: _finalized(cluster, m, feature) == level, timeout=30,
                         what=f"node {m} finalizes {feature} {level}")
    finally:
        tool("kafka-features", *bs(cluster), "upgrade", "--feature", f"{feature}=1")
    wait_for(lambda: all(_finalized(cluster, m, feature) == 1 for m in nodes), timeout=30,
             what=f"every node finalizes {feature} 1 again")
    out = tool("kafka-features", *bs(cluster), "describe").stdout
    assert re.search(rf"Feature: {re.escape(feature)}\s.*FinalizedVersionLevel: 1", out), out
    assert _finalized(cluster, 1, "metadata.version") == mv
