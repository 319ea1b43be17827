"""CIDR host patterns in ACLs (Kafka 4.4, ``metadata.version`` 4.4-IV1) end to end: kafka-python's
admin client creates them on a kbroker process with the StandardAuthorizer (no super user;
``allow.everyone.if.no.acl.found`` lets the test's ``User:ANONYMOUS`` administer), a malformed
block is refused with Kafka's INVALID_REQUEST message, and a Metadata request from 127.0.0.1
sees the topic whose ACL allows ``127.0.0.0/8`` and not the one allowed ``10.0.0.0/8`` only."""
from __future__ import annotations

from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                         NewTopic, ResourcePattern, ResourceType)

from kbroker.wire import messages as w
from tests.cluster.support import call, wait_for
from tests.support.broker_proc import BrokerProcess

TOPIC_AUTHORIZATION_FAILED = 29


def allow(host: str, topic: str) -> ACL:
    return ACL("User:ANONYMOUS", host, ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
               ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))


def topic_errors(port: int) -> dict[str, int]:
    R = w.MetadataRequest
    resp = call(port, 3, 12, R(topics=[R.MetadataRequestTopic(name=t) for t in ("near", "far")],
                               allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return {t.name: t.error_code for t in resp.topics}


def test_cidr_acls(tmp_path):
    proc = BrokerProcess(tmp_path / "data", overrides={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true"}).start()
    try:
        a = KafkaAdminClient(bootstrap_servers=proc.bootstrap, request_timeout_ms=10000)
        a.create_topics([NewTopic("near", 1, 1), NewTopic("far", 1, 1)])
        out = a.create_acls([allow("127.0.0.0/8", "near"), allow("10.0.0.0/8", "far"),
                             allow("10.0.0.0/33", "far")])
        assert len(out["succeeded"]) == 2, out
        assert [e.__name__ for e in out["failed"]] == ["InvalidRequestError"]
        a.close()
        # the message, as Kafka words it (the admin client keeps only the code)
        C = w.CreateAclsRequest
        resp = call(proc.port, 30, 3, C(creations=[C.AclCreation(
            resource_type=2, resource_name="far", resource_pattern_type=3, principal="User:ANONYMOUS",
            host="10.0.0.0/33", operation=8, permission_type=3)]))
        [r] = resp.results
        assert r.error_code == 42 and r.error_message.startswith("Invalid CIDR notation '10.0.0.0/33': "), r
        errors = wait_for(lambda: (lambda e: e if e.get("far") else None)(topic_errors(proc.port)),
                          what="the ACLs applied")
        assert errors == {"near": 0, "far": TOPIC_AUTHORIZATION_FAILED}
    finally:
        proc.stop()
