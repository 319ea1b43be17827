"""A broker with two log dirs, one a small tmpfs that fills up (KIP-858 JBOD failure in
KRaft): the write that hits the full disk answers KAFKA_STORAGE_ERROR, the directory goes
offline (its partitions keep answering KAFKA_STORAGE_ERROR, DescribeLogDirs lists it with
that error and no replicas), and the partitions of the other directory still take writes;
the broker keeps running. Metadata and DescribeTopicPartitions then list the broker as an
offline replica of the partitions of the failed dir, and of no other (KIP-858; Kafka's
``KRaftMetadataCache``), and ``kbroker topics describe`` prints it. Same answers from kbroker
and Kafka 4.3.1.

Then the node's metadata log, decoded by Kafka's own ``kafka-dump-log
--cluster-metadata-decoder``, shows the directory assignment as Kafka writes it on both
targets: the registration names both log dirs' ids, each new partition's record has the
UNASSIGNED directory (the broker has two dirs), a ``PartitionChangeRecord`` then names the
directory the broker put the replica in (AssignReplicasToDirs), and after the failure a
``BrokerRegistrationChangeRecord`` leaves only the good dir online and the partitions of the
failed dir lose their leader."""
from __future__ import annotations

import json
from pathlib import Path

from compat_tests import kbroker_cli
from compat_tests.cli import run_tool
from compat_tests.helpers import wait_until
from kbroker.config.broker import parse_properties
from kbroker.wire import messages as M
from kbroker.wire.error_codes import ErrorCode as E
from tests.cluster.support import call
from tests.cluster.test_log_dir_offline import TMPFS_MB, create_topic, log_dirs, placed, produce_raw
from tests.support.tmpfs import fill, mount, umount

UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"      # DirectoryId.UNASSIGNED as Kafka prints it


def dir_id(d: Path) -> str:
    return parse_properties((d / "meta.properties").read_text())["directory.id"]


def metadata_records(log_dir: Path) -> list[dict]:
    """Every record of ``log_dir``'s ``__cluster_metadata-0``, as kafka-dump-log decodes it
    (``{"type": ..., "version": ..., "data": {...}}``)."""
    out = []
    for seg in sorted((log_dir / "__cluster_metadata-0").glob("*.log")):
        r = run_tool("org.apache.kafka.tools.DumpLogSegments",
                     ["--cluster-metadata-decoder", "--files", str(seg)], timeout=120).check()
        out += [json.loads(line.split(" payload: ", 1)[1]) for line in r.lines if " payload: {" in line]
    return out


def assigned_partitions(recs: list[dict], topic: str) -> set[int]:
    """The partitions of ``topic`` whose directory assignment the metadata log holds."""
    ids = [r["data"]["topicId"] for r in recs
           if r["type"] == "TOPIC_RECORD" and r["data"]["name"] == topic]
    return {r["data"]["partitionId"] for r in recs
            if r["type"] == "PARTITION_CHANGE_RECORD" and ids
            and r["data"]["topicId"] == ids[0] and r["data"].get("directories")}


def metadata_partitions(port: int) -> dict[int, tuple]:
    """Metadata v12 of topic jbod: {partition: (error, leader, replicas, isr, offline)}."""
    [t] = call(port, 3, 12, M.MetadataRequest(topics=[M.MetadataRequest.MetadataRequestTopic(
        name="jbod")], allow_auto_topic_creation=False)).topics
    return {p.partition_index: (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes,
                                p.offline_replicas) for p in t.partitions}


def described_partitions(port: int) -> dict[int, tuple]:
    """DescribeTopicPartitions v0 of topic jbod, in the shape of :func:`metadata_partitions`."""
    R = M.DescribeTopicPartitionsRequest
    [t] = call(port, 75, 0, R(topics=[R.TopicRequest(name="jbod")],
                              response_partition_limit=100, cursor=None)).topics
    return {p.partition_index: (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes,
                                p.offline_replicas) for p in t.partitions}


