"""ACLs with the StandardAuthorizer, the same scenarios on Apache Kafka and kbroker
configured identically (``authorizer.class.name`` = Kafka's StandardAuthorizer,
``super.users``, ``allow.everyone.if.no.acl.found``).

The connections are PLAINTEXT, so every client is ``User:ANONYMOUS``: the admin scenarios
make it a super user; the enforcement scenario leaves the cluster without ACLs (so
``allow.everyone.if.no.acl.found`` lets the nodes and the admin through) and puts ALLOW/DENY
ACLs on topics and groups. kafka-python's admin client and clients (Kafka's own tools: ``test_acls_cli.py``).
"""
from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         KafkaAdminClient, NewTopic, ResourcePattern, ResourcePatternFilter,
                         ResourceType)
from kafka.errors import (GroupAuthorizationFailedError, SecurityDisabledError,
                          TopicAuthorizationFailedError)

from compat_tests.helpers import read_until
from tests.support.drain import values_to_end


CLIENT = "kafka-python"
ME = "User:ANONYMOUS"
STANDARD = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}

pytestmark = pytest.mark.slow


def acl(rtype, name, op, perm, pattern=ACLResourcePatternType.LITERAL, principal=ME, host="*"):
    return ACL(principal, host, op, perm, ResourcePattern(rtype, name, pattern))


def key(a):
    p = a.resource_pattern
    return (int(p.resource_type), p.resource_name, int(p.pattern_type), a.principal, a.host,
            int(a.operation), int(a.permission_type))


def everything(**kw):
    pattern = kw.pop("pattern", ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
    return ACLFilter(kw.get("principal"), None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)


def test_acls_need_an_authorizer(bootstrap):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(everything())
    finally:
        admin.close()


def test_acl_create_describe_delete(broker_factory, topic_name, target):
    b = broker_factory(**STANDARD, **{"super.users": ME})
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
    try:
        read = acl(ResourceType.TOPIC, topic_name, ACLOperation.READ, ACLPermissionType.ALLOW,
                   principal="User:alice")
        pre = acl(ResourceType.TOPIC, topic_name[:5], ACLOperation.WRITE, ACLPermissionType.DENY,
                  ACLResourcePatternType.PREFIXED, principal="User:bob", host="10.1.2.3")
        grp = acl(ResourceType.GROUP, "g-" + topic_name, ACLOperation.ALL, ACLPermissionType.ALLOW,
                  principal="User:*")
        out = admin.create_acls([read, pre, grp, read])
        assert not out["failed"]
        bad = admin.create_acls([acl(ResourceType.TOPIC, "t", ACLOperation.READ, ACLPermissionType.ALLOW,
                                     principal="nocolon")])
        assert len(bad["failed"]) == 1
        # Kafka's brokers apply ACL changes when they replay the metadata records, after the
        # controller answered: read until the change shows (kbroker shows it at once)
        acls = _described_until(admin, {key(read), key(pre), key(grp)}, target)
        assert {key(a) for a in acls} == {key(read), key(pre), key(grp)}
        acls, _ = admin.describe_acls(everything(pattern=ResourcePatternFilter(
            ResourceType.TOPIC, topic_name, ACLResourcePatternType.MATCH)))
        assert {key(a) for a in acls} == {key(read), key(pre)}
        acls, _ = admin.describe_acls(everything(principal="User:*"))
        assert [key(a) for a in acls] == [key(grp)]
        (_, deleted, _), = admin.delete_acls([everything(pattern=ResourcePatternFilter(
            ResourceType.TOPIC, None, ACLResourcePatternType.ANY))])
        assert {key(a) for a in deleted} == {key(read), key(pre)}
        acls = _described_until(admin, {key(grp)}, target)
        assert [key(a) for a in acls] == [key(grp)]
    finally:
        admin.close()


def _described_until(admin, keys, target):
    """DescribeAcls of everything, again until it shows exactly ``keys`` (bounded; on
    kbroker the first answer must)."""
    return read_until(lambda: admin.describe_acls(everything())[0],
                      lambda acls: {key(a) for a in acls} == keys, at_once=target == "kbroker")




def _produce(bs, topic):
    p = KafkaProducer(bootstrap_servers=bs, max_block_ms=8000)
    try:
        p.send(topic, b"v").get(timeout=15)
    finally:
        p.close(timeout=5)


def _consume(bs, topic, group):
    c = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                      consumer_timeout_ms=10000)
    try:
        return values_to_end(c)
    finally:
        c.close()


