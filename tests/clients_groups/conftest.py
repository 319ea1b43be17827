"""Fixtures for real-client consumer-group tests: one ``python -m kbroker serve`` process per
module (tests/support/broker_proc.py) with ``group.initial.rebalance.delay.ms=0`` and
clients using 6 s session timeouts, so rebalances finish in seconds.

Helpers: unique topic/group names, topic creation + seeding, and ``wait_until``.

kafka-python 3.x can drop a rebalance that completes between two polls (a client bug, see
tests/support/kafka_python_fixes.py); the guard is applied here for every test in the package.
"""
from __future__ import annotations

import itertools
import uuid

import pytest

from tests.support import kafka_python_fixes
from tests.support.broker_proc import BrokerProcess
from tests.support.waiting import wait_for

kafka_python_fixes.apply()

SESSION_MS = 6000
_counter = itertools.count()


@pytest.fixture(scope="module")
def kbroker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("kbroker-groups") / "data",
                         overrides={"group.initial.rebalance.delay.ms": "0"})
    proc.start()
    try:
        yield proc
    finally:
        if proc.running:
            proc.stop()


@pytest.fixture
def bootstrap(kbroker) -> str:
    return kbroker.bootstrap


@pytest.fixture
def names(request):
    """(topic, group) unique to the test."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:60]
    tag = f"{next(_counter)}-{uuid.uuid4().hex[:6]}"
    return f"{base}-{tag}", f"grp-{base}-{tag}"


def wait_until(cond, timeout=20.0, interval=0.05, what="condition"):
    """:func:`tests.support.waiting.wait_for` with this package's bound and pace."""
    return wait_for(cond, timeout, interval, what)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="group-tests")
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
        wait_until(lambda: len((admin.describe_topics([name]) or [{}])[0].get("partitions", [])) == partitions,
                   what=f"topic {name}")
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    """``n`` records spread round-robin over the partitions; value = b"<i>"."""
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for i in range(n):
            p.send(topic, value=str(i).encode(), partition=i % partitions)
        p.flush()
    finally:
        p.close()


def admin(bootstrap: str):
    from kafka.admin import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="group-admin")
