"""CreateAcls / DescribeAcls / DeleteAcls end to end with kafka-python's admin client
against a real kbroker process: with the StandardAuthorizer on (the test's connections are
``User:ANONYMOUS``, a super user here), without one (SECURITY_DISABLED, as Kafka), and
after a restart (the ACLs are in the metadata log)."""
from __future__ import annotations

import pytest
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         KafkaAdminClient, ResourcePattern, ResourcePatternFilter, ResourceType)
from kafka.errors import ClusterAuthorizationFailedError, SecurityDisabledError

from tests.support.broker_proc import BrokerProcess

AUTHZ = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


@pytest.fixture
def secured(tmp_path):
    proc = BrokerProcess(tmp_path / "data", overrides={**AUTHZ, "super.users": "User:ANONYMOUS"})
    proc.start()
    try:
        yield proc
    finally:
        if proc.running:
            proc.stop()


def admin(proc) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=proc.bootstrap, request_timeout_ms=10000)


def everything() -> ACLFilter:
    return ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                     permission_type=ACLPermissionType.ANY,
                     resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                            ACLResourcePatternType.ANY))


def key(a: ACL):
    p = a.resource_pattern
    return (p.resource_type, p.resource_name, p.pattern_type, a.principal, a.host, a.operation,
            a.permission_type)


def test_acl_lifecycle(secured):
    a = admin(secured)
    try:
        read = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                   ResourcePattern(ResourceType.TOPIC, "orders", ACLResourcePatternType.LITERAL))
        write = ACL("User:alice", "10.0.0.1", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.TOPIC, "ord", ACLResourcePatternType.PREFIXED))
        deny = ACL("User:bob", "*", ACLOperation.ALL, ACLPermissionType.DENY,
                   ResourcePattern(ResourceType.GROUP, "g1", ACLResourcePatternType.LITERAL))
        out = a.create_acls([read, write, deny, read])
        assert not out["failed"] and len(out["succeeded"]) == 4
        acls, err = a.describe_acls(everything())
        assert {key(x) for x in acls} == {key(read), key(write), key(deny)}
        # MATCH: the literal ACL of the name and prefixed ACLs it starts with
        acls, _ = a.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                            ResourcePatternFilter(ResourceType.TOPIC, "orders",
                                                                  ACLResourcePatternType.MATCH)))
        assert {key(x) for x in acls} == {key(read), key(write)}
        acls, _ = a.describe_acls(ACLFilter("User:bob", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                            ResourcePatternFilter(ResourceType.ANY, None,
                                                                  ACLResourcePatternType.ANY)))
        assert [key(x) for x in acls] == [key(deny)]
        # an invalid binding fails alone
        bad = ACL("alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(ResourceType.TOPIC, "x", ACLResourcePatternType.LITERAL))
        out = a.create_acls([bad])
        assert len(out["failed"]) == 1 and not out["succeeded"]
        # delete by a filter: only what it matches
        results = a.delete_acls([ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                           ResourcePatternFilter(ResourceType.TOPIC, None,
                                                                 ACLResourcePatternType.ANY))])
        (_, deleted, error), = results
        assert {key(x) for x in deleted} == {key(read), key(write)}
        acls, _ = a.describe_acls(everything())
        assert [key(x) for x in acls] == [key(deny)]
    finally:
        a.close()
    secured.restart()
    a = admin(secured)
    try:
        acls, _ = a.describe_acls(everything())
        assert [key(x) for x in acls] == [key(deny)]
    finally:
        a.close()


def test_acl_apis_need_cluster_alter(tmp_path):
    proc = BrokerProcess(tmp_path / "data", overrides=AUTHZ)   # no super user, no ACLs
    proc.start()
    a = admin(proc)
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            a.describe_acls(everything())
        out = a.create_acls([ACL("User:x", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                 ResourcePattern(ResourceType.TOPIC, "t", ACLResourcePatternType.LITERAL))])
        assert len(out["failed"]) == 1
        assert out["failed"] == [ClusterAuthorizationFailedError]
    finally:
        a.close()
        proc.stop()


def test_without_authorizer_security_disabled(tmp_path):
    kbroker_proc = BrokerProcess(tmp_path / "data").start()
    a = admin(kbroker_proc)
    try:
        with pytest.raises(SecurityDisabledError):
            a.describe_acls(everything())
        out = a.create_acls([ACL("User:x", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                 ResourcePattern(ResourceType.TOPIC, "t", ACLResourcePatternType.LITERAL))])
        assert out["failed"] == [SecurityDisabledError]
    finally:
        a.close()
        kbroker_proc.stop()
