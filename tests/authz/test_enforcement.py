"""ACL enforcement seen by real clients (kafka-python, confluent-kafka): a principal without
the right ACL gets Kafka's error, everything else keeps working.

The test's connections are ``User:ANONYMOUS`` (no SASL yet), so the scenarios are written on
that principal: first with ``allow.everyone.if.no.acl.found=true`` and DENY ACLs, then the same
broker restarted with the default (deny when no ACL matches) and ALLOW ACLs — the ACLs
survive the restart in the metadata log. With SASL the same scenarios take named users.
"""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         KafkaAdminClient, NewTopic, ResourcePattern, ResourcePatternFilter,
                         ResourceType)
from kafka.errors import (ClusterAuthorizationFailedError, GroupAuthorizationFailedError,
                          TopicAuthorizationFailedError, TransactionalIdAuthorizationFailedError)

from tests.support.broker_proc import BrokerProcess
from tests.support.drain import values_to_end

ME = "User:ANONYMOUS"
AUTHZ = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "group.initial.rebalance.delay.ms": "0"}


def acl(rtype, name, op, perm, pattern=ACLResourcePatternType.LITERAL, principal=ME):
    return ACL(principal, "*", op, perm, ResourcePattern(rtype, name, pattern))


@pytest.fixture
def broker(tmp_path):
    proc = BrokerProcess(tmp_path / "data", overrides={**AUTHZ, "allow.everyone.if.no.acl.found": "true"})
    proc.start()
    try:
        yield proc
    finally:
        if proc.running:
            proc.stop()


def produce(bs, topic, **kw):
    p = KafkaProducer(bootstrap_servers=bs, max_block_ms=5000, **kw)
    try:
        p.send(topic, b"v").get(timeout=10)
    finally:
        p.close(timeout=5)


def consume_group(bs, topic, group):
    c = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                      consumer_timeout_ms=8000)
    try:
        return values_to_end(c)
    finally:
        c.close()


def test_deny_acls_with_allow_everyone_then_allow_acls_after_restart(broker):
    bs = broker.bootstrap
    # one start-up line names what decides access
    assert ("authorizer org.apache.kafka.metadata.authorizer.StandardAuthorizer: super.users=(none), "
            "allow.everyone.if.no.acl.found=true") in broker.log_text()
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        admin.create_topics([NewTopic(n, 1, 1) for n in ("open", "secret", "private-1", "hidden")])
        out = admin.create_acls([
            acl(ResourceType.TOPIC, "secret", ACLOperation.WRITE, ACLPermissionType.DENY),
            acl(ResourceType.TOPIC, "priv", ACLOperation.READ, ACLPermissionType.DENY,
                ACLResourcePatternType.PREFIXED),
            acl(ResourceType.TOPIC, "hidden", ACLOperation.ALL, ACLPermissionType.DENY),
            acl(ResourceType.GROUP, "blocked", ACLOperation.READ, ACLPermissionType.DENY),
            # once any ACL applies to a topic, allow.everyone.if.no.acl.found no longer does
            # (Kafka's rule): every topic gets an ALLOW, the DENYs above win over it
            acl(ResourceType.TOPIC, "*", ACLOperation.ALL, ACLPermissionType.ALLOW),
        ])
        assert not out["failed"]
        topics = admin.list_topics()
        assert "hidden" not in topics and {"open", "secret", "private-1"} <= set(topics)
    finally:
        admin.close()

    produce(bs, "open")
    produce(bs, "private-1")
    with pytest.raises(TopicAuthorizationFailedError):
        produce(bs, "secret")
    assert consume_group(bs, "open", "g1") == [b"v"]
    with pytest.raises(TopicAuthorizationFailedError):
        consume_group(bs, "private-1", "g2")
    with pytest.raises(GroupAuthorizationFailedError):
        consume_group(bs, "open", "blocked")

    # the same ACLs, the default no-ACL rule (deny): only what an ALLOW covers works
    broker.overrides.pop("allow.everyone.if.no.acl.found")
    broker.restart()
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        assert sorted(admin.list_topics()) == ["__consumer_offsets", "open", "private-1", "secret"]
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                          ResourcePatternFilter(ResourceType.ANY, None,
                                                                ACLResourcePatternType.ANY)))
    finally:
        admin.close()
    produce(bs, "open")            # idempotent producer: WRITE on a topic is enough
    with pytest.raises(GroupAuthorizationFailedError):
        consume_group(bs, "open", "g1")
    with pytest.raises(TopicAuthorizationFailedError):
        produce(bs, "secret")
    with pytest.raises(TransactionalIdAuthorizationFailedError):
        p = KafkaProducer(bootstrap_servers=bs, transactional_id="tx-1", max_block_ms=5000)
        try:
            p.init_transactions()
        finally:
            p.close(timeout=5)


def test_confluent_kafka_sees_the_same_errors(broker):
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, AclBinding, AclOperation, AclPermissionType
    from confluent_kafka.admin import ResourcePatternType, ResourceType as RT
    bs = broker.bootstrap
    a = AdminClient({"bootstrap.servers": bs})
    for f in a.create_acls([AclBinding(RT.TOPIC, "denied", ResourcePatternType.LITERAL, ME, "*",
                                       AclOperation.WRITE, AclPermissionType.DENY)]).values():
        f.result(10)
    p = confluent_kafka.Producer({"bootstrap.servers": bs, "message.timeout.ms": 10000})
    errors = []
    p.produce("denied", b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert errors and errors[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
