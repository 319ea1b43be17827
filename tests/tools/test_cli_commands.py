"""The ``kbroker`` client commands against a real kbroker (one broker for the module); the same
scenarios run against Apache Kafka in ``compat_tests/test_kbroker_cli.py``."""
from __future__ import annotations

import uuid

import pytest

from compat_tests import kbroker_cli as s
from tests.support.broker_proc import BrokerProcess


@pytest.fixture(scope="module")
def bs(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("cli") / "data",
                         overrides={"group.initial.rebalance.delay.ms": "0"})
    proc.start()
    try:
        yield proc.bootstrap
    finally:
        proc.stop()


@pytest.fixture
def topic(request):
    return f"{request.node.name.removeprefix('test_')}-{uuid.uuid4().hex[:8]}"


def test_version():
    s.scenario_version()


def test_topics(bs, topic):
    s.scenario_topics(bs, topic)


def test_produce_consume(bs, topic):
    s.scenario_produce_consume(bs, topic)


def test_groups(bs, topic):
    s.scenario_groups(bs, topic)


def test_configs(bs):
    s.scenario_configs(bs)


def test_cluster(bs):
    s.scenario_cluster(bs)
