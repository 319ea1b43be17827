"""The console on a broker with an authorizer: a login with the cluster's own credentials
(PLAIN users of a SASL listener's JAAS, SCRAM credentials of the metadata log), sessions in a
cookie, and pages that show only what the logged-in principal's ACLs allow — the same ACLs a
Kafka client meets (set here with confluent-kafka's admin client, as an operator would).
Also in a real browser: the login form, then the topic list filtered by ACLs."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from kbroker.testing.processes import KbrokerProcess, free_port
from tests.support.secured_broker import add_scram_user, allow, secured_overrides

from .conftest import Console, shot

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="alice" password="alice-secret" user_alice="alice-secret";')


class Session(Console):
    """A console client that keeps the session cookie it is given."""

    cookie: str | None = None

    def raw(self, path, data=None, method=None, headers=None):
        headers = dict(headers or {})
        if self.cookie:
            headers["cookie"] = self.cookie
        status, body, answer_headers = super().raw(path, data, method, headers)
        set_cookie = {k.lower(): v for k, v in answer_headers.items()}.get("set-cookie")
        if set_cookie:
            value = set_cookie.split(";", 1)[0]
            self.cookie = None if value.endswith("=") else value
        return status, body, answer_headers

    def login(self, user, password):
        return self.post("/api/console/login", {"username": user, "password": password})


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    plain, sasl = free_port(), free_port()
    broker = KbrokerProcess(tmp_path_factory.mktemp("console-auth") / "data", {
        **secured_overrides(plain, sasl, plain_jaas=PLAIN_JAAS),
        "group.initial.rebalance.delay.ms": "0",
    }).start()
    try:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"})
        for f in admin.create_topics([NewTopic("alice-orders", 2, 1), NewTopic("payroll", 1, 1)]).values():
            f.result(30)
        acls = [AclBinding(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED, "User:alice",
                           "*", op, AclPermissionType.ALLOW)
                for op in (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE)]
        acls.append(AclBinding(ResourceType.GROUP, "alice-", ResourcePatternType.PREFIXED,
                               "User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW))
        allow(f"127.0.0.1:{plain}", acls)
        add_scram_user(f"127.0.0.1:{plain}", "bob", "bob-secret")
        for group in ("alice-app", "payroll-app"):        # two groups with committed offsets
            c = Consumer({"bootstrap.servers": f"127.0.0.1:{plain}", "group.id": group})
            c.commit(offsets=[TopicPartition("alice-orders", 0, 0)], asynchronous=False)
            c.close()
        yield broker
    finally:
        broker.stop()


def test_login_required_and_credentials_checked(secured):
    s = Session(secured)
    assert s.get("/api/console/whoami") == (200, {"login_required": True, "logged_in": False,
                                                  "principal": None})
    status, body = s.get("/api/console/topics")
    assert (status, body["error"]) == (401, "LOGIN_REQUIRED")
    status, body = s.login("alice", "wrong")
    assert (status, body["error"]) == (401, "SASL_AUTHENTICATION_FAILED")
    assert s.cookie is None
    assert s.login("nobody", "x")[0] == 401
    assert "console login failed for user 'alice'" in secured.log_text()
    assert "wrong" not in secured.log_text().split("console login failed")[1].split("\n")[0]
    # pages and assets are served to everyone (the page itself shows the login form)
    assert s.raw("/")[0] == 200
    # PLAIN user of the SASL listener's JAAS
    status, body = s.login("alice", "alice-secret")
    assert (status, body["principal"]) == (200, "User:alice")
    assert "HttpOnly" in s.raw("/api/console/whoami")[2].get("set-cookie", "HttpOnly")
    assert s.get("/api/console/whoami")[1] == {"login_required": True, "logged_in": True,
                                               "principal": "User:alice"}
    # a made-up cookie is no session
    other = Session(secured)
    other.cookie = "kbroker_console=made-up"
    assert other.get("/api/console/topics")[0] == 401
    # logout ends the session
    assert s.post("/api/console/logout", {})[0] == 200
    assert s.get("/api/console/topics")[0] == 401


def test_pages_show_only_what_the_principal_may_see(secured):
    alice = Session(secured)
    assert alice.login("alice", "alice-secret")[0] == 200
    names = [t["name"] for t in alice.get("/api/console/topics")[1]["topics"]]
    assert names == ["alice-orders"]
    assert alice.get("/api/console/topic?name=alice-orders")[0] == 200
    status, body = alice.get("/api/console/topic?name=payroll")
    assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    # configs are shown only with DESCRIBE_CONFIGS (not granted)
    assert alice.get("/api/console/topic?name=alice-orders")[1]["configs"] == []
    status, body = alice.get("/api/console/messages?topic=payroll&mode=offset&offset=0")
    assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    status, body = alice.post("/api/console/produce", {"topic": "alice-orders", "value": "aGk="})
    assert status == 200, body
    status, body = alice.post("/api/console/produce", {"topic": "payroll", "value": "aGk="})
    assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    page = alice.get("/api/console/messages?topic=alice-orders&mode=offset&offset=0")[1]
    assert len(page["records"]) == 1
    # CreateTopics is the handler's own check: no CREATE on the cluster or the name
    status, body = alice.post("/api/console/topics", {"name": "alice-new", "partitions": 1})
    assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    status, body = alice.post("/api/console/topic/configs",
                              {"topic": "alice-orders", "set": {"retention.ms": "1000"}})
    assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    # groups: only those with DESCRIBE
    groups = [g["group_id"] for g in alice.get("/api/console/groups")[1]["groups"]]
    assert groups == ["alice-app"]
    status, body = alice.get("/api/console/group?id=payroll-app")
    assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED")
    status, body = alice.post("/api/console/group/delete", {"group": "alice-app"})
    assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED")


def test_scram_user_logs_in_and_sees_nothing_without_acls(secured):
    bob = Session(secured)
    assert bob.login("bob", "wrong")[0] == 401
    status, body = bob.login("bob", "bob-secret")
    assert (status, body["principal"]) == (200, "User:bob")
    assert bob.get("/api/console/topics")[1]["topics"] == []
    assert bob.get("/api/console/groups")[1]["groups"] == []


def test_login_in_a_browser(secured, browser):
    from playwright.sync_api import expect
    context = browser.new_context(viewport={"width": 1200, "height": 700})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"http://{secured.http_address}/topics")
        expect(page.locator("#login h1")).to_have_text("Log in")
        page.fill("#login input[name=username]", "alice")
        page.fill("#login input[name=password]", "not-it")
        page.click("#login button[type=submit]")
        expect(page.locator("#login .msg")).to_contain_text("Invalid username or password")
        page.fill("#login input[name=password]", "alice-secret")
        page.click("#login button[type=submit]")
        expect(page.locator("#principal")).to_have_text("User:alice")
        expect(page.locator('tr[data-topic="alice-orders"]')).to_be_visible()
        expect(page.locator('tr[data-topic="payroll"]')).to_have_count(0)
        shot(page, "console-login-filtered")
        page.click("#logout")
        expect(page.locator("#login h1")).to_have_text("Log in")
    finally:
        context.close()
    assert not errors, errors
