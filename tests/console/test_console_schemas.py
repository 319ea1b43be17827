"""The console's Schemas page against a real ``kbroker serve`` with the schema registry and the
HTTP listener on: schemas registered through the registry's REST API (as clients do) are read
by the page's JSON endpoints from the node's registry service in process — subjects, versions,
the compatibility level and where it comes from, a diff of two versions, the registry's error
codes — and shown in Debian's chromium (Playwright, as the other browser tests)."""
from __future__ import annotations

import json
import uuid

import pytest

from kbroker.testing.processes import KbrokerProcess, free_port
from tests.schema_registry.conftest import Registry, avro_record

from .conftest import TIMEOUT_MS, Console, shot

V1 = avro_record("Order", ("id", "long"), ("item", "string"))
V2 = avro_record("Order", ("id", "long"), ("item", "string"), ("note", "string"), note="")


@pytest.fixture(scope="module")
def sr_console(tmp_path_factory):
    port = free_port()
    broker = KbrokerProcess(tmp_path_factory.mktemp("console-sr") / "data",
                            {"kbroker.schema.registry.listen": f"127.0.0.1:{port}",
                             "group.initial.rebalance.delay.ms": "0"}).start()
    try:
        yield Console(broker), Registry(broker, port)
    finally:
        broker.stop()


@pytest.fixture
def orders(sr_console):
    """A subject with two versions and its own level FULL."""
    _, registry = sr_console
    subject = f"orders-{uuid.uuid4().hex[:8]}-value"
    ids = [registry.call("POST", f"/subjects/{subject}/versions", {"schema": s})[1]["id"] for s in (V1, V2)]
    assert registry.call("PUT", f"/config/{subject}", {"compatibility": "FULL"})[0] == 200
    return subject, ids


def test_overview_and_subject_detail(sr_console, orders):
    console, registry = sr_console
    subject, ids = orders
    plain = f"plain-{uuid.uuid4().hex[:8]}"
    registry.call("POST", f"/subjects/{plain}/versions",
                  {"schemaType": "JSON", "schema": json.dumps({"type": "object"})})

    status, data = console.get("/api/console/schemas")
    assert status == 200 and data["enabled"] is True
    assert data["global_level"] == "BACKWARD" and data["address"] == f"127.0.0.1:{registry.port}"
    rows = {s["subject"]: s for s in data["subjects"]}
    assert rows[subject] == {"subject": subject, "versions": [1, 2], "latest_version": 2,
                             "latest_id": ids[1], "type": "AVRO", "level": "FULL"}
    assert rows[plain]["type"] == "JSON" and rows[plain]["level"] is None

    status, detail = console.get(f"/api/console/schema?subject={subject}")
    assert status == 200
    assert (detail["level"], detail["level_source"]) == ("FULL", "subject")
    assert [(v["version"], v["id"], v["type"]) for v in detail["versions"]] == [(1, ids[0], "AVRO"), (2, ids[1], "AVRO")]
    assert json.loads(detail["versions"][1]["pretty"]) == json.loads(V2)
    status, detail = console.get(f"/api/console/schema?subject={plain}")
    assert (detail["level"], detail["level_source"]) == ("BACKWARD", "global")

    # a soft-deleted version leaves the page as it leaves GET /subjects/{s}/versions
    assert registry.call("DELETE", f"/subjects/{subject}/versions/1")[0] == 200
    status, detail = console.get(f"/api/console/schema?subject={subject}")
    assert [v["version"] for v in detail["versions"]] == [2]


def test_diff(sr_console, orders):
    console, _ = sr_console
    subject, ids = orders
    status, d = console.get(f"/api/console/schema/diff?subject={subject}&from=1&to=latest")
    assert status == 200
    assert (d["from"], d["to"], d["from_id"], d["to_id"], d["same"]) == (1, 2, ids[0], ids[1], False)
    assert d["lines"][0] == f"--- {subject} v1" and d["lines"][1] == f"+++ {subject} v2"
    added = [line for line in d["lines"] if line.startswith("+") and not line.startswith("+++")]
    assert any('"name": "note"' in line for line in added)
    removed = [line for line in d["lines"] if line.startswith("-") and not line.startswith("---")]
    assert all(line[1:].strip() in ("}", "},") for line in removed)   # only the brace gained a comma
    status, d = console.get(f"/api/console/schema/diff?subject={subject}&from=2&to=2")
    assert status == 200 and d["same"] is True and d["lines"] == []


def test_errors(sr_console, orders):
    console, _ = sr_console
    subject, _ = orders
    status, body = console.get(f"/api/console/schema?subject=missing-{uuid.uuid4().hex[:6]}")
    assert status == 404 and body["error"] == "SCHEMA_REGISTRY_ERROR" and "(error 40401)" in body["message"]
    status, body = console.get(f"/api/console/schema/diff?subject={subject}&from=1&to=9")
    assert status == 404 and "(error 40402)" in body["message"]
    status, body = console.get(f"/api/console/schema/diff?subject={subject}&from=x&to=1")
    assert status == 422 and "(error 42202)" in body["message"]
    status, body = console.get("/api/console/schema/diff?subject=" + subject)
    assert status == 400 and body["error"] == "INVALID_REQUEST"
    # and the broker goes on serving
    assert console.get("/api/console/schemas")[0] == 200


def test_registry_off(console):
    """The suite's plain console broker: no registry, the page says how to turn it on."""
    status, data = console.get("/api/console/schemas")
    assert status == 200 and data["enabled"] is False
    assert "kbroker.schema.registry.listen" in data["message"]
    status, body = console.get("/api/console/schema?subject=x")
    assert status == 404


def test_schemas_page_in_the_browser(browser, sr_console, orders):
    from playwright.sync_api import expect
    console, _ = sr_console
    subject, ids = orders
    context = browser.new_context(viewport={"width": 1366, "height": 900}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(console.base + "/topics")
        page.click('header nav a[data-nav="schemas"]')
        expect(page.locator("h1")).to_have_text("Schemas")
        expect(page.locator("#global-level")).to_have_text("BACKWARD")
        row = page.locator(f'#subjects tr[data-subject="{subject}"]')
        expect(row.locator("td.level")).to_have_text("FULL")
        expect(row.locator("td").nth(4)).to_have_text(str(ids[1]))
        shot(page, "schemas")
        row.locator("a").click()
        expect(page.locator("#subject-level")).to_have_text("FULL")
        expect(page.locator("#subject-level-source")).to_have_text("set on this subject")
        expect(page.locator("#versions tbody tr")).to_have_count(2)
        expect(page.locator("#schema-text")).to_contain_text('"note"')
        # the diff of the two last versions is shown on arrival: the added field in green
        expect(page.locator("#diff .diff-add").first).to_be_visible()
        expect(page.locator("#diff .diff-add", has_text='"name": "note"')).to_have_count(1)
        page.select_option("#show-version", "1")
        expect(page.locator("#schema-text")).not_to_contain_text('"note"')
        page.select_option("#diff-from", "2")
        page.click("#diff-btn")
        expect(page.locator("#diff-msg")).to_contain_text("same schema")
        expect(page.locator("#diff div")).to_have_count(0)
        shot(page, "schema-subject", full=True)
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
