"""Data directories formatted by one broker's storage tool start the other broker (issue 19):
Kafka's `kafka-storage format` before kbroker, and `kbroker storage format` before Apache Kafka.
Both start from the suite's one-node configuration; the cluster id chosen at format time is
the one each broker then reports, and the features follow the bootstrap file."""
from __future__ import annotations

import subprocess
import sys

import trio

from compat_tests.kafka_runner import (FAST_START_JVM, STORAGE_TOOL_MAIN, TOOLS_LOG4J,
                                       KafkaBrokerProcess, java_command, random_cluster_id)
from compat_tests.runner import KBrokerProcess
from tests.broker.raw import RawClient

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


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
        cmd = java_command(STORAGE_TOOL_MAIN, ["format", "-t", self.cluster_id, "-c",
                                               str(self.config_path)],
                           heap="256m", log4j=TOOLS_LOG4J, extra_jvm=FAST_START_JVM)
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)


class _KafkaFormattedByKbroker(KafkaBrokerProcess):
    def __init__(self, workdir, cluster_id):
        super().__init__(workdir)
        self.cluster_id = cluster_id

    def prepare(self) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config().items()))
        if (self.data_dir / "meta.properties").exists():
            return
        subprocess.run([sys.executable, "-m", "kbroker", "storage", "format", "-t", self.cluster_id,
                        "-c", str(self.config_path), "--release-version", "3.9"],
                       check=True, capture_output=True, timeout=60, cwd=ROOT)


def test_kbroker_starts_on_a_directory_formatted_by_kafkas_tool(tmp_path):
    cid = random_cluster_id()
    node = _KBrokerFormattedByKafka(tmp_path, cid)
    node.start()
    try:
        cluster_id, level = _describe(node.port)
        assert cluster_id == cid
        # Kafka 4.3's tool asks for 4.3-IV0: kbroker finalizes the highest level it serves
        assert level == 25
        assert "asks for metadata.version=4.3-IV0" in node.output_path.read_text()
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
