"""``kafka-acls.sh --bootstrap-server … --add / --list / --remove`` (Kafka 4.3.1's own tool)
against a kbroker with the StandardAuthorizer (the tool connects as User:ANONYMOUS, a super
user here)."""
from __future__ import annotations

import pytest

from compat_tests.cli import run_tool
from compat_tests.kafka_runner import kafka_libs
from tests.support.broker_proc import BrokerProcess

pytestmark = pytest.mark.slow


@pytest.fixture
def broker(tmp_path):
    kafka_libs()
    proc = BrokerProcess(tmp_path / "data", overrides={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS"}).start()
    try:
        yield proc
    finally:
        proc.stop()


def acls(broker, *args):
    return run_tool("kafka-acls", ["--bootstrap-server", broker.bootstrap, *args], timeout=120).check()


def test_kafka_acls_add_list_remove(broker):
    acls(broker, "--add", "--allow-principal", "User:alice", "--operation", "Read",
         "--operation", "Describe", "--topic", "orders", "--group", "billing")
    acls(broker, "--add", "--deny-principal", "User:bob", "--allow-host", "*", "--operation", "Write",
         "--topic", "ord", "--resource-pattern-type", "prefixed")
    acls(broker, "--add", "--allow-principal", "User:carol", "--allow-host", "10.0.0.0/8",   # CIDR (4.4)
         "--operation", "Read", "--topic", "orders")
    out = acls(broker, "--list").stdout
    assert "principal=User:carol, host=10.0.0.0/8, operation=READ, permissionType=ALLOW" in out
    assert "name=orders, patternType=LITERAL" in out and "name=billing" in out
    assert "name=ord, patternType=PREFIXED" in out
    assert "principal=User:alice, host=*, operation=READ, permissionType=ALLOW" in out
    assert "principal=User:bob, host=*, operation=WRITE, permissionType=DENY" in out
    out = acls(broker, "--list", "--topic", "orders", "--resource-pattern-type", "match").stdout
    assert "name=orders" in out and "name=ord," in out and "billing" not in out
    out = acls(broker, "--list", "--principal", "User:bob").stdout
    assert "User:bob" in out and "User:alice" not in out
    acls(broker, "--remove", "--force", "--topic", "orders")
    out = acls(broker, "--list").stdout
    assert "name=orders" not in out and "name=billing" in out and "name=ord," in out
