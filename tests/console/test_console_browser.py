"""The console in a real browser: Debian's chromium driven by Playwright (the system
browser via ``executable_path``; nothing is downloaded at run time — ``make
console-browser`` installs both). Against a real broker process and a real confluent-kafka
consumer: create a topic, produce with the page, browse from offset 0 and by timestamp,
watch a group's lag rise and fall, reset its offsets, and bad input on every form.
Screenshots go to ``tests/console/results/`` (the README's come from here)."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer

from .conftest import TIMEOUT_MS, shot

@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900}, color_scheme="light")
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def test_topic_produce_browse_and_bad_input(page, console):
    from playwright.sync_api import expect
    base = console.base
    page.goto(base + "/")
    expect(page.locator("h1")).to_have_text("Topics")
    # create a topic with the form; a second time is refused with Kafka's reason
    page.fill("#create-name", "orders")
    page.fill("#create-partitions", "2")
    page.click("#create-btn")
    expect(page.locator("#create-msg")).to_contain_text("created orders")
    expect(page.locator('tr[data-topic="orders"]')).to_be_visible()
    page.click("#create-btn")
    expect(page.locator("#create-msg")).to_contain_text("TOPIC_ALREADY_EXISTS")
    page.click('tr[data-topic="orders"] a')
    expect(page.locator("#topic-name")).to_have_text("orders")

    # produce with the page: two records, then (after a pause) two more
    def produce(key, value, headers="", partition="0"):
        page.fill("#produce-key", key)
        page.fill("#produce-value", value)
        page.fill("#produce-headers", headers)
        page.select_option("#produce-partition", partition)
        page.click("#produce-btn")

    produce("order-1", '{"id": 1, "item": "coffee", "qty": 2}', "source=console\ntrace=a1")
    expect(page.locator("#produce-msg")).to_contain_text("at offset 0")
    produce("order-2", '{"id": 2, "item": "tea", "qty": 1}', "source=console")
    expect(page.locator("#produce-msg")).to_contain_text("at offset 1")
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    produce("order-3", '{"id": 3, "item": "cake", "qty": 4}')
    expect(page.locator("#produce-msg")).to_contain_text("at offset 2")
    produce("order-4", "plain text, not JSON", partition="1")
    expect(page.locator("#produce-msg")).to_contain_text("partition 1 at offset 0")

    # browse partition 0 from offset 0, pretty JSON
    page.select_option("#browse-partition", "0")
    page.select_option("#browse-mode", "offset")
    page.fill("#browse-offset", "0")
    page.select_option("#browse-format", "json")
    page.click("#browse-load")
    rows = page.locator("#records tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0).locator(".rec-key")).to_have_text("order-1")
    expect(rows.nth(0).locator(".rec-value")).to_contain_text('"item": "coffee"')
    expect(rows.nth(0).locator(".rec-headers")).to_contain_text("trace=a1")
    # search within the loaded page
    page.fill("#browse-search", "tea")
    expect(rows).to_have_count(1)
    expect(rows.nth(0).locator("mark")).to_have_text("tea")
    page.fill("#browse-search", "")
    shot(page, "topic-browse-json", full=True)
    # hex view
    page.select_option("#browse-format", "hex")
    expect(rows.nth(0).locator(".rec-value")).to_contain_text("7b 22 69 64")
    page.select_option("#browse-format", "text")

    # by timestamp, every partition: only what came after ``middle``
    page.select_option("#browse-partition", "")
    page.select_option("#browse-mode", "timestamp")
    page.fill("#browse-timestamp", str(middle))
    page.click("#browse-load")
    expect(rows).to_have_count(2)
    keys = sorted(rows.locator(".rec-key").all_inner_texts())
    assert keys == ["order-3", "order-4"]
    # newest first
    page.select_option("#browse-mode", "newest")
    page.click("#browse-load")
    expect(rows).to_have_count(4)
    expect(rows.nth(0).locator(".rec-key")).to_have_text("order-4")
    # page back: two newest of partition 0, then the two before them
    page.select_option("#browse-partition", "0")
    page.fill("#browse-limit", "2")
    page.click("#browse-load")
    expect(rows.locator(".rec-key")).to_have_text(["order-3", "order-2"])
    expect(page.locator("#browse-more")).to_have_text("Older")
    page.click("#browse-more")
    expect(rows.locator(".rec-key")).to_have_text(["order-1"])
    page.fill("#browse-limit", "50")
    page.select_option("#browse-partition", "")

    # live tail: a record produced by a client shows up without a reload
    page.check("#browse-tail")
    p = Producer({"bootstrap.servers": console.broker.bootstrap_servers})
    p.produce("orders", key=b"from-client", value=b"tailed", partition=1)
    assert p.flush(30) == 0
    expect(page.locator("#records tbody tr", has_text="from-client")).to_have_count(1)
    page.uncheck("#browse-tail")

    # bad input gets a message on the page; nothing breaks
    page.select_option("#browse-partition", "0")
    page.select_option("#browse-mode", "offset")
    page.fill("#browse-offset", "999")
    page.click("#browse-load")
    expect(page.locator("#browse-msg")).to_contain_text("out of range")
    page.fill("#browse-offset", "abc")
    page.click("#browse-load")
    expect(page.locator("#browse-msg")).to_contain_text("must be an integer")
    page.select_option("#browse-mode", "timestamp")
    page.fill("#browse-timestamp", "next tuesday")
    page.click("#browse-load")
    expect(page.locator("#browse-msg")).to_contain_text("not a timestamp")
    page.fill("#produce-headers", "no-equals-sign")
    page.click("#produce-btn")
    expect(page.locator("#produce-msg")).to_contain_text("bad header line")
    page.fill("#produce-headers", "")
    page.evaluate("document.querySelector('#produce-value').value = 'x'.repeat(2 * 1024 * 1024)")
    page.click("#produce-btn")
    expect(page.locator("#produce-msg")).to_contain_text("too large")
    # a record over the topic's max.message.bytes is refused by the Produce path
    cfg = page.locator('#configs input[data-config="max.message.bytes"]')
    cfg.fill("200")
    page.click("#configs-save")
    expect(page.locator("#configs-msg")).to_contain_text("saved: max.message.bytes")
    page.evaluate("document.querySelector('#produce-value').value = 'y'.repeat(1000)")
    page.click("#produce-btn")
    expect(page.locator("#produce-msg")).to_contain_text("larger than the topic's max.message.bytes (200)")
    page.locator('#configs input[data-config="retention.ms"]').fill("soon")
    page.click("#configs-save")
    expect(page.locator("#configs-msg")).to_contain_text("INVALID_CONFIG")
    shot(page, "topic-bad-input", full=True)
    page.goto(base + "/topics/no-such-topic")
    expect(page.locator("#topic-error")).to_contain_text("does not exist")
    page.goto(base + "/groups/no-such-group")
    expect(page.locator("#group-error")).to_contain_text("does not exist")


def test_group_lag_rises_falls_and_resets(page, console):
    from playwright.sync_api import expect
    base = console.base
    bootstrap = console.broker.bootstrap_servers
    status, _ = console.post("/api/console/topics", {"name": "payments", "partitions": 3})
    assert status == 201
    producer = Producer({"bootstrap.servers": bootstrap})

    def produce(n):
        for i in range(n):
            producer.produce("payments", key=f"p{i}".encode(), value=f'{{"amount": {i}}}'.encode())
        assert producer.flush(30) == 0

    produce(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})

    def consume(n):
        got, deadline = 0, time.monotonic() + 30
        while got < n and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got += 1
        assert got == n
        consumer.commit(asynchronous=False)

    try:
        consumer.subscribe(["payments"])
        consume(30)
        page.goto(base + "/groups")
        expect(page.locator('tr[data-group="billing"]')).to_be_visible()
        page.click('tr[data-group="billing"] a')
        expect(page.locator("#group-state [data-state]")).to_have_text("Stable")
        expect(page.locator("#group-lag")).to_have_text("0")
        produce(45)                         # the lag rises...
        expect(page.locator("#group-lag")).to_have_text("45")
        expect(page.locator("#offsets tbody tr")).to_have_count(3)
        shot(page, "group-lag", full=True)
        consume(45)                         # ...and falls as the consumer reads
        expect(page.locator("#group-lag")).to_have_text("0")
        # a group with members cannot be reset
        page.select_option("#reset-to", "earliest")
        page.click("#reset-btn")
        expect(page.locator("#reset-msg")).to_contain_text("stop its consumers first")
    finally:
        consumer.close()
    expect(page.locator("#group-state [data-state]")).to_have_text("Empty")
    page.select_option("#reset-topic", "payments")
    page.select_option("#reset-to", "earliest")
    page.click("#reset-btn")
    expect(page.locator("#reset-msg")).to_contain_text("offsets reset")
    expect(page.locator("#group-lag")).to_have_text("75")
    page.select_option("#reset-to", "offset")
    page.fill("#reset-value", "minus one")
    page.click("#reset-btn")
    expect(page.locator("#reset-msg")).to_contain_text("not a valid offset")
    page.fill("#reset-value", "20")
    page.click("#reset-btn")
    expect(page.locator("#reset-msg")).to_contain_text("offsets reset")
    shot(page, "group-reset", full=True)
    # delete, after the confirmation dialog
    page.once("dialog", lambda d: d.accept())
    page.click("#delete-btn")
    expect(page.locator("#reset-msg")).to_contain_text("group deleted")
    page.goto(base + "/groups")
    expect(page.locator('tr[data-group="billing"]')).to_have_count(0)


def test_topics_and_cluster_pages_light_and_dark(browser, console):
    from playwright.sync_api import expect
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1366, "height": 860}, color_scheme=scheme)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        try:
            page.goto(console.base + "/topics")
            expect(page.locator("#topics tbody tr").first).to_be_visible()
            shot(page, f"topics-{scheme}")
            page.goto(console.base + "/cluster")
            expect(page.locator('#brokers tr[data-node="1"] [data-status]')).to_have_text("online")
            expect(page.locator("#voters tbody tr")).to_have_count(1)
            expect(page.locator('[data-chart="messages_in"]')).to_be_visible()
            shot(page, f"cluster-{scheme}", full=True)
            bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
            assert (bg == "rgb(15, 19, 24)") == (scheme == "dark"), bg
        finally:
            context.close()
