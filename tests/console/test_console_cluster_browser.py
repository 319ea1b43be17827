"""The console of a three-node cluster in a real browser: a node killed with SIGKILL is
shown offline (fenced by the controller once its session times out), its partitions
under-replicated, and the quorum still answers; partitions led elsewhere are named with
their leader on the topic page; a topic whose ISR fell below its ``min.insync.replicas``
shows the killed node as an eligible leader replica (KIP-966) on its page, and
``kbroker topics describe`` prints the same ELR."""
from __future__ import annotations

import json
import re
import urllib.request

import pytest

from kbroker.testing.processes import KbrokerCluster

from .conftest import shot

pytestmark = pytest.mark.slow


def test_node_killed_shows_offline(browser, tmp_path):
    from playwright.sync_api import expect
    cluster = KbrokerCluster(tmp_path, 3, {"replica.lag.time.max.ms": "1000",
                                           "broker.session.timeout.ms": "3000",
                                           "broker.heartbeat.interval.ms": "500"})
    cluster.start()
    context = browser.new_context(viewport={"width": 1366, "height": 860}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        base = f"http://{cluster.nodes[1].http_address}"
        page.goto(base + "/cluster")
        for n in (1, 2, 3):
            expect(page.locator(f'#brokers tr[data-node="{n}"] [data-status]')).to_have_text("online")
        expect(page.locator("#voters tbody tr")).to_have_count(3)

        page.goto(base + "/topics")
        page.fill("#create-name", "replicated")
        page.fill("#create-partitions", "3")
        page.fill("#create-rf", "3")
        page.click("#create-btn")
        expect(page.locator("#create-msg")).to_contain_text("created replicated")
        page.click('tr[data-topic="replicated"] a')
        expect(page.locator("#partitions tbody tr")).to_have_count(3)
        # the leaders are spread: partitions led elsewhere are named with their node
        expect(page.locator("#partitions tbody", has_text="on node")).to_have_count(1)

        # a topic whose ISR the kill takes below min.insync.replicas: its lost replica is
        # kept as an eligible leader replica (KIP-966)
        req = urllib.request.Request(base + "/api/console/topics", method="POST", data=json.dumps(
            {"name": "elr3", "partitions": 1, "replication_factor": 3,
             "configs": {"min.insync.replicas": "3"}}).encode(), headers={"Content-Type": "application/json"})
        assert urllib.request.urlopen(req, timeout=30).status == 201

        cluster.nodes[3].kill()
        page.goto(base + "/cluster")
        # fenced once its session (broker.session.timeout.ms) runs out
        expect(page.locator('#brokers tr[data-node="3"] [data-status]')).to_have_text("offline", timeout=60_000)
        expect(page.locator('#brokers tr[data-node="1"] [data-status]')).to_have_text("online")
        expect(page.locator("#urp-count")).not_to_have_text("0")
        expect(page.locator("#urp tbody tr").first).to_contain_text("replicated-")
        expect(page.locator("#voters tbody tr")).to_have_count(3)
        shot(page, "cluster-node-offline", full=True)
        assert re.fullmatch(r"[12]", page.locator("#controller-id").inner_text())

        from compat_tests import kbroker_cli
        bs = cluster.bootstrap_servers

        def elrs():
            [d] = kbroker_cli.js("topics", "describe", "elr3", "-b", bs)
            return [(p["elr"], p["last_known_elr"]) for p in d["partitions"]]
        kbroker_cli.eventually_equal(elrs, [([3], [])], timeout=60)
        [row] = kbroker_cli.table(kbroker_cli.ok("topics", "describe", "elr3", "-b", bs).stdout)
        page.goto(base + "/topics/elr3")
        expect(page.locator("#partitions tbody td.elr")).to_have_text("3")
        expect(page.locator("#partitions tbody td.last-known-elr")).to_have_text("-")
        assert (row["ELR"], row["LAST-KNOWN-ELR"]) == ("3", "-")
    finally:
        context.close()
        cluster.stop()
