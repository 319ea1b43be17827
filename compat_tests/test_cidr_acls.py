"""CIDR host patterns in ACLs (Kafka 4.4, ``metadata.version`` 4.4-IV1, the level both targets
format new clusters at), alike on both brokers: CreateAcls takes ``127.0.0.0/8`` and answers a
malformed block INVALID_REQUEST with an ``Invalid CIDR notation '…': `` message (the parser's
own wording after the colon differs: commons-net on Kafka, Python's ``ipaddress`` here), and a
client on 127.0.0.1 is allowed by the block that holds its address and not by another one.
The StandardAuthorizer with ``allow.everyone.if.no.acl.found`` (no super user), hand-built
requests as ``User:ANONYMOUS``."""
from __future__ import annotations

from compat_tests.differential.common import Connection
from compat_tests.helpers import read_until
from kbroker.wire import messages as M

CLIENT = "hand-built"
INVALID_REQUEST, TOPIC_AUTHORIZATION_FAILED = 42, 29
TOPIC, DESCRIBE, LITERAL, ALLOW = 2, 8, 3, 3


def create_acl(c, topic: str, host: str):
    C = M.CreateAclsRequest
    [r] = c.request(30, 3, C(creations=[C.AclCreation(
        resource_type=TOPIC, resource_name=topic, resource_pattern_type=LITERAL, principal="User:ANONYMOUS",
        host=host, operation=DESCRIBE, permission_type=ALLOW)])).results
    return r.error_code, r.error_message


def topic_errors(c, names) -> dict[str, int]:
    R = M.MetadataRequest
    resp = c.request(3, 12, R(topics=[R.MetadataRequestTopic(name=t) for t in names],
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return {t.name: t.error_code for t in resp.topics}


def test_cidr_host_patterns(broker_factory, topic_name, target):
    b = broker_factory(**{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                          "allow.everyone.if.no.acl.found": "true"})
    near, far = f"{topic_name}-near", f"{topic_name}-far"
    c = Connection((b.host, b.port), timeout=30)
    try:
        R = M.CreateTopicsRequest
        resp = c.request(19, 7, R(topics=[R.CreatableTopic(name=t, num_partitions=1, replication_factor=1,
                                                           assignments=[], configs=[]) for t in (near, far)],
                                  timeout_ms=30_000, validate_only=False))
        assert [t.error_code for t in resp.topics] == [0, 0]
        assert create_acl(c, near, "127.0.0.0/8") == (0, "")
        assert create_acl(c, far, "10.0.0.0/8") == (0, "")
        code, message = create_acl(c, far, "10.0.0.0/33")
        assert code == INVALID_REQUEST and message.startswith("Invalid CIDR notation '10.0.0.0/33': "), message
        # Kafka's broker applies topics and ACLs when its metadata log catches up, after the
        # controller answered: read until the ACL on far shows (before the topics do, both
        # are UNKNOWN_TOPIC_OR_PARTITION, which is no sign of the ACLs)
        errors = read_until(lambda: topic_errors(c, (near, far)),
                            lambda e: e.get(far) == TOPIC_AUTHORIZATION_FAILED, at_once=target == "kbroker")
        assert errors == {near: 0, far: TOPIC_AUTHORIZATION_FAILED}
    finally:
        c.close()
