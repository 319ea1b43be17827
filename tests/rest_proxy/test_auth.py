"""The gateway on a broker with an authorizer: HTTP Basic with the cluster's own users (a
PLAIN user of the SASL listener's JAAS, a SCRAM credential of the metadata log), every call
made as that principal through the Kafka handlers' ACL checks — 401 (40101) without or with
wrong credentials, 403 (40301) for what the ACLs deny, hidden topics left out — and v3's
ACL endpoints creating, listing and deleting the bindings that decide it."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from kbroker.testing.processes import free_port
from tests.support.secured_broker import add_scram_user, allow, secured_overrides

from .conftest import JSON, Rest, rest_address, start_gateway



@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    plain, sasl = free_port(), free_port()
    broker = start_gateway(tmp_path_factory, "rest-auth", {
        **secured_overrides(plain, sasl, super_users="User:ANONYMOUS;User:admin"),
        "auto.create.topics.enable": "false",
    })
    try:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"})
        for f in admin.create_topics([NewTopic("alice-orders", 2, 1), NewTopic("payroll", 1, 1)]).values():
            f.result(30)
        acls = [AclBinding(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED, "User:alice",
                           "*", op, AclPermissionType.ALLOW)
                for op in (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE)]
        acls.append(AclBinding(ResourceType.GROUP, "alice-", ResourcePatternType.PREFIXED,
                               "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW))
        allow(f"127.0.0.1:{plain}", acls)
        add_scram_user(f"127.0.0.1:{plain}", "bob", "bob-secret")
        yield broker
    finally:
        broker.stop()


def _as(broker, user=None, password=None) -> Rest:
    return Rest(rest_address(broker), (user, password) if user else None)


def test_credentials_are_required_and_checked(secured):
    status, headers, body = _as(secured).get("/topics")
    assert (status, body["error_code"]) == (401, 40101)
    assert headers["www-authenticate"].startswith("Basic")
    status, _, body = _as(secured, "alice", "wrong").get("/topics")
    assert (status, body["error_code"]) == (401, 40101)
    assert "authentication failed for user 'alice'" in secured.log_text()
    status, _, body = _as(secured, "nobody", "x").get("/v3/clusters")
    assert (status, body["error_code"]) == (401, 40101)


def test_plain_user_acts_as_its_principal(secured):
    alice = _as(secured, "alice", "alice-secret")
    status, _, topics = alice.get("/topics")
    assert status == 200 and topics == ["alice-orders"]          # payroll is hidden
    status, _, body = alice.post("/topics/alice-orders", {"records": [{"value": 1}]},
                                 content_type=JSON)
    assert status == 200 and body["offsets"][0]["error_code"] is None
    status, _, body = alice.post("/topics/payroll", {"records": [{"value": 1}]}, content_type=JSON)
    assert (status, body["error_code"]) == (403, 40301)
    status, _, body = alice.get("/topics/payroll")
    assert (status, body["error_code"]) == (403, 40301)
    status, _, body = alice.post("/topics/not-there", {"records": [{"value": 1}]}, content_type=JSON)
    assert (status, body["error_code"]) == (403, 40301)     # no DESCRIBE: not told it is missing
    # v3 with the same principal
    cid = alice.get("/v3/clusters")[2]["data"][0]["cluster_id"]
    names = [t["topic_name"] for t in alice.get(f"/v3/clusters/{cid}/topics")[2]["data"]]
    assert names == ["alice-orders"]
    status, _, body = alice.post(f"/v3/clusters/{cid}/topics/payroll/records", {"value": {"data": 1}})
    assert (status, body["error_code"]) == (403, 403)
    status, _, body = alice.post(f"/v3/clusters/{cid}/topics", {"topic_name": "alice-new"})
    assert (status, body["error_code"]) == (403, 403)       # CREATE on the cluster is not granted


def test_consumer_instance_acts_as_its_creator(secured):
    alice = _as(secured, "alice", "alice-secret")
    # its own record (the test passes alone or after any other of the module)
    status, _, body = alice.post("/topics/alice-orders", {"records": [{"value": 2}]},
                                 content_type=JSON)
    assert status == 200 and body["offsets"][0]["error_code"] is None
    status, _, _ = alice.post("/consumers/alice-app", {"name": "a1", "format": "json",
                                                       "auto.offset.reset": "earliest"})
    assert status == 200
    assert alice.post("/consumers/alice-app/instances/a1/subscription",
                      {"topics": ["alice-orders"]})[0] == 204
    got = []
    from .conftest import wait_for

    def more():
        status, _, body = alice.get("/consumers/alice-app/instances/a1/records?timeout=500",
                                    accept=JSON)
        assert status == 200, body
        got.extend(body)
        return 2 in [r["value"] for r in got]
    wait_for(more, what="alice's record")
    alice.delete("/consumers/alice-app/instances/a1")
    # a group alice may not read
    alice.post("/consumers/payroll-app", {"name": "p1"})
    status, _, body = alice.post("/consumers/payroll-app/instances/p1/subscription",
                                 {"topics": ["alice-orders"]})
    assert (status, body["error_code"]) == (403, 40301)


def test_scram_user_and_acls_through_v3(secured):
    bob = _as(secured, "bob", "bob-secret")
    admin = _as(secured, "admin", "admin-secret")
    assert bob.get("/topics")[::2] == (200, [])
    cid = admin.get("/v3/clusters")[2]["data"][0]["cluster_id"]
    acl = {"resource_type": "TOPIC", "resource_name": "payroll", "pattern_type": "LITERAL",
           "principal": "User:bob", "host": "*", "operation": "DESCRIBE", "permission": "ALLOW"}
    status, _, body = bob.post(f"/v3/clusters/{cid}/acls", acl)
    assert (status, body["error_code"]) == (403, 403)          # bob may not ALTER the cluster
    assert admin.post(f"/v3/clusters/{cid}/acls", acl)[0] == 201
    status, _, found = admin.get(f"/v3/clusters/{cid}/acls?principal=User:bob")
    assert status == 200
    assert [{k: a[k] for k in acl} for a in found["data"]] == [acl]
    assert found["data"][0]["kind"] == "KafkaAcl"
    assert bob.get("/topics")[2] == ["payroll"]
    status, _, deleted = admin.delete(f"/v3/clusters/{cid}/acls?resource_type=TOPIC&principal=User:bob")
    assert status == 200 and [a["resource_name"] for a in deleted["data"]] == ["payroll"]
    assert bob.get("/topics")[2] == []
    status, _, body = admin.post(f"/v3/clusters/{cid}/acls", {**acl, "operation": "FLY"})
    assert (status, body["error_code"]) == (400, 400)


def test_missing_topic_without_auto_creation_is_40401(secured):
    admin = _as(secured, "admin", "admin-secret")
    status, _, body = admin.post("/topics/never-made", {"records": [{"value": 1}]}, content_type=JSON)
    assert (status, body["error_code"]) == (404, 40401)


def test_config_writes_and_reassignments_go_through_the_authorizer(secured):
    alice = _as(secured, "alice", "alice-secret")
    admin = _as(secured, "admin", "admin-secret")
    cid = admin.get("/v3/clusters")[2]["data"][0]["cluster_id"]
    one = f"/v3/clusters/{cid}/brokers/1/configs"
    cl = f"/v3/clusters/{cid}/broker-configs"
    # alice has no ALTER_CONFIGS / DESCRIBE_CONFIGS / DESCRIBE on the cluster
    for method, path, body in (("PUT", f"{one}/log.cleaner.threads", {"value": "2"}),
                               ("DELETE", f"{one}/log.cleaner.threads", None),
                               ("POST", f"{one}:alter", {"data": [{"name": "log.cleaner.threads",
                                                                   "value": "2"}]}),
                               ("PUT", f"{cl}/log.retention.ms", {"value": "1000"}),
                               ("GET", cl, None),
                               ("GET", f"{one}/log.cleaner.threads", None),
                               ("PUT", f"/v3/clusters/{cid}/topics/payroll/configs/retention.ms",
                                {"value": "1000"}),
                               ("GET", f"/v3/clusters/{cid}/topics/-/partitions/-/reassignment", None)):
        status, _, answer = alice.call(method, path, body)
        assert (status, answer["error_code"]) == (403, 403), (method, path, answer)
    # nothing changed; the super user may
    assert admin.get(f"{one}/log.cleaner.threads")[2]["source"] != "DYNAMIC_BROKER_CONFIG"
    assert admin.put(f"{one}/log.cleaner.threads", {"value": "2"})[0] == 204
    assert admin.get(f"{one}/log.cleaner.threads")[2]["value"] == "2"
    assert admin.get(f"/v3/clusters/{cid}/topics/-/partitions/-/reassignment")[0] == 200
