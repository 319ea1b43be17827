"""Spark's Kafka connector against kbroker and Apache Kafka: fixtures of spark_tests/.

The broker side is the compatibility suite's harness, loaded as a plugin: `--targets`, the
session-parametrised `target`, `broker`, `bootstrap`, `broker_factory`, `topic_name`, the
`known_difference` rules with the ledger compat_tests/FINDINGS.md, and the matrix (written to
spark_tests/results/matrix.md by `make test-spark`). Every test here therefore runs once on
kbroker and once on a real Apache Kafka. Run spark_tests/ in its own pytest session: the plugin
registers the same options as compat_tests/conftest.py, so one session cannot hold both.

At-least-once report: a test may `record_property("sink_report", text)`; the session ends with
a "Spark sink delivery" section listing them per target (duplicates are reported, not failed).

Spark side: ONE local[2] SparkSession for the whole session (a JVM start costs ~20 s on two
cores), with the connector jars of tools/spark_dist (fetched if missing) as `spark.jars`,
`spark.sql.shuffle.partitions=2` and no UI. Queries name their broker with
`kafka.bootstrap.servers`, so the same session serves both targets.
"""

from __future__ import annotations

import os
import sys

import pytest

from spark_tests.sparkenv import spark_session

pytest_plugins = ["compat_tests.conftest"]


@pytest.fixture(scope="session")
def spark():
    # Python workers must be this venv's interpreter (pyspark's default is `python3` on PATH).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = spark_session("kbroker-spark-tests")
    yield session
    session.stop()


@pytest.fixture
def checkpoint(tmp_path):
    """A fresh checkpoint folder for one streaming query (as a string, for Spark)."""
    path = tmp_path / "checkpoint"
    return str(path)


def pytest_terminal_summary(terminalreporter):
    lines = []
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        for name, value in getattr(report, "user_properties", []):
            if name == "sink_report" and report.when == "call":
                lines.append(f"{report.nodeid.split('::')[-1]}: {value}")
    if lines:
        terminalreporter.section("Spark sink delivery (at-least-once: duplicates are allowed, loss is not)")
        for line in lines:
            terminalreporter.write_line(line)
