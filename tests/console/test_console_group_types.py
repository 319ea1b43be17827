"""The console's group pages for KIP-848, share and streams groups, made by real clients
(confluent-kafka with ``group.protocol=consumer``, its ShareConsumer, a Kafka Streams app with
``group.protocol=streams``): while the client runs, ``/api/console/groups/<id>`` shows the
group Stable with its member, its assignment (current and target for KIP-848; a streams
member's tasks and the topology) and its lag (a share group: from its start offsets) — read
through the same describe API handlers a client calls, not DescribeGroups (which knows
classic groups only and showed them Dead). The pages in Chromium show the same while the
client runs (screenshots for the README)."""
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
        "share.coordinator.state.topic.min.isr": "1",
        # a streams member learns its tasks on a heartbeat: every half second, not every 5 s
        "group.streams.heartbeat.interval.ms": "500",
        "group.streams.min.heartbeat.interval.ms": "100"}).start()
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


def _share_from_earliest(bs, group):
    """The group config that makes a share group start at the log start: without it the
    share-partition starts at the end when first fetched, which may be after the test's
    records, and nothing is delivered (a start offset at the end then proves nothing)."""
    from compat_tests import kbroker_cli
    kbroker_cli.ok("configs", "alter", "--group", group, "--set", "share.auto.offset.reset=earliest", "-b", bs)


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
    _share_from_earliest(bs, group)
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "client.id": "sharer", "log_level": 0})
    c.subscribe([topic])
    stop = threading.Event()
    read = []

    def poll(x):
        got = [m for m in x.poll(0.2) or () if m.error() is None]
        if got:
            read.extend(got)
            x.commit_sync()
    t = threading.Thread(target=_run, args=(c, poll, stop), daemon=True)
    t.start()
    try:
        _until("the share group's member", lambda: (x := _detail(console, group)) and x["member_count"] == 1)
        _produce(bs, topic, 0, 4)
        _until("the four records read", lambda: len(read) == 4)
        # the start offset is written one write behind, as Kafka (FINDINGS F-970): the
        # acknowledgement of one more record writes it past the first four
        _produce(bs, topic, 0, 1)
        d = _until("the start offset past the records read", lambda: len(read) == 5 and (
            (x := _detail(console, group)) and x["state"] == "Stable"
            and [o["committed_offset"] for o in x["offsets"]] == [4] and x))
        assert d["group_type"] == "share"
        [m] = d["members"]
        assert m["client_id"] == "sharer" and m["assignment"] == [{"topic": topic, "partitions": [0]}]
        assert d["offsets"][0]["lag"] == 0
    finally:
        stop.set()
        t.join(30)


def test_share_group_shows_in_flight_records_and_its_dead_letter_queue(console, console_broker):
    """A share group's records in flight (the partition leader's, as Kafka's
    SharePartitionMetrics InFlightMessageCount) on its page and in ``/metrics`` while a
    consumer holds them unacknowledged; then its dead-letter topic (KIP-1191) with the record
    the consumer rejected counted as written, and nothing left in flight."""
    from confluent_kafka import AcknowledgeType

    from compat_tests import kbroker_cli
    bs = console_broker.bootstrap_servers
    topic, group = f"tif-{uuid.uuid4().hex[:6]}", f"gif-{uuid.uuid4().hex[:6]}"
    dlq = f"dlq.{topic}"
    assert console.post("/api/console/topics", {"name": topic, "partitions": 1})[0] == 201
    assert console.post("/api/console/topics", {"name": dlq, "partitions": 1, "configs": {
        "errors.deadletterqueue.group.enable": "true"}})[0] == 201
    kbroker_cli.ok("configs", "alter", "--group", group, "--set", "share.auto.offset.reset=earliest",
                   "--set", f"errors.deadletterqueue.topic.name={dlq}", "-b", bs)
    _produce(bs, topic, 0, 3)
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "log_level": 0,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    try:
        got = []
        deadline = time.monotonic() + 60
        while len(got) < 3:
            assert time.monotonic() < deadline, f"{len(got)} of 3 records read"
            got += [m for m in c.poll(0.5) or () if m.error() is None]
        # held, not acknowledged: three records acquired by the member
        d = _until("the records in flight", lambda: (x := _detail(console, group)) and x["offsets"]
                   and x["offsets"][0]["in_flight"] and x)
        assert d["offsets"][0]["in_flight"] == {"in_flight": 3, "available": 0, "acquired": 3,
                                                "acknowledged": 0, "archived": 0}
        assert d["dead_letter_queue"] == {"topic": dlq, "enabled": True, "written": 0, "dropped": 0}
        metrics = console.raw("/metrics")[1].decode().splitlines()
        assert (f'kafka_server_sharepartitionmetrics_inflightmessagecount{{group="{group}",'
                f'topic="{topic}",partition="0"}} 3') in metrics
        for m in got:
            c.acknowledge(m, AcknowledgeType.REJECT if m.offset() == 1 else AcknowledgeType.ACCEPT)
        c.commit_sync()
        d = _until("the rejected record written to the dead-letter topic", lambda: (
            (x := _detail(console, group)) and x["dead_letter_queue"]["written"] == 1 and x))
        assert d["offsets"][0]["in_flight"]["in_flight"] == 0
        metrics = console.raw("/metrics")[1].decode().splitlines()
        assert f'kbroker_share_dead_letters_total{{group="{group}"}} 1' in metrics
    finally:
        c.close()


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


