"""The gateway's listener: ``kbroker.rest.proxy.listen`` (declared with kbroker's own keys,
checked at start), ``kbroker serve --rest-proxy``, ``--dev`` turning it on at
127.0.0.1:8082 (Confluent's port) unless something else is set, off by default, a port in
use named in the start-up error, 503 answers never reaching a broker that is not there, and
the gateway's requests, latency and consumer instances on the broker's ``/metrics``."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request

import pytest

from kbroker.config.broker import ConfigError
from kbroker.testing.processes import KbrokerProcess, free_port
from kbroker.tools.cli import _parser, build_config

from .conftest import Rest, rest_address


def config(*argv):
    return build_config(_parser().parse_args(["serve", *argv]))


def test_off_by_default_on_with_the_key_or_the_flag():
    assert config().get("kbroker.rest.proxy.listen") is None
    assert config("--rest-proxy", "127.0.0.1:9999").get("kbroker.rest.proxy.listen") == "127.0.0.1:9999"
    assert config("--override", "kbroker.rest.proxy.listen=0.0.0.0:8082").get(
        "kbroker.rest.proxy.listen") == "0.0.0.0:8082"
    assert config().get("kbroker.rest.proxy.consumer.instance.timeout.ms") == 300_000


def test_dev_serves_it_on_8082_unless_told_otherwise(tmp_path):
    assert config("--dev").get("kbroker.rest.proxy.listen") == "127.0.0.1:8082"
    assert config("--dev", "--rest-proxy", "127.0.0.1:0").get("kbroker.rest.proxy.listen") == "127.0.0.1:0"
    props = tmp_path / "server.properties"
    props.write_text("kbroker.rest.proxy.listen=127.0.0.1:18082\n")
    assert config("--dev", "--config", str(props)).get("kbroker.rest.proxy.listen") == "127.0.0.1:18082"


def test_a_bad_address_is_a_configuration_error():
    with pytest.raises(ConfigError, match="kbroker.rest.proxy.listen"):
        config("--rest-proxy", "no-port-here")


def test_a_port_in_use_stops_the_start_naming_the_key(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "kbroker", "serve", "--port", str(free_port()),
                            "--data-dir", str(tmp_path / "d"), "--rest-proxy", f"127.0.0.1:{port}"],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "kbroker.rest.proxy.listen" in r.stderr + r.stdout and "Traceback" not in r.stderr


def test_a_broker_without_the_key_has_no_gateway(tmp_path):
    broker = KbrokerProcess(tmp_path / "data").start()
    try:
        assert "rest-proxy listener" not in broker.log_text()
    finally:
        broker.stop()


def test_a_head_request_answers_the_get_headers_without_a_body(rest):
    status, headers, body = rest.call("HEAD", "/topics")
    assert status == 200 and body is None
    assert headers["content-type"] == "application/vnd.kafka.v2+json"


def _sample(text: str, name: str, **labels) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(rf"^{re.escape(name)}{re.escape('{' + want + '}') if want else ''} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def test_requests_latency_and_instances_are_on_the_brokers_metrics(rest, gateway_broker):
    def scrape() -> str:
        with urllib.request.urlopen(gateway_broker.metrics_url, timeout=30) as r:
            return r.read().decode()
    before = scrape()
    produce = dict(name="kbroker_rest_proxy_requests_total", endpoint="POST /topics/{topic}",
                   status="200")
    missing = dict(name="kbroker_rest_proxy_requests_total", endpoint="GET /topics/{topic}",
                   status="404")
    count = _sample(before, "kbroker_rest_proxy_request_seconds_count")
    for _ in range(2):
        assert rest.post("/topics/metered", {"records": [{"value": {"a": 1}}]},
                         content_type="application/vnd.kafka.json.v2+json")[0] == 200
    assert rest.get("/topics/no-such-topic-here")[0] == 404
    assert rest.get("/no/such/path")[0] == 404
    assert rest.post("/consumers/metered-group", {"name": "m1"})[0] == 200
    after = scrape()
    assert _sample(after, **produce) == _sample(before, **produce) + 2
    assert _sample(after, **missing) == _sample(before, **missing) + 1
    assert _sample(after, "kbroker_rest_proxy_requests_total", endpoint="other", status="404") >= 1
    assert _sample(after, "kbroker_rest_proxy_request_seconds_count") >= count + 5
    assert _sample(after, "kbroker_rest_proxy_consumer_instances") >= 1
    rest.delete("/consumers/metered-group/instances/m1")
    assert _sample(scrape(), "kbroker_rest_proxy_consumer_instances") == \
        _sample(after, "kbroker_rest_proxy_consumer_instances") - 1
