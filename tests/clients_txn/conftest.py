"""Fixtures for transactional client tests: one kbroker process per module (fast group
rebalances, a short transaction-timeout check interval) and unique topic names."""
from __future__ import annotations

import itertools
import uuid

import pytest

from tests.support.broker_proc import BrokerProcess

_counter = itertools.count()

TXN_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "transaction.state.log.num.partitions": "5",
    "offsets.topic.num.partitions": "5",
}


@pytest.fixture(scope="module")
def kbroker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("kbroker") / "data", overrides=TXN_OVERRIDES)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def bootstrap(kbroker) -> str:
    return kbroker.bootstrap


@pytest.fixture
def name(request) -> str:
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:60]
    return f"{base}-{next(_counter)}-{uuid.uuid4().hex[:6]}"