def test_enforcement(broker_factory, topic_name, target):
    b = broker_factory(**STANDARD, **{"allow.everyone.if.no.acl.found": "true",
                                      "group.initial.rebalance.delay.ms": "0"})
    bs = b.bootstrap_servers
    open_t, secret, private, hidden = (f"{topic_name}-{s}" for s in ("open", "secret", "private", "hidden"))
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        admin.create_topics([NewTopic(n, 1, 1) for n in (open_t, secret, private, hidden)])
        out = admin.create_acls([
            acl(ResourceType.TOPIC, "*", ACLOperation.ALL, ACLPermissionType.ALLOW),
            acl(ResourceType.TOPIC, secret, ACLOperation.WRITE, ACLPermissionType.DENY),
            acl(ResourceType.TOPIC, private, ACLOperation.READ, ACLPermissionType.DENY,
                ACLResourcePatternType.PREFIXED),
            acl(ResourceType.TOPIC, hidden, ACLOperation.ALL, ACLPermissionType.DENY),
            acl(ResourceType.GROUP, "blocked-" + topic_name, ACLOperation.READ, ACLPermissionType.DENY),
        ])
        assert not out["failed"]
        # Kafka's brokers apply new topics and ACLs when they replay the metadata records,
        # after the controller answered: list until both show (the topics, committed first,
        # listed; the last ACL on ``hidden`` applied), which ``hidden`` missing alone is not
        listed = read_until(lambda: set(admin.list_topics()),
                            lambda listed: {open_t, secret, private} <= listed and hidden not in listed,
                            interval=0.2, at_once=target == "kbroker")
        assert {open_t, secret, private} <= listed and hidden not in listed
    finally:
        admin.close()
    _produce(bs, open_t)
    _produce(bs, private)
    with pytest.raises(TopicAuthorizationFailedError):
        _produce(bs, secret)
    assert _consume(bs, open_t, "g-" + topic_name) == [b"v"]
    with pytest.raises(TopicAuthorizationFailedError):
        _consume(bs, private, "g2-" + topic_name)
    with pytest.raises(GroupAuthorizationFailedError):
        _consume(bs, open_t, "blocked-" + topic_name)


def test_acl_and_token_apis_answer_alike_on_plaintext(bootstrap):
    """Raw requests (the same frames on both brokers): with no authorizer the ACL APIs answer
    SECURITY_DISABLED; on a PLAINTEXT listener every delegation-token API answers
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED."""
    from kbroker.wire import messages as M
    from kbroker.wire.error_codes import ErrorCode as E
    from tests.cluster.support import call
    port = int(bootstrap.rsplit(":", 1)[1])
    r = call(port, 29, 3, M.DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1,
                                                operation=1, permission_type=1))
    assert r.error_code == E.SECURITY_DISABLED
    C = M.CreateAclsRequest
    r = call(port, 30, 3, C(creations=[C.AclCreation(resource_type=2, resource_name="t",
                                                     resource_pattern_type=3, principal="User:a",
                                                     host="*", operation=3, permission_type=3)]))
    assert [x.error_code for x in r.results] == [E.SECURITY_DISABLED]
    D = M.DeleteAclsRequest
    r = call(port, 31, 3, D(filters=[D.DeleteAclsFilter(resource_type_filter=1, pattern_type_filter=1,
                                                        operation=1, permission_type=1)]))
    assert [x.error_code for x in r.filter_results] == [E.SECURITY_DISABLED]
    nope = E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    assert call(port, 38, 3, M.CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1)).error_code == nope
    assert call(port, 39, 2, M.RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=1)).error_code == nope
    assert call(port, 40, 2, M.ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=1)).error_code == nope
    r = call(port, 41, 3, M.DescribeDelegationTokenRequest(owners=None))
    assert r.error_code == nope and r.tokens == []


def test_authorized_operations(broker_factory, topic_name):
    """KIP-430 bitfields computed from the ACLs (Metadata v10 topics and cluster,
    DescribeCluster), for a principal with some ACLs and no super-user rights."""
    from kbroker.wire import messages as M
    from tests.cluster.support import call
    b = broker_factory(**STANDARD, **{"allow.everyone.if.no.acl.found": "true"})
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(topic_name, 1, 1)])
        assert not admin.create_acls([
            acl(ResourceType.TOPIC, topic_name, ACLOperation.READ, ACLPermissionType.ALLOW),
            acl(ResourceType.TOPIC, topic_name[:6], ACLOperation.ALTER_CONFIGS, ACLPermissionType.ALLOW,
                ACLResourcePatternType.PREFIXED),
            acl(ResourceType.CLUSTER, "kafka-cluster", ACLOperation.IDEMPOTENT_WRITE, ACLPermissionType.ALLOW),
            acl(ResourceType.CLUSTER, "kafka-cluster", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW),
            acl(ResourceType.CLUSTER, "kafka-cluster", ACLOperation.ALTER, ACLPermissionType.ALLOW),
        ])["failed"]
    finally:
        admin.close()
    port = int(b.bootstrap_servers.rsplit(":", 1)[1])
    want_topic = (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11)   # READ, DESCRIBE, DESCRIBE/ALTER_CONFIGS
    want_cluster = (1 << 12) | (1 << 8) | (1 << 7)              # IDEMPOTENT_WRITE, DESCRIBE, ALTER
    deadline = time.monotonic() + 20
    while True:
        r = call(port, 3, 10, M.MetadataRequest(
            topics=[M.MetadataRequest.MetadataRequestTopic(name=topic_name)],
            allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
            include_topic_authorized_operations=True))
        got = (r.topics[0].topic_authorized_operations, r.cluster_authorized_operations)
        if got == (want_topic, want_cluster) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert got == (want_topic, want_cluster)
    r = call(port, 60, 0, M.DescribeClusterRequest(include_cluster_authorized_operations=True))
    assert r.cluster_authorized_operations == want_cluster
