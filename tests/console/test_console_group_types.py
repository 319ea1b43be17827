"""The console's group pages for KIP-848 and share groups, made by real clients
(confluent-kafka with ``group.protocol=consumer``, its ShareConsumer): while the client runs,
``/api/console/groups/<id>`` shows the group Stable with its member, its assignment (current
and target for KIP-848) and its lag — read through the same describe API handlers a client
calls, not DescribeGroups (which knows classic groups only and showed them Dead)."""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer

from kbroker.testing.processes import KbrokerProcess
from tests.console.conftest import Console


@pytest.fixture(scope="module")
def console_broker(tmp_path_factory):
    broker = KbrokerProcess(tmp_path_factory.mktemp("console-types") / "data", {
        "group.initial.rebalance.delay.ms": "0",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1"}).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def console(console_broker) -> Console:
    return Console(console_broker)


def _until(what, check, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def _produce(bs, topic, partition, n):
    p = Producer({"bootstrap.servers": bs})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), partition=partition)
    p.flush(30)


def _run(client, poll, stop):
    while not stop.is_set():
        poll(client)
    client.close()


def _detail(console, group):
    status, d = console.get(f"/api/console/group?id={group}")
    return d if status == 200 else None


def test_kip848_group_is_stable_with_its_member_and_lag(console, console_broker):
    bs = console_broker.bootstrap_servers
    topic, group = f"t848-{uuid.uuid4().hex[:6]}", f"g848-{uuid.uuid4().hex[:6]}"
    assert console.post("/api/console/topics", {"name": topic, "partitions": 2})[0] == 201
    _produce(bs, topic, 0, 5)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "client.id": "c848", "auto.offset.reset": "earliest",
                  "auto.commit.interval.ms": 200})
    c.subscribe([topic])
    stop = threading.Event()
    t = threading.Thread(target=_run, args=(c, lambda x: x.poll(0.2), stop), daemon=True)
    t.start()
    try:
        d = _until("a Stable KIP-848 group with its commits", lambda: (
            (x := _detail(console, group)) and x["state"] == "Stable" and x["member_count"] == 1
            and {o["partition"]: o["committed_offset"] for o in x["offsets"]}.get(0) == 5 and x))
        assert d["group_type"] == "consumer" and d["group_epoch"] >= 1
        [m] = d["members"]
        assert m["client_id"] == "c848"
        assert m["assignment"] == m["target_assignment"] == [{"topic": topic, "partitions": [0, 1]}]
        assert {o["partition"]: (o["lag"], o["member_id"]) for o in d["offsets"]}[0] == (0, m["member_id"])
        _produce(bs, topic, 1, 0)
        listed = {g["group_id"]: g for g in console.get("/api/console/groups")[1]["groups"]}
        assert listed[group]["group_type"] == "consumer" and listed[group]["members"] == 1
    finally:
        stop.set()
        t.join(30)


def test_share_group_shows_its_state_member_and_start_offsets(console, console_broker):
    bs = console_broker.bootstrap_servers
    topic, group = f"tsh-{uuid.uuid4().hex[:6]}", f"gsh-{uuid.uuid4().hex[:6]}"
    assert console.post("/api/console/topics", {"name": topic, "partitions": 1})[0] == 201
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "client.id": "sharer", "log_level": 0})
    c.subscribe([topic])
    stop = threading.Event()

    def poll(x):
        if list(x.poll(0.2) or ()):
            x.commit_sync()
    t = threading.Thread(target=_run, args=(c, poll, stop), daemon=True)
    t.start()
    try:
        _until("the share group's member", lambda: (x := _detail(console, group)) and x["member_count"] == 1)
        _produce(bs, topic, 0, 4)      # a share group starts at the end: records after it joined
        d = _until("the start offset past the records read", lambda: (
            (x := _detail(console, group)) and x["state"] == "Stable"
            and [o["committed_offset"] for o in x["offsets"]] == [4] and x))
        assert d["group_type"] == "share"
        [m] = d["members"]
        assert m["client_id"] == "sharer" and m["assignment"] == [{"topic": topic, "partitions": [0]}]
        assert d["offsets"][0]["lag"] == 0
    finally:
        stop.set()
        t.join(30)


def test_kip848_group_page_in_a_browser(browser, console, console_broker):
    """Chromium: the groups page lists a KIP-848 group with its type; its page shows it Stable
    with its member, then the lag rising as records arrive (screenshot for the README)."""
    from playwright.sync_api import expect

    from tests.console.conftest import TIMEOUT_MS, shot
    bs = console_broker.bootstrap_servers
    topic, group = f"tb-{uuid.uuid4().hex[:6]}", f"gb848-{uuid.uuid4().hex[:6]}"
    assert console.post("/api/console/topics", {"name": topic, "partitions": 2})[0] == 201
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "client.id": "browser-848", "auto.offset.reset": "earliest",
                  "auto.commit.interval.ms": 200})
    c.subscribe([topic])
    stop, paused, idle = threading.Event(), threading.Event(), threading.Event()

    def poll(x):
        if paused.is_set():      # no reads (the heartbeat thread keeps the member): lag grows
            idle.set()
            time.sleep(0.2)
            return
        x.poll(0.2)
    t = threading.Thread(target=_run, args=(c, poll, stop), daemon=True)
    t.start()
    context = browser.new_context(viewport={"width": 1366, "height": 900}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        _produce(bs, topic, 0, 3)
        _produce(bs, topic, 1, 2)
        _until("the member's commits", lambda: (
            (x := _detail(console, group)) and x["state"] == "Stable"
            and [o["committed_offset"] for o in x["offsets"]] == [3, 2]))
        page.goto(console.base + "/groups")
        row = page.locator(f'tr[data-group="{group}"]')
        expect(row.locator("td.group-type")).to_have_text("consumer")
        row.locator("a").click()
        expect(page.locator("#group-type")).to_have_text("consumer")
        expect(page.locator("#group-state [data-state]")).to_have_text("Stable")
        expect(page.locator("#group-members")).to_have_text("1")
        expect(page.locator("#group-lag")).to_have_text("0")
        expect(page.locator("#members tbody tr")).to_have_count(1)
        expect(page.locator("#members tbody")).to_contain_text("browser-848")
        paused.set()
        assert idle.wait(30)     # no poll in progress from here on
        _produce(bs, topic, 1, 7)
        expect(page.locator("#group-lag")).to_have_text("7")
        shot(page, "group-kip848", full=True)
    finally:
        context.close()
        stop.set()
        t.join(30)
