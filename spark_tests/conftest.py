"""Spark's Kafka connector against kbroker and Apache Kafka: fixtures of spark_tests/.

The broker side is the compatibility suite's harness, loaded as a plugin: `--targets`, the
session-parametrised `target`, `broker`, `bootstrap`, `broker_factory`, `topic_name`, the
`known_difference` rules with the ledger compat_tests/FINDINGS.md, and the matrix (written to
spark_tests/results/matrix.md by `make test-spark`). Every test here therefore runs once on
kbroker and once on a real Apache Kafka. Run spark_tests/ in its own pytest session: the plugin
registers the same options as compat_tests/conftest.py, so one session cannot hold both.

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