def _page(browser):
    from tests.console.conftest import TIMEOUT_MS
    context = browser.new_context(viewport={"width": 1366, "height": 900}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return context, page, errors


def test_share_group_page_in_a_browser(browser, console, console_broker):
    """Chromium: a share group listed with its type; its page shows it Stable with its member,
    the partition's start offset (the column says so) and the lag rising while the consumer
    pauses, each as the coordinator answers it (screenshot for the README)."""
    from playwright.sync_api import expect

    from tests.console.conftest import shot
    bs = console_broker.bootstrap_servers
    topic, group = f"tbs-{uuid.uuid4().hex[:6]}", f"gbsh-{uuid.uuid4().hex[:6]}"
    assert console.post("/api/console/topics", {"name": topic, "partitions": 1})[0] == 201
    _share_from_earliest(bs, group)
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "client.id": "browser-share", "log_level": 0})
    c.subscribe([topic])
    stop, paused, idle = threading.Event(), threading.Event(), threading.Event()
    read = []

    def poll(x):
        if paused.is_set():
            idle.set()
            time.sleep(0.2)
            return
        got = [m for m in x.poll(0.2) or () if m.error() is None]
        if got:
            read.extend(got)
            x.commit_sync()
    t = threading.Thread(target=_run, args=(c, poll, stop), daemon=True)
    t.start()
    context, page, errors = _page(browser)
    try:
        _until("the share group's member", lambda: (x := _detail(console, group)) and x["member_count"] == 1)
        _produce(bs, topic, 0, 5)
        _until("the five records read and acknowledged", lambda: len(read) == 5 and (
            (x := _detail(console, group)) and [o["lag"] for o in x["offsets"]] == [0]))
        page.goto(console.base + "/groups")
        row = page.locator(f'tr[data-group="{group}"]')
        expect(row.locator("td.group-type")).to_have_text("share")
        row.locator("a").click()
        expect(page.locator("#group-type")).to_have_text("share")
        expect(page.locator("#group-state [data-state]")).to_have_text("Stable")
        expect(page.locator("#group-members")).to_have_text("1")
        expect(page.locator("#members tbody tr")).to_have_count(1)
        expect(page.locator("#members tbody")).to_contain_text("browser-share")
        expect(page.locator("#members tbody td.assigned")).to_have_text(f"{topic}: 0")
        expect(page.locator("#offsets-from")).to_have_text("Start offset")
        cells = page.locator(f'#offsets tr[data-tp="{topic}:0"] td')
        start = _detail(console, group)["offsets"][0]["committed_offset"]
        expect(cells.nth(2)).to_have_text(str(start))
        expect(cells.nth(3)).to_have_text("5")
        # the records in flight on this node (all acknowledged: none) and no dead-letter topic
        expect(page.locator("#offsets-inflight")).to_be_visible()
        expect(cells.nth(6)).to_have_text("0 (0 acquired)")
        expect(page.locator("#group-dlq")).to_have_text("Dead-letter topic: none")
        expect(page.locator("#group-lag")).to_have_text("0")
        expect(page.locator("#topology-panel")).to_be_hidden()
        paused.set()
        assert idle.wait(30)     # no poll in progress from here on
        _produce(bs, topic, 0, 6)
        expect(page.locator("#group-lag")).to_have_text("6")
        expect(cells.nth(3)).to_have_text("11")
        shot(page, "group-share", full=True)
    finally:
        context.close()
        stop.set()
        t.join(30)
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.mark.slow
def test_streams_group_page_in_a_browser(browser, console, console_broker, tmp_path):
    """Chromium: a Kafka Streams word count (group.protocol=streams, one instance) listed as a
    streams group; its page shows it Stable with its member, the member's active tasks, the
    topology's two subtopologies and the committed offsets of its source and repartition
    topics; once the instance closes, Empty (screenshot for the README). A JVM: slow."""
    from playwright.sync_api import expect

    from tests.console.conftest import shot
    from tests.support.kafka_streams_app import (ALL_TASKS, APP, CHANGELOG, REPARTITION, App,
                                                 build_classpath, counts, produce, wait_for)
    bs = console_broker.bootstrap_servers
    classpath = build_classpath(tmp_path / "classes")
    assert console.post("/api/console/topics", {"name": "lines", "partitions": 4})[0] == 201
    assert console.post("/api/console/topics", {"name": "counts", "partitions": 1})[0] == 201
    produce(bs, ["the quick brown fox", "jumps over the lazy dog"] * 5)
    app = App(classpath, bs, tmp_path, "console", 7321)
    context, page, errors = _page(browser)
    try:
        wait_for("the counts", lambda: counts(bs).get("the") == 10, [app], timeout=180)
        wait_for("every task running", lambda: app.tasks() == ALL_TASKS, [app])
        d = _until("the streams group's commits", lambda: (
            (x := _detail(console, APP)) and x["state"] == "Stable" and x["offsets"]
            and all(o["lag"] == 0 for o in x["offsets"]) and x))
        assert d["group_type"] == "streams"
        [m] = d["members"]
        assert m["tasks"]["active"] == [{"subtopology": s, "partitions": [0, 1, 2, 3]} for s in ("0", "1")]
        page.goto(console.base + "/groups")
        row = page.locator(f'tr[data-group="{APP}"]')
        expect(row.locator("td.group-type")).to_have_text("streams")
        row.locator("a").click()
        expect(page.locator("#group-type")).to_have_text("streams")
        expect(page.locator("#group-state [data-state]")).to_have_text("Stable")
        expect(page.locator("#group-members")).to_have_text("1")
        expect(page.locator("#members-assigned")).to_have_text("Tasks")
        expect(page.locator("#members tbody td.assigned")).to_have_text("active 0:[0,1,2,3] 1:[0,1,2,3]")
        expect(page.locator("#members tbody")).to_contain_text(m["member_id"])
        topology = page.locator("#topology tbody tr")
        expect(topology).to_have_count(2)
        expect(page.locator('#topology tr[data-subtopology="0"]')).to_contain_text("lines")
        expect(page.locator('#topology tr[data-subtopology="0"]')).to_contain_text(REPARTITION)
        expect(page.locator('#topology tr[data-subtopology="1"]')).to_contain_text(CHANGELOG)
        expect(page.locator("#offsets tbody tr")).to_have_count(len(d["offsets"]))
        # each input partition's row names the member running the task that reads it
        assert {o["member_id"] for o in d["offsets"]} == {m["member_id"]}
        for o in d["offsets"]:
            cells = page.locator(f'#offsets tr[data-tp="{o["topic"]}:{o["partition"]}"] td')
            expect(cells.nth(2)).to_have_text(str(o["committed_offset"]))
            expect(cells.nth(5)).to_have_text(m["member_id"])
        assert {o["topic"] for o in d["offsets"]} == {"lines", REPARTITION}
        expect(page.locator("#group-lag")).to_have_text("0")
        shot(page, "group-streams", full=True)
        app.stop()
        expect(page.locator("#group-state [data-state]")).to_have_text("Empty")
        expect(page.locator("#members tbody tr")).to_have_count(0)
    finally:
        app.stop()
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
