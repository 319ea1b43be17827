"""Project-wide pytest configuration.

- ``--kafka-protocol``: folder with Apache Kafka's message definitions (the reference the
  schema tests compare against). Default: the pinned release's definitions,
  ``.cache/kafka-protocol/<version>/`` (``tools/fetch_protocol.sh`` extracts them from the
  release's sources jars; ``make`` runs it, and the fixture runs it when the folder is missing).
- marker ``slow``: tests left out of ``make test-fast``.
- under pytest-xdist (``make test`` runs ``--dist loadfile``: the tests of one file on one
  worker, so module-scoped brokers and clusters are still started once), files with slow tests
  are handed out first, so that the long ones do not end the run on one busy worker.
- kafka-python 3.x can lose a rebalance that completes between two short polls (a client race:
  tests/support/kafka_python_fixes.py); its guard is applied for every test.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support import kafka_python_fixes

kafka_python_fixes.apply()

REPO_ROOT = Path(__file__).resolve().parent.parent
PIN_POM = REPO_ROOT / "tools" / "kafka_dist" / "pom.xml"


def pinned_kafka_version() -> str:
    """The one Kafka pin (``<kafka.version>`` of tools/kafka_dist/pom.xml)."""
    return re.search(r"<kafka\.version>([^<]+)</kafka\.version>", PIN_POM.read_text()).group(1)


PINNED_PROTOCOL = REPO_ROOT / ".cache" / "kafka-protocol" / pinned_kafka_version()


def pytest_addoption(parser):
    parser.addoption(
        "--kafka-protocol", action="store", default=str(PINNED_PROTOCOL),
        help="path to Kafka's message definitions (default: the pinned release's, fetched by "
             "tools/fetch_protocol.sh)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test, skipped by `make test-fast`")


@pytest.fixture(scope="session")
def kafka_protocol_dir(pytestconfig) -> Path:
    path = Path(pytestconfig.getoption("--kafka-protocol"))
    if not path.is_absolute():
        path = (Path.cwd() / path).resolve()
    if path == PINNED_PROTOCOL and not (path / ".complete").exists():
        subprocess.run(["bash", str(REPO_ROOT / "tools" / "fetch_protocol.sh")], check=False,
                       stdout=subprocess.DEVNULL)
    if not (path / "ProduceRequest.json").exists():
        pytest.fail(f"no Kafka message definitions at {path}: run tools/fetch_protocol.sh "
                    "(make does) or pass --kafka-protocol=DIR")
    return path


@pytest.fixture(scope="session", autouse=True)
def shared_message_defaults_unchanged():
    """After the run: every shared default struct of the generated message classes (one
    instance a field of every message defaults to, kbroker/wire/codegen.py) still holds its
    defaults; code that changed one in place would have changed every message sharing it."""
    yield
    from kbroker.wire import codegen, messages
    assert codegen.changed_shared_defaults(messages.built()) == []


def pytest_collection_modifyitems(session, config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return          # a plain run keeps pytest's order
    slow_files = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    # stable: files keep their order within each half, tests their order within each file
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow_files)
