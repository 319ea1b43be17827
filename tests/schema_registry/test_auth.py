"""The registry on a broker with SASL users and an authorizer: HTTP Basic authentication
with the cluster's own credentials (a PLAIN user of the SASL listener's JAAS, a SCRAM
credential made with confluent-kafka's admin client), 401 without them, and the ACLs of the
``_schemas`` topic deciding reads (READ) and writes (WRITE), 403 otherwise."""
from __future__ import annotations

import base64

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                   ResourcePatternType, ResourceType)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from kbroker.testing.processes import free_port
from tests.support.secured_broker import add_scram_user, allow, secured_overrides

from .conftest import avro_record, start_registry

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="alice" password="alice-secret" user_alice="alice-secret" '
              'user_carol="carol-secret";')
SCHEMA = avro_record("Secured", ("x", "int"))


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    plain, sasl = free_port(), free_port()
    reg = start_registry(tmp_path_factory.mktemp("sr-auth") / "data", {
        **secured_overrides(plain, sasl, plain_jaas=PLAIN_JAAS),
    })
    try:
        acls = [AclBinding(ResourceType.TOPIC, "_schemas", ResourcePatternType.LITERAL, user, "*",
                           op, AclPermissionType.ALLOW)
                for user, ops in (("User:alice", (AclOperation.READ, AclOperation.WRITE)),
                                  ("User:bob", (AclOperation.READ,)))
                for op in ops]
        allow(f"127.0.0.1:{plain}", acls)
        add_scram_user(f"127.0.0.1:{plain}", "bob", "bob-secret")
        yield reg
    finally:
        reg.broker.stop()


def test_no_or_wrong_credentials_are_401(secured):
    status, body = secured.call("GET", "/subjects")
    assert (status, body) == (401, {"error_code": 401, "message": "Unauthorized"})
    assert secured.call("GET", "/subjects", headers=basic("alice", "wrong"))[0] == 401
    assert secured.call("GET", "/subjects", headers=basic("nobody", "x"))[0] == 401
    assert secured.call("GET", "/subjects", headers={"Authorization": "Basic !!!"})[0] == 401
    log = secured.broker.log_text()
    assert "authentication failed for user 'alice'" in log and "wrong" not in log


def test_the_www_authenticate_header(secured):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", secured.port, timeout=10)
    conn.request("GET", "/subjects")
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.status == 401 and resp.getheader("www-authenticate", "").startswith("Basic ")


def test_acls_of_the_schemas_topic_decide(secured):
    alice, bob, carol = basic("alice", "alice-secret"), basic("bob", "bob-secret"), basic("carol", "carol-secret")
    status, body = secured.call("POST", "/subjects/acl-value/versions", {"schema": SCHEMA}, headers=alice)
    assert status == 200, body
    # bob (SCRAM) may read, also lookups and compatibility checks, but not write
    assert secured.call("GET", "/subjects", headers=bob) == (200, ["acl-value"])
    assert secured.call("POST", "/subjects/acl-value", {"schema": SCHEMA}, headers=bob)[0] == 200
    assert secured.call("POST", "/compatibility/subjects/acl-value/versions/latest",
                        {"schema": SCHEMA}, headers=bob)[0] == 200
    status, body = secured.call("POST", "/subjects/acl-value/versions",
                                {"schema": avro_record("Other", ("y", "int"))}, headers=bob)
    assert (status, body["error_code"]) == (403, 40301)
    assert secured.call("PUT", "/config", {"compatibility": "NONE"}, headers=bob)[0] == 403
    assert secured.call("DELETE", "/subjects/acl-value", headers=bob)[0] == 403
    # carol authenticates but has no ACL at all
    status, body = secured.call("GET", "/subjects", headers=carol)
    assert (status, body["error_code"]) == (403, 40301)
    assert secured.call("GET", "/subjects/acl-value/versions", headers=alice) == (200, [1])


def test_confluent_client_with_basic_auth(secured):
    client = SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": "alice:alice-secret"})
    schema_id = client.register_schema("client-acl-value", Schema(avro_record("ByClient", ("z", "int")), "AVRO"))
    assert client.get_schema(schema_id).schema_type == "AVRO"
    anonymous = SchemaRegistryClient({"url": secured.url})
    with pytest.raises(SchemaRegistryError) as e:
        anonymous.get_subjects()
    assert e.value.http_status_code == 401
