"""Project-wide pytest configuration.

- ``--kafka-protocol``: folder with Apache Kafka's message definitions (the reference the
  schema tests compare against). Default: ``../shared/kafka-protocol`` next to the repo.
- marker ``slow``: tests left out of ``make test-fast``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def pytest_addoption(parser):
    parser.addoption(
        "--kafka-protocol", action="store", default=str(REPO_ROOT.parent / "shared" / "kafka-protocol"),
        help="path to Kafka's message definitions (clients/src/main/resources/common/message)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test, skipped by `make test-fast`")


@pytest.fixture(scope="session")
def kafka_protocol_dir(pytestconfig) -> Path:
    path = Path(pytestconfig.getoption("--kafka-protocol"))
    if not path.is_absolute():
        path = (Path.cwd() / path).resolve()
    if not (path / "ProduceRequest.json").exists():
        pytest.fail(f"no Kafka message definitions at {path}: pass --kafka-protocol=DIR "
                    "(make test passes ../shared/kafka-protocol)")
    return path
