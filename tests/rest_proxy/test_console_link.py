"""The console's cluster page links to the node's REST gateway: ``/api/console/cluster``
names its URL (the page's script shows it as a link to ``/v3/clusters/<id>``), and a broker
without the gateway names none."""
from __future__ import annotations

import json
import urllib.request

from kbroker.testing.processes import KbrokerProcess

from .conftest import rest_address


def _cluster_view(broker) -> dict:
    with urllib.request.urlopen(f"http://{broker.http_address}/api/console/cluster", timeout=30) as r:
        return json.loads(r.read())


def test_console_names_the_gateway(gateway_broker, rest):
    view = _cluster_view(gateway_broker)
    assert view["rest_proxy"] == f"http://{rest_address(gateway_broker)}"
    # the link the page builds answers
    status, _, body = rest.get(f"/v3/clusters/{view['cluster_id']}")
    assert status == 200 and body["cluster_id"] == view["cluster_id"]


def test_console_without_a_gateway_names_none(tmp_path):
    broker = KbrokerProcess(tmp_path / "data").start()
    try:
        assert _cluster_view(broker)["rest_proxy"] is None
    finally:
        broker.stop()
