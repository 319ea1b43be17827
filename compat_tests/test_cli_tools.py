"""Apache Kafka's own command-line tools beyond topics and the console clients (test_cli.py):
consumer groups, configs, verifiable producer/consumer, delete-records, get-offsets variants,
log dirs, API versions, cluster id, metadata quorum, transactions. Each tool is the Java client
and Admin client of the pinned release, run from the cached jars by cli.run_tool (~1–2 s of JVM
start per call, so tests batch what they can).
"""

from __future__ import annotations

import json
import re

import pytest

from compat_tests.cli import run_tool
from compat_tests.helpers import T0_MS, read_until, wait_until

CLIENT = "kafka-cli-tools"


@pytest.fixture(autouse=True)
def _dist(kafka_dist):
    """The CLI needs the Kafka jars on every target, kbroker included."""


def bs(bootstrap):
    return ["--bootstrap-server", bootstrap]


def create_topic(bootstrap, topic, partitions=1, *configs):
    args = [*bs(bootstrap), "--create", "--topic", topic, "--partitions", str(partitions),
            "--replication-factor", "1"]
    for config in configs:
        args += ["--config", config]
    run_tool("kafka-topics", args).check()
    # CreateTopics answers once the controller committed the topic; a broker's metadata (Kafka's
    # too) may have it a moment later, and a describe before that finds no topic
    wait_until(lambda: run_tool("kafka-topics", [*bs(bootstrap), "--describe", "--topic", topic])
               .returncode == 0, timeout=30, interval=0.2, what=f"{topic} in the broker's metadata")


def produce_lines(bootstrap, topic, lines, *props):
    args = [*bs(bootstrap), "--topic", topic]
    for prop in props:
        args += ["--reader-property", prop]
    run_tool("kafka-console-producer", args, input="\n".join(lines) + "\n").check()


def table(text: str) -> list[dict[str, str]]:
    """Parse the whitespace-aligned tables kafka-consumer-groups prints (header row + rows)."""
    rows, header = [], None
    for line in text.splitlines():
        if not line.strip():
            header = None
            continue
        cells = line.split()
        if header is None:
            header = cells
            continue
        rows.append(dict(zip(header, cells)))
    return rows


@pytest.mark.slow
def test_consumer_groups_describe_reset_delete(bootstrap, topic_name):
    group = f"g-{topic_name}"
    create_topic(bootstrap, topic_name, 2)
    produce_lines(bootstrap, topic_name, [f"v{i}" for i in range(6)])
    consumed = run_tool("kafka-console-consumer", [
        *bs(bootstrap), "--topic", topic_name, "--group", group, "--from-beginning",
        "--max-messages", "6", "--timeout-ms", "30000"]).check()
    assert sorted(consumed.lines) == [f"v{i}" for i in range(6)]

    listed = run_tool("kafka-consumer-groups", [*bs(bootstrap), "--list"]).check()
    assert group in listed.lines

    described = run_tool("kafka-consumer-groups", [*bs(bootstrap), "--describe", "--group", group]).check()
    rows = [r for r in table(described.stdout) if r.get("TOPIC") == topic_name]
    assert sorted(r["PARTITION"] for r in rows) == ["0", "1"]
    assert sum(int(r["CURRENT-OFFSET"]) for r in rows) == 6
    assert all(r["LAG"] == "0" and r["CURRENT-OFFSET"] == r["LOG-END-OFFSET"] for r in rows), rows
    assert "has no active members" in described.stdout + described.stderr

    state = run_tool("kafka-consumer-groups", [*bs(bootstrap), "--describe", "--group", group,
                                               "--state"]).check()
    (state_row,) = table(state.stdout)
    assert state_row["STATE"] == "Empty" and state_row["#MEMBERS"] == "0"

    reset = run_tool("kafka-consumer-groups", [
        *bs(bootstrap), "--reset-offsets", "--group", group, "--topic", f"{topic_name}:0",
        "--to-earliest", "--execute"]).check()
    (reset_row,) = table(reset.stdout)
    assert (reset_row["PARTITION"], reset_row["NEW-OFFSET"]) == ("0", "0")

    deleted_offsets = run_tool("kafka-consumer-groups", [
        *bs(bootstrap), "--delete-offsets", "--group", group, "--topic", f"{topic_name}:1"]).check()
    assert re.search(rf"{re.escape(topic_name)}\s+1\s+Successful", deleted_offsets.stdout), \
        deleted_offsets.stdout

    after = run_tool("kafka-consumer-groups", [*bs(bootstrap), "--describe", "--group", group,
                                               "--offsets"]).check()
    offsets = {r["PARTITION"]: r["CURRENT-OFFSET"] for r in table(after.stdout)
               if r.get("TOPIC") == topic_name}
    assert offsets == {"0": "0"}

    deleted = run_tool("kafka-consumer-groups", [*bs(bootstrap), "--delete", "--group", group]).check()
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted.stdout
    missing = run_tool("kafka-consumer-groups", [*bs(bootstrap), "--describe", "--group", group])
    # DescribeGroups v6 (KIP-1043) answers GROUP_ID_NOT_FOUND ("... not found"); up to v5 the
    # group is "Dead" and the tool prints "... does not exist": either is the same fact.
    assert re.search(rf"(Consumer group '{group}' does not exist|Group {group} not found)",
                     missing.stdout + missing.stderr), missing.stdout + missing.stderr


