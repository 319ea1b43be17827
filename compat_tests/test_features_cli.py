"""`kafka-features.sh` (the pinned release's jars) against kbroker and Apache Kafka: describe,
upgrade, downgrade (dry run and real) and disable give the same answers (issue 18,
UpdateFeatures 57), and a new cluster's ``describe`` is the same line for line (issue 31).

The upgrade/downgrade test starts both brokers at metadata.version 4.0-IV3 (each data
directory formatted by its own tool with ``--release-version 4.0``), so the levels and Kafka's
messages can be compared as they are; there only the ``metadata.version`` line is compared,
and the epoch (each metadata log's offset; Kafka's also moves with its periodic no-op records)
is checked to grow with every change.

The describe test formats a new cluster without a release version, as a user does: Kafka with
its ``kafka-storage format``, kbroker with ``kbroker storage format``, with no format step at
all (a single node formats itself) and on a directory Kafka's tool formatted. Every line of
``describe`` must be Kafka's, epochs aside (``metadata.version`` 4.4-IV2,
``eligible.leader.replicas.version`` 1 ... at Kafka 4.4.0).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from compat_tests import cli_fork
from compat_tests.cli import run_tool
from compat_tests.helpers import read_until
from compat_tests.kafka_runner import STORAGE_TOOL_MAIN, KafkaBrokerProcess, kafka_version, random_cluster_id
from compat_tests.runner import KBrokerProcess

CLIENT = "kafka-features"


def _kafka_format(config_path, *extra: str) -> None:
    """Kafka's ``kafka-storage format`` in the resident tool JVM (so with absolute paths)."""
    run_tool(STORAGE_TOOL_MAIN, ["format", "-t", random_cluster_id(), "-c", str(Path(config_path).resolve()),
                                 *extra], timeout=120).check()


def _kbroker_format(config_path, *extra: str) -> None:
    """``python -m kbroker storage format``, forked from the resident Python (compat_tests/cli_fork.py)."""
    r = cli_fork.kbroker("storage", "format", "-t", random_cluster_id(), "-c", str(config_path), *extra,
                         cwd=Path.cwd(), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


class _Kafka40(KafkaBrokerProcess):
    """Kafka on a directory formatted at release 4.0 (metadata.version 4.0-IV3)."""

    def prepare(self) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config().items()))
        if not (self.data_dir / "meta.properties").exists():
            _kafka_format(self.config_path, "--release-version", "4.0")


class _KBrokerFormatted(KBrokerProcess):
    """kbroker on a directory formatted before its first start: by ``kbroker storage format``
    (``tool="kbroker"``) or by Kafka's ``kafka-storage format`` (``tool="kafka"``)."""

    def __init__(self, workdir, tool: str, *extra: str):
        super().__init__(workdir)
        self.tool, self.extra = tool, extra

    def prepare(self) -> None:
        super().prepare()
        if (self.data_dir / "meta.properties").exists():
            return
        if self.tool == "kafka":
            _kafka_format(self.config_path, *self.extra)
        else:
            _kbroker_format(self.config_path, *self.extra)


