"""``kbroker acls`` and ``kbroker users`` against a kbroker with Kafka's StandardAuthorizer and
``super.users=User:ANONYMOUS``; the same scenarios run against Apache Kafka in
``compat_tests/test_kbroker_cli.py``."""
from __future__ import annotations

import uuid

import pytest

from compat_tests import kbroker_cli as s
from tests.support.broker_proc import BrokerProcess


@pytest.fixture(scope="module")
def bs(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("cli-authz") / "data", overrides=s.AUTHZ_OVERRIDES)
    proc.start()
    try:
        yield proc.bootstrap
    finally:
        proc.stop()


def test_acls(bs):
    s.scenario_acls(bs, f"acls-{uuid.uuid4().hex[:8]}")


def test_users(bs):
    s.scenario_users(bs)


def test_acls_without_an_authorizer_is_one_line(tmp_path):
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        assert "SECURITY_DISABLED" in s.failed("acls", "list", "-b", proc.bootstrap).stderr
    finally:
        proc.stop()
