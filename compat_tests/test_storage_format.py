"""Data directories formatted by one broker's storage tool start the other broker (issue 19):
Kafka's `kafka-storage format` before kbroker, and `kbroker storage format` before Apache Kafka.
Both start from the suite's one-node configuration; the cluster id chosen at format time is
the one each broker then reports, and the features follow the bootstrap file."""
from __future__ import annotations

import trio

from compat_tests import cli_fork
from compat_tests.cli import run_tool
from compat_tests.kafka_runner import STORAGE_TOOL_MAIN, KafkaBrokerProcess, random_cluster_id
from compat_tests.runner import KBrokerProcess
from tests.broker.raw import RawClient


def _kbroker_format(args: list[str]) -> None:
    """``python -m kbroker storage format ARGS`` (forked from the resident Python,
    compat_tests/cli_fork.py); Kafka's ``kafka-storage`` runs in the resident tool JVM."""
    r = cli_fork.kbroker("storage", "format", *args)
    assert r.returncode == 0, r.stdout + r.stderr


def _describe(port: int):
    """(cluster id from Metadata, finalized metadata.version from ApiVersions)."""
    async def ask():
        client = await RawClient.connect(port)
        try:
            versions = await client.request("ApiVersions", 3, client_software_name="compat",
                                            client_software_version="1")
            meta = await client.request("Metadata", 12, topics=[],
                                        allow_auto_topic_creation=False,
                                        include_topic_authorized_operations=False)
        finally:
            await client.aclose()
        finalized = {f.name: f.max_version_level for f in versions.finalized_features}
        return meta.cluster_id, finalized["metadata.version"]
    return trio.run(ask)


class _KBrokerFormattedByKafka(KBrokerProcess):
    def __init__(self, workdir, cluster_id):
        super().__init__(workdir)
        self.cluster_id = cluster_id

    def prepare(self) -> None:
        super().prepare()
        if (self.data_dir / "meta.properties").exists():
            return
        run_tool(STORAGE_TOOL_MAIN, ["format", "-t", self.cluster_id, "-c", str(self.config_path.resolve())],
                 timeout=120).check()


class _KafkaFormattedByKbroker(KafkaBrokerProcess):
    def __init__(self, workdir, cluster_id):
        super().__init__(workdir)
        self.cluster_id = cluster_id

    def prepare(self) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config().items()))
        if (self.data_dir / "meta.properties").exists():
            return
        _kbroker_format(["-t", self.cluster_id, "-c", str(self.config_path), "--release-version", "3.9"])


def test_kbroker_starts_on_a_directory_formatted_by_kafkas_tool(tmp_path):
    cid = random_cluster_id()
    node = _KBrokerFormattedByKafka(tmp_path, cid)
    node.start()
    try:
        cluster_id, level = _describe(node.port)
        assert cluster_id == cid
        # Kafka's tool asks for its release's level (4.4.0: 33, in the metadata log's first
        # snapshot), which kbroker serves as it is, without a warning
        assert level == 33
        assert "asks for metadata.version=" not in node.output_path.read_text()
    finally:
        node.stop()


def test_kafka_starts_on_a_directory_formatted_by_kbroker(tmp_path):
    cid = random_cluster_id()
    node = _KafkaFormattedByKbroker(tmp_path, cid)
    node.start()
    try:
        cluster_id, level = _describe(node.port)
        assert cluster_id == cid
        assert level == 21          # 3.9-IV0, from kbroker's bootstrap.checkpoint
    finally:
        node.stop()


# ----------------------------------------------------------------------------- KIP-853 --standalone

def _dynamic(cfg: dict, controller_port: int, host: str) -> dict:
    cfg = dict(cfg)
    cfg.pop("controller.quorum.voters", None)
    cfg["controller.quorum.bootstrap.servers"] = f"{host}:{controller_port}"
    return cfg


def _voter_and_directory(port: int, data_dir) -> tuple[dict, str]:
    """(voter id -> directory id from DescribeQuorum v2, the directory id of meta.properties)."""
    from kbroker.config.broker import parse_properties
    from kbroker.raft.control import uuid_to_kafka
    from kbroker.wire import messages as w
    from tests.cluster.support import call
    R = w.DescribeQuorumRequest
    resp = call(port, 55, 2, R(topics=[R.TopicData(topic_name="__cluster_metadata",
                                                   partitions=[R.PartitionData(partition_index=0)])]))
    part = resp.topics[0].partitions[0]
    voters = {v.replica_id: uuid_to_kafka(v.replica_directory_id) for v in part.current_voters}
    return voters, parse_properties((data_dir / "meta.properties").read_text())["directory.id"]


class _KBrokerStandaloneByKafka(_KBrokerFormattedByKafka):
    def config(self):
        return _dynamic(super().config(), self.controller_port, self.host)

    def prepare(self) -> None:
        KBrokerProcess.prepare(self)
        if (self.data_dir / "meta.properties").exists():
            return
        run_tool(STORAGE_TOOL_MAIN, ["format", "-t", self.cluster_id, "-c", str(self.config_path.resolve()),
                                     "--standalone"], timeout=120).check()


class _KafkaStandaloneByKbroker(KafkaBrokerProcess):
    def __init__(self, workdir, cluster_id):
        super().__init__(workdir)
        self.cluster_id = cluster_id

    def config(self):
        return _dynamic(super().config(), self.controller_port, self.host)

    def prepare(self) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config().items()))
        if (self.data_dir / "meta.properties").exists():
            return
        _kbroker_format(["-t", self.cluster_id, "-c", str(self.config_path), "--release-version", "3.9",
                         "--standalone"])


def test_kbroker_starts_as_the_one_voter_of_a_kafka_standalone_directory(tmp_path):
    """Kafka's `format --standalone` (KIP-853): kbroker reads the voter set of its 0-0
    checkpoint and leads a dynamic quorum whose voter carries the directory id."""
    node = _KBrokerStandaloneByKafka(tmp_path, random_cluster_id())
    node.start()
    try:
        voters, dir_id = _voter_and_directory(node.port, node.data_dir)
        assert voters == {1: dir_id}
    finally:
        node.stop()


def test_kafka_starts_as_the_one_voter_of_a_kbroker_standalone_directory(tmp_path):
    node = _KafkaStandaloneByKbroker(tmp_path, random_cluster_id())
    node.start()
    try:
        voters, dir_id = _voter_and_directory(node.port, node.data_dir)
        assert voters == {1: dir_id}
    finally:
        node.stop()