def test_configs_topic_and_broker(bootstrap, topic_name, target):
    create_topic(bootstrap, topic_name, 1, "retention.ms=3600000")
    topic = ["--entity-type", "topics", "--entity-name", topic_name]
    run_tool("kafka-configs", [*bs(bootstrap), *topic, "--alter", "--add-config",
                               "max.message.bytes=20000,segment.ms=600000",
                               "--delete-config", "retention.ms"]).check()
    # Kafka's broker applies the change when its metadata log catches up, after the controller
    # answered: describe until it shows (kbroker shows it at once)
    want = {"max.message.bytes": "20000", "segment.ms": "600000"}
    described = read_until(lambda: run_tool("kafka-configs", [*bs(bootstrap), *topic, "--describe"]).check(),
                           lambda d: dict(re.findall(r"^\s+(\S+)=(\S*) sensitive=", d.stdout, re.M)) == want,
                           at_once=target == "kbroker")
    assert f"Dynamic configs for topic {topic_name} are:" in described.stdout
    dynamic = dict(re.findall(r"^\s+(\S+)=(\S*) sensitive=", described.stdout, re.M))
    assert dynamic == {"max.message.bytes": "20000", "segment.ms": "600000"}

    every = run_tool("kafka-configs", [*bs(bootstrap), *topic, "--describe", "--all"]).check()
    values = dict(re.findall(r"^\s+(\S+)=(\S*) sensitive=", every.stdout, re.M))
    assert values["max.message.bytes"] == "20000"
    assert values["retention.ms"] == "604800000"
    assert values["cleanup.policy"] == "delete"

    broker = run_tool("kafka-configs", [*bs(bootstrap), "--entity-type", "brokers",
                                        "--entity-name", "1", "--describe", "--all"]).check()
    broker_values = dict(re.findall(r"^\s+(\S+)=(\S*) sensitive=", broker.stdout, re.M))
    assert broker_values["log.retention.hours"] == "168"
    assert broker_values["auto.create.topics.enable"] == "true"


def test_verifiable_producer_and_consumer(bootstrap, topic_name):
    create_topic(bootstrap, topic_name, 2)
    produced = run_tool("kafka-verifiable-producer", [
        *bs(bootstrap), "--topic", topic_name, "--max-messages", "200", "--acks", "-1"],
        timeout=90).check()
    events = [json.loads(line) for line in produced.lines if line.startswith("{")]
    names = [e["name"] for e in events]
    assert names[0] == "startup_complete" and "shutdown_complete" in names
    successes = [e for e in events if e["name"] == "producer_send_success"]
    assert len(successes) == 200
    assert not [e for e in events if e["name"] == "producer_send_error"]
    assert sorted((e["partition"], e["offset"]) for e in successes) == sorted(
        (p, o) for p in (0, 1) for o in range(sum(1 for e in successes if e["partition"] == p)))
    (data,) = [e for e in events if e["name"] == "tool_data"]
    assert data["sent"] == 200 and data["acked"] == 200

    consumed = run_tool("kafka-verifiable-consumer", [
        *bs(bootstrap), "--topic", topic_name, "--group-id", f"g-{topic_name}",
        "--max-messages", "200", "--reset-policy", "earliest"], timeout=90).check()
    events = [json.loads(line) for line in consumed.lines if line.startswith("{")]
    assigned = [e for e in events if e["name"] == "partitions_assigned"]
    assert sorted(p["partition"] for p in assigned[0]["partitions"]) == [0, 1]
    count = sum(e["count"] for e in events if e["name"] == "records_consumed")
    assert count == 200
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert commits and all(c["success"] for c in commits), commits
    final = {o["partition"]: o["offset"] for c in commits for o in c["offsets"]}
    assert sum(final.values()) == 200


