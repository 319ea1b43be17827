"""The Schemas page on a broker with an authorizer: a logged-in principal sees the registry's
subjects only with READ on the topic ``_schemas`` — the ACL the registry's own REST API asks of
a reader — and gets the authorization error otherwise; without a login, nothing."""
from __future__ import annotations

import base64
import http.client
import json

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                   ResourcePatternType, ResourceType)

from kbroker.testing.processes import KbrokerProcess, free_port
from tests.support.secured_broker import add_scram_user, allow, secured_overrides

from .test_console_login import PLAIN_JAAS, Session

CT = "application/vnd.schemaregistry.v1+json"
SCHEMA = json.dumps({"type": "record", "name": "Pay", "fields": [{"name": "cents", "type": "long"}]})


@pytest.fixture(scope="module")
def secured_registry(tmp_path_factory):
    plain, sasl, sr = free_port(), free_port(), free_port()
    broker = KbrokerProcess(tmp_path_factory.mktemp("console-sr-auth") / "data", {
        **secured_overrides(plain, sasl, plain_jaas=PLAIN_JAAS),
        "kbroker.schema.registry.listen": f"127.0.0.1:{sr}",
    }).start()
    try:
        acls = [AclBinding(ResourceType.TOPIC, "_schemas", ResourcePatternType.LITERAL, "User:alice",
                           "*", op, AclPermissionType.ALLOW) for op in (AclOperation.READ, AclOperation.WRITE)]
        allow(f"127.0.0.1:{plain}", acls)
        add_scram_user(f"127.0.0.1:{plain}", "bob", "bob-secret")
        # alice registers a schema through the REST API with her credentials
        conn = http.client.HTTPConnection("127.0.0.1", sr, timeout=30)
        token = base64.b64encode(b"alice:alice-secret").decode()
        conn.request("POST", "/subjects/pay-value/versions", body=json.dumps({"schema": SCHEMA}),
                     headers={"Content-Type": CT, "Authorization": f"Basic {token}"})
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        conn.close()
        yield broker
    finally:
        broker.stop()


def test_schemas_page_needs_read_on_the_schemas_topic(secured_registry):
    anonymous = Session(secured_registry)
    status, body = anonymous.get("/api/console/schemas")
    assert status == 401 and body["error"] == "LOGIN_REQUIRED"

    alice = Session(secured_registry)
    assert alice.login("alice", "alice-secret")[0] == 200
    status, data = alice.get("/api/console/schemas")
    assert status == 200 and [s["subject"] for s in data["subjects"]] == ["pay-value"]
    status, detail = alice.get("/api/console/schema?subject=pay-value")
    assert status == 200 and len(detail["versions"]) == 1

    bob = Session(secured_registry)
    assert bob.login("bob", "bob-secret")[0] == 200
    for path in ("/api/console/schemas", "/api/console/schema?subject=pay-value",
                 "/api/console/schema/diff?subject=pay-value&from=1&to=1"):
        status, body = bob.get(path)
        assert status == 403 and body["error"] == "TOPIC_AUTHORIZATION_FAILED", (path, body)
        assert "User:bob" in body["message"] and "_schemas" in body["message"]
