"""pytest plugin: a real Kafka-protocol broker for your tests, without containers or a JVM.

Registered through the package's ``pytest11`` entry point, so ``pip install kbroker`` is
all a project needs (or ``-p kbroker.testing.pytest_plugin`` explicitly). Fixtures:

- ``kbroker`` (session): one broker, started on first use in a child process on free
  loopback ports, stopped at the end of the session. ``kbroker.bootstrap_servers`` is
  what clients take; also ``create_topic()``, ``delete_topics()``, ``list_topics()``,
  ``reset()`` (delete every topic and group), ``admin``, ``metrics_url``, ``log_path``.
- ``kafka_topic`` (function): a fresh, empty topic for this test — its name. Partitions,
  replication factor and topic configs come from the marker
  ``@pytest.mark.kafka_topic(partitions=3, replication_factor=1, config={...})``.
  Deleted after the test (unless ``--kbroker-keep-topics``).
- ``kafka_topic_factory`` (function): ``make(partitions=1, replication_factor=1, config=None,
  name=None, broker=None)`` for several topics, or topics on ``kbroker_cluster``; all are
  deleted after the test.
- ``kbroker_cluster`` (session): three combined nodes (brokers and KRaft voters) with
  ``stop_node(i)``/``start_node(i)``; started only by the tests that use it.
- ``kbroker_reset`` (function): deletes every topic and group of ``kbroker`` before the
  test, for tests that need a broker with nothing on it.

Options (all ``--kbroker-*``): ``--kbroker-bootstrap HOST:PORT`` runs the same suite against
a broker someone else started (Apache Kafka, say) instead of starting one;
``--kbroker-override KEY=VALUE`` (repeatable) sets broker configuration;
``--kbroker-log-level``; ``--kbroker-keep-topics``.

Rules, since pytest loads this module in every run of every project in the environment:
no autouse fixtures, no hooks beyond adding the options and the marker, nothing imported
at module level but pytest itself (the broker machinery, ``kbroker.testing.processes``, is imported
when a fixture is first used), fixture names that do not shadow (a project's own
``kbroker`` fixture in a conftest wins, as pytest resolves conftest fixtures first).
"""
from __future__ import annotations

import pytest

MARKER = "kafka_topic"


def pytest_addoption(parser):
    group = parser.getgroup("kbroker", "kbroker: a Kafka-protocol broker for tests")
    group.addoption("--kbroker-bootstrap", metavar="HOST:PORT", default=None,
                    help="use this running broker instead of starting kbroker")
    group.addoption("--kbroker-override", metavar="KEY=VALUE", action="append", default=[],
                    help="broker configuration for the started kbroker (repeatable)")
    group.addoption("--kbroker-log-level", default="INFO",
                    choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                    help="log level of the started brokers (their logs are files)")
    group.addoption("--kbroker-keep-topics", action="store_true", default=False,
                    help="do not delete the topics kafka_topic fixtures created")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{MARKER}(partitions=1, replication_factor=1, config=None): the topic "
        "the kafka_topic fixture creates for this test")


def _overrides(config) -> dict:
    out = {}
    for item in config.getoption("--kbroker-override") or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"--kbroker-override expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


@pytest.fixture(scope="session")
def kbroker(request, tmp_path_factory):
    """The session's broker (see the module docstring)."""
    from kbroker.testing import processes as testing
    config = request.config
    external = config.getoption("--kbroker-bootstrap")
    if external:
        yield testing.ExternalBroker(external)
        return
    broker = testing.KbrokerProcess(tmp_path_factory.mktemp("kbroker") / "data",
                                    _overrides(config),
                                    log_level=config.getoption("--kbroker-log-level"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kbroker_cluster(request, tmp_path_factory):
    """Three combined nodes; ``stop_node(i)``/``start_node(i)`` for failure tests."""
    from kbroker.testing import processes as testing
    config = request.config
    if config.getoption("--kbroker-bootstrap"):
        pytest.fail("kbroker_cluster starts its own nodes; it cannot use --kbroker-bootstrap")
    cluster = testing.KbrokerCluster(tmp_path_factory.mktemp("kbroker-cluster"), 3,
                                     _overrides(config),
                                     log_level=config.getoption("--kbroker-log-level"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def kafka_topic_factory(request, kbroker):
    """``make(partitions=1, replication_factor=1, config=None, name=None, broker=None)``
    creates a fresh topic (on ``kbroker`` unless ``broker`` is given) and returns its name;
    every topic made is deleted after the test."""
    from kbroker.testing import processes as testing
    made: list = []
    hint = request.node.name

    def make(partitions: int = 1, replication_factor: int = 1, config: dict | None = None,
             name: str | None = None, broker=None) -> str:
        target = broker if broker is not None else kbroker
        topic = target.admin.create_topic(name or testing.unique_name(hint), partitions,
                                          replication_factor, config)
        made.append((target, topic))
        return topic

    yield make
    if request.config.getoption("--kbroker-keep-topics"):
        return
    by_broker: dict = {}
    for target, topic in made:
        by_broker.setdefault(id(target), (target, []))[1].append(topic)
    for target, topics in by_broker.values():
        try:
            target.admin.delete_topics(topics, wait=False)
        except (OSError, RuntimeError):
            pass        # a test that stopped the broker: nothing left to clean


@pytest.fixture
def kafka_topic(request, kafka_topic_factory) -> str:
    """A fresh topic for this test; ``@pytest.mark.kafka_topic(partitions=...)`` shapes it."""
    marker = request.node.get_closest_marker(MARKER)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        kwargs.setdefault("partitions", marker.args[0])
    unknown = set(kwargs) - {"partitions", "replication_factor", "config", "name"}
    if unknown:
        pytest.fail(f"@pytest.mark.{MARKER}: unknown argument(s) {sorted(unknown)}")
    return kafka_topic_factory(**kwargs)


@pytest.fixture
def kbroker_reset(kbroker):
    """Every topic and group of ``kbroker`` deleted before the test; yields the broker."""
    kbroker.reset()
    return kbroker