def test_full_log_dir_goes_offline_and_the_other_serves(target, broker_factory, tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    mount(bad, TMPFS_MB)
    try:
        broker = broker_factory(**{"log.dirs": f"{good},{bad}"})
        port = broker.port
        create_topic(port, "jbod", 4, 1)

        on_bad, on_good = placed(port, good, bad, "jbod", 4)
        for p in range(4):
            wait_until(lambda: produce_raw(port, "jbod", p, b"before") == E.NONE, timeout=30,
                       what=f"a first write to jbod-{p}")
        # The controller knows each replica's directory before the dir fails: it moves
        # leadership off the replicas it knows are in the failed dir, so an assignment still
        # on its way there would leave a leader on Kafka.
        wait_until(lambda: assigned_partitions(metadata_records(good), "jbod") == set(range(4)),
                   timeout=60, interval=1.0, what="every partition's directory in the metadata log")
        fill(bad / "filler")
        assert produce_raw(port, "jbod", on_bad[0], b"x" * 8192) == E.KAFKA_STORAGE_ERROR
        for p in on_bad:
            assert produce_raw(port, "jbod", p, b"later") == E.KAFKA_STORAGE_ERROR
        for p in on_good:
            assert produce_raw(port, "jbod", p, b"after") == E.NONE
        dirs = wait_until(lambda: (lambda d: d if d[str(bad)][0] else None)(log_dirs(port)),
                          timeout=30, what="DescribeLogDirs naming the failed dir")
        assert dirs[str(bad)] == (E.KAFKA_STORAGE_ERROR, {})
        assert dirs[str(good)][0] == E.NONE
        assert {p for (t, p) in dirs[str(good)][1] if t == "jbod"} == set(on_good)
        assert broker.is_running()

        # --- Metadata and DescribeTopicPartitions name the broker offline for the replicas of
        # the failed dir and only those; those partitions have no leader any more
        node = call(port, 3, 12, M.MetadataRequest(topics=[], allow_auto_topic_creation=False)).brokers[0].node_id
        # Both finalize eligible.leader.replicas.version 1 (KIP-966): the controller empties
        # the ISR and keeps its last member as an eligible leader replica (FINDINGS F-950, closed).
        left_isr = []
        bad_p = (E.LEADER_NOT_AVAILABLE, -1, [node], left_isr, [node])
        good_p = (E.NONE, node, [node], [node], [])
        want = {p: bad_p if p in on_bad else good_p for p in range(4)}
        got = wait_until(lambda: (lambda m: m if {p: v[1] for p, v in m.items()} == {
            p: v[1] for p, v in want.items()} else None)(metadata_partitions(port)), timeout=30,
            what="Metadata naming no leader for the failed dir's partitions")
        assert got == want
        assert described_partitions(port) == {p: (E.NONE, *want[p][1:]) for p in range(4)}
        [described] = json.loads(kbroker_cli.ok("topics", "describe", "jbod", "--json",
                                                "-b", f"127.0.0.1:{port}").stdout)
        assert {r["partition"]: r["offline"] for r in described["partitions"]} == \
            {p: want[p][4] for p in range(4)}
        text = kbroker_cli.ok("topics", "describe", "jbod", "-b", f"127.0.0.1:{port}").stdout
        assert {int(r["PARTITION"]): (r["LEADER"], r["OFFLINE"]) for r in kbroker_cli.table(text)} == \
            {p: ("-1", str(node)) if p in on_bad else (str(node), "-") for p in range(4)}

        # --- the directory assignment in the metadata log (in the first log dir, on both)
        good_id, bad_id = dir_id(good), dir_id(bad)
        where = {**{p: good_id for p in on_good}, **{p: bad_id for p in on_bad}}

        def recorded():
            """The records once they hold the offline dir (and still every partition's
            directory)."""
            recs = metadata_records(good)
            offline = any(r["type"] == "BROKER_REGISTRATION_CHANGE_RECORD"
                          and r["data"].get("logDirs") for r in recs)
            return recs if offline and assigned_partitions(recs, "jbod") == set(range(4)) else None
        recs = wait_until(recorded, timeout=60, interval=1.0,
                          what="the assignments and the offline dir recorded in the metadata log")
        [reg] = [r for r in recs if r["type"] == "REGISTER_BROKER_RECORD"][-1:]
        assert sorted(reg["data"]["logDirs"]) == sorted([good_id, bad_id])
        [topic_id] = [r["data"]["topicId"] for r in recs
                      if r["type"] == "TOPIC_RECORD" and r["data"]["name"] == "jbod"]
        replayed: dict[int, list[str]] = {}
        for r in recs:
            d = r["data"]
            if r["type"] == "PARTITION_RECORD" and d["topicId"] == topic_id:
                assert r["version"] == 2 and d["directories"] == [UNASSIGNED], r
                replayed[d["partitionId"]] = d["directories"]
            elif r["type"] == "PARTITION_CHANGE_RECORD" and d["topicId"] == topic_id \
                    and d.get("directories") is not None:
                # the assignment alone: nothing else of the partition changes
                assert r["version"] == 2 and set(d) == {"partitionId", "topicId", "directories"}, r
                replayed[d["partitionId"]] = d["directories"]
        assert replayed == {p: [where[p]] for p in range(4)}, (replayed, where)
        changes = [r for r in recs if r["type"] == "BROKER_REGISTRATION_CHANGE_RECORD"
                   and r["data"].get("logDirs")]
        assert [(r["version"], r["data"]["logDirs"]) for r in changes] == [(2, [good_id])], changes
        # the controller took leadership off the replicas of the failed dir, and only those
        # (a single broker: nowhere to move it, so no leader)
        leaders = {r["data"]["partitionId"]: r["data"]["leader"] for r in recs
                   if r["type"] == "PARTITION_CHANGE_RECORD" and r["data"]["topicId"] == topic_id
                   and "leader" in r["data"]}
        assert leaders == {p: -1 for p in on_bad}, leaders
    finally:
        umount(bad)