@pytest.fixture
def node(target, tmp_path):
    broker = (_Kafka40(tmp_path / target) if target == "kafka"
              else _KBrokerFormatted(tmp_path / target, "kbroker", "--release-version", "4.0"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop(timeout=20)


def _features(bs: str, *args: str):
    r = run_tool("kafka-features", ["--bootstrap-server", bs, *args], timeout=90)
    out = [line for line in (r.stdout + r.stderr).splitlines()
           if line.strip() and "flag is deprecated" not in line]
    return r.returncode, out


def _metadata_version(bs: str) -> tuple[str, str, int]:
    """(supported min, finalized level, epoch) of describe's metadata.version line."""
    rc, out = _features(bs, "describe")
    assert rc == 0, out
    line = next(x for x in out if x.startswith("Feature: metadata.version"))
    m = re.search(r"SupportedMinVersion: (\S+)\s+SupportedMaxVersion: \S+\s+"
                  r"FinalizedVersionLevel: (\S+)\s+Epoch: (\d+)", line)
    assert m, line
    return m.group(1), m.group(2), int(m.group(3))


def _metadata_version_until(bs: str, level: str, at_once: bool) -> tuple[str, str, int]:
    """``_metadata_version`` again until it shows ``level`` (bounded; the last answer either
    way; with ``at_once``, kbroker's, the first). Kafka's describe reads a broker's finalized
    features, which the broker applies when its metadata log catches up, after the controller
    answered UpdateFeatures."""
    return read_until(lambda: _metadata_version(bs), lambda v: v[1] == level, interval=0.2,
                      at_once=at_once)


def test_kafka_features_describe_upgrade_downgrade(node, target):
    bs = node.bootstrap_servers
    lo, level, epoch = _metadata_version(bs)
    assert (lo, level) == ("3.3-IV3", "4.0-IV3")

    # a dry run answers and changes nothing
    assert _features(bs, "downgrade", "--metadata", "4.0-IV1", "--dry-run") == \
        (0, ["metadata.version can be downgraded to 23."])
    assert _metadata_version(bs)[:2] == (lo, level)

    # down across levels that kept the metadata format: done; the epoch moves
    assert _features(bs, "downgrade", "--metadata", "4.0-IV1") == (0, ["metadata.version was downgraded to 23."])
    _, level, epoch2 = _metadata_version_until(bs, "4.0-IV1", target == "kbroker")
    assert level == "4.0-IV1" and epoch2 > epoch

    # across 4.0-IV1 (ELR records): refused, safe or unsafe
    refused = ("Could not downgrade metadata.version to 21. The update failed for all features since "
               "the following feature had an error: Unsupported metadata.version downgrade from 23 to 21. ")
    assert _features(bs, "downgrade", "--metadata", "3.9") == \
        (1, [refused + "Refusing to perform the requested downgrade because it might delete metadata "
                       "information.", "1 out of 1 operation(s) failed."])
    assert _features(bs, "downgrade", "--unsafe", "--feature", "metadata.version=21") == \
        (1, [refused + "Unsafe metadata downgrade is not supported in this version.",
             "1 out of 1 operation(s) failed."])
    # an upgrade to a lower level, a feature nobody serves
    rc, out = _features(bs, "upgrade", "--feature", "metadata.version=22")
    assert rc == 1 and "Can't downgrade the version of this feature without setting the upgrade type" in out[0]
    assert _features(bs, "upgrade", "--feature", "no.such.feature=1") == (1, [
        "Could not upgrade no.such.feature to 1. The update failed for all features since the following "
        "feature had an error: Invalid update version 1 for feature no.such.feature. Local controller 1 "
        "does not support this feature.", "1 out of 1 operation(s) failed."])
    assert _metadata_version(bs)[:2] == (lo, "4.0-IV1")

    # back up
    assert _features(bs, "upgrade", "--feature", "metadata.version=25") == (0, ["metadata.version was upgraded to 25."])
    _, level, epoch3 = _metadata_version_until(bs, "4.0-IV3", target == "kbroker")
    assert level == "4.0-IV3" and epoch3 > epoch2


def _describe(bs: str) -> list[str]:
    """``describe``'s lines with each epoch masked (every log's own offset)."""
    rc, out = _features(bs, "describe")
    assert rc == 0, out
    return [re.sub(r"Epoch: \d+", "Epoch: *", line) for line in out]


def _describe_of(broker) -> list[str]:
    broker.start_timeout = max(broker.start_timeout, 120.0)   # four starts in a row on a busy machine
    broker.start()
    try:
        return _describe(broker.bootstrap_servers)
    finally:
        broker.stop(timeout=20)


@pytest.mark.skipif(kafka_version() != "4.4.0", reason="the expected levels are Kafka 4.4.0's")
def test_new_cluster_describe_identical_formatted_by_each_tool(tmp_path):
    """A new cluster, formatted without a release version: ``describe`` on kbroker (formatted by
    its tool, by none, or by Kafka's) lists Kafka's features, ranges and finalized levels."""
    kafka = _describe_of(KafkaBrokerProcess(tmp_path / "kafka"))
    assert any(line.startswith("Feature: metadata.version") and "FinalizedVersionLevel: 4.4-IV2" in line
               for line in kafka), kafka
    assert any(line.startswith("Feature: eligible.leader.replicas.version") and
               "FinalizedVersionLevel: 1" in line for line in kafka), kafka
    assert any(line.startswith("Feature: share.version") and "FinalizedVersionLevel: 2" in line
               for line in kafka), kafka
    for name, broker in (("kbroker-tool", _KBrokerFormatted(tmp_path / "kb-tool", "kbroker")),
                         ("self-format", KBrokerProcess(tmp_path / "kb-self")),
                         ("kafka-tool", _KBrokerFormatted(tmp_path / "kb-kafka", "kafka"))):
        assert _describe_of(broker) == kafka, name
