"""ACLs with Kafka's own tools (``kafka-acls.sh``, console producer and consumer) against
Apache Kafka and kbroker configured identically (StandardAuthorizer, ``super.users`` or
``allow.everyone.if.no.acl.found``); every client is ``User:ANONYMOUS`` on PLAINTEXT."""
from __future__ import annotations

import pytest
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         KafkaAdminClient, NewTopic, ResourcePattern, ResourcePatternFilter,
                         ResourceType)

from compat_tests.cli import run_tool
from compat_tests.helpers import read_until, wait_until

CLIENT = "kafka-cli"
ME = "User:ANONYMOUS"
STANDARD = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}

pytestmark = pytest.mark.slow


def acl(rtype, name, op, perm, pattern=ACLResourcePatternType.LITERAL, principal=ME, host="*"):
    return ACL(principal, host, op, perm, ResourcePattern(rtype, name, pattern))


def test_kafka_acls_cli(kafka_dist, broker_factory, topic_name, target):
    b = broker_factory(**STANDARD, **{"super.users": ME})

    def tool(*args):
        return run_tool("kafka-acls", ["--bootstrap-server", b.bootstrap_servers, *args], timeout=120).check()
    tool("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic_name,
         "--group", "billing")
    tool("--add", "--deny-principal", "User:bob", "--operation", "Write", "--topic", "ord",
         "--resource-pattern-type", "prefixed")

    # Kafka's brokers apply ACL changes when they replay the metadata records, after the
    # controller answered: list until the change shows (kbroker shows it at once)
    def added(out):
        return f"name={topic_name}, patternType=LITERAL" in out and "name=ord, patternType=PREFIXED" in out
    out = read_until(lambda: tool("--list").stdout, added, at_once=target == "kbroker")
    assert f"name={topic_name}, patternType=LITERAL" in out and "name=ord, patternType=PREFIXED" in out
    assert "principal=User:alice, host=*, operation=READ, permissionType=ALLOW" in out
    tool("--remove", "--force", "--topic", topic_name)
    out = read_until(lambda: tool("--list").stdout, lambda out: topic_name not in out,
                     at_once=target == "kbroker")
    assert topic_name not in out and "name=billing" in out


def test_java_console_clients_without_acls(kafka_dist, broker_factory, topic_name):
    """Kafka's console producer and consumer (Java clients) meet the same authorization
    errors on both brokers: WRITE denied on a topic, READ denied on a group."""
    b = broker_factory(**STANDARD, **{"allow.everyone.if.no.acl.found": "true",
                                      "group.initial.rebalance.delay.ms": "0"})
    bs = b.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        admin.create_topics([NewTopic(topic_name, 1, 1)])
        assert not admin.create_acls([
            acl(ResourceType.TOPIC, "*", ACLOperation.ALL, ACLPermissionType.ALLOW),
            acl(ResourceType.TOPIC, topic_name, ACLOperation.WRITE, ACLPermissionType.DENY),
            acl(ResourceType.GROUP, "denied-" + topic_name, ACLOperation.ALL, ACLPermissionType.DENY),
        ])["failed"]
        # Kafka's brokers apply ACLs when they replay the metadata records, a moment after
        # the controller committed them: wait until the broker's authorizer lists all three
        wait_until(lambda: len(admin.describe_acls(ACLFilter(
            principal=None, host="*", operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                   ACLResourcePatternType.ANY)))[0]) >= 3,
            timeout=30, interval=0.2, what="the three ACLs at the broker")
    finally:
        admin.close()
    out = run_tool("kafka-console-producer", ["--bootstrap-server", bs, "--topic", topic_name],
                   input="one\n", timeout=120)
    assert "TopicAuthorizationException" in out.stdout + out.stderr
    out = run_tool("kafka-console-consumer", ["--bootstrap-server", bs, "--topic", topic_name,
                                              "--group", "denied-" + topic_name, "--from-beginning",
                                              "--timeout-ms", "15000"], timeout=120)
    assert "GroupAuthorizationException" in out.stdout + out.stderr


def test_kafka_delegation_tokens_refused_on_plaintext(kafka_dist, broker, tmp_path):
    """``kafka-delegation-tokens.sh --create`` over PLAINTEXT: both brokers refuse it (tokens
    need an authenticated channel)."""
    config = tmp_path / "client.properties"
    config.write_text("")
    out = run_tool("org.apache.kafka.tools.DelegationTokenCommand",
                   ["--bootstrap-server", broker.bootstrap_servers, "--create",
                    "--max-life-time-period", "-1", "--command-config", str(config)], timeout=120)
    assert "UnsupportedByAuthenticationException" in out.stdout + out.stderr