@pytest.mark.slow
def test_get_offsets_variants_and_delete_records(bootstrap, topic_name, tmp_path):
    create_topic(bootstrap, topic_name, 2)
    produce_lines(bootstrap, topic_name, [f"{T0_MS + 10 * i}:v{i}" for i in range(5)])  # partitioner spreads
    def offsets(*args):
        result = run_tool("kafka-get-offsets", [*bs(bootstrap), "--topic", topic_name, *args]).check()
        return dict(line.rsplit(":", 2)[1:] for line in result.lines)

    latest = offsets("--time", "-1")
    assert sum(int(v) for v in latest.values()) == 5
    assert offsets("--time", "earliest") == {"0": "0", "1": "0"}
    assert offsets("--time", "latest", "--partitions", "1") == {"1": latest["1"]}
    # A timestamp in the future: no such offset, the tool prints nothing for the partition.
    assert offsets("--time", str(2 ** 62)) == {}

    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic_name, "partition": 0, "offset": int(latest["0"])},
        {"topic": topic_name, "partition": 1, "offset": -1}]}))
    deleted = run_tool("kafka-delete-records", [*bs(bootstrap), "--offset-json-file", str(spec)]).check()
    assert re.search(rf"partition: {re.escape(topic_name)}-0\s+low_watermark: {latest['0']}",
                     deleted.stdout), deleted.stdout
    assert offsets("--time", "earliest") == latest


def test_get_offsets_by_timestamp(bootstrap, topic_name):
    create_topic(bootstrap, topic_name, 1)
    # The console producer cannot set timestamps: write them with kafka-python.
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        for i, ts in enumerate([T0_MS, T0_MS + 20, T0_MS + 10]):
            producer.send(topic_name, b"v%d" % i, partition=0, timestamp_ms=ts).get(timeout=20)
    finally:
        producer.close()

    def at(time_arg):
        result = run_tool("kafka-get-offsets", [*bs(bootstrap), "--topic", topic_name,
                                                "--time", time_arg]).check()
        return result.lines

    # first offset whose timestamp >= the target; max-timestamp: the record with the largest
    assert at(str(T0_MS + 15)) == [f"{topic_name}:0:1"]
    assert at("max-timestamp") == [f"{topic_name}:0:1"]


@pytest.mark.slow
def test_log_dirs_api_versions_cluster_id(bootstrap, topic_name):
    create_topic(bootstrap, topic_name, 1)
    produce_lines(bootstrap, topic_name, ["x" * 100])
    dirs = run_tool("kafka-log-dirs", [*bs(bootstrap), "--describe", "--topic-list", topic_name]).check()
    payload = json.loads(next(line for line in dirs.lines if line.startswith("{")))
    (broker,) = payload["brokers"]
    (log_dir,) = broker["logDirs"]
    (part,) = log_dir["partitions"]
    assert part["partition"] == f"{topic_name}-0" and part["size"] > 100 and part["offsetLag"] == 0

    versions = run_tool("kafka-broker-api-versions", bs(bootstrap)).check()
    assert re.search(r"\(id: 1 rack: null", versions.stdout), versions.stdout[:500]
    for api in ("Produce(0)", "Fetch(1)", "Metadata(3)", "ApiVersions(18)", "CreateTopics(19)"):
        assert re.search(rf"{re.escape(api)}: \d+ to \d+ \[usable: \d+\]", versions.stdout), api

    cluster = run_tool("kafka-cluster", ["cluster-id", *bs(bootstrap)]).check()
    assert re.fullmatch(r"Cluster ID: [A-Za-z0-9_-]{22}", cluster.lines[-1]), cluster.lines


def test_metadata_quorum_status(bootstrap):
    status = run_tool("kafka-metadata-quorum", [*bs(bootstrap), "describe", "--status"]).check()
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", status.stdout, re.M))
    assert fields["LeaderId"] == "1"
    assert int(fields["HighWatermark"]) >= 0
    assert fields["CurrentVoters"].startswith("[{\"id\": 1")
    replication = run_tool("kafka-metadata-quorum", [*bs(bootstrap), "describe",
                                                     "--replication"]).check()
    (row,) = [r for r in table(replication.stdout) if r.get("NodeId") == "1"]
    assert row["Status"] == "Leader"


def test_transactions_list_and_describe_producers(bootstrap, topic_name):
    create_topic(bootstrap, topic_name, 1)
    # an idempotent producer (the Java default): DescribeProducers shows its producer state
    produce_lines(bootstrap, topic_name, ["a", "b"])
    listed = run_tool("kafka-transactions", [*bs(bootstrap), "list"]).check()
    assert listed.lines[0].split() == ["TransactionalId", "Coordinator", "ProducerId",
                                       "TransactionState"]
    producers = run_tool("kafka-transactions", [*bs(bootstrap), "describe-producers",
                                                "--topic", topic_name, "--partition", "0"]).check()
    (row,) = table(producers.stdout)
    assert row["LastSequence"] == "1" and row["CurrentTransactionStartOffset"] == "None"
