"""Fixtures of the REST gateway tests: a real ``kbroker serve`` child process with its REST
listener (``kbroker.rest.proxy.listen``) on a free loopback port, and a plain HTTP client
(urllib, as a user's script calls it) answering (status, headers, decoded body)."""
from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.request

import pytest

from kbroker.testing.processes import KbrokerProcess
from tests.support import waiting

_REST = re.compile(r"rest-proxy listener on https?://(\S+) ")
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"


def rest_address(broker: KbrokerProcess) -> str:
    m = _REST.search(broker.log_text())
    assert m, "no rest-proxy listener line in the broker's log"
    return m.group(1)


class Rest:
    """HTTP calls to one gateway."""

    def __init__(self, address: str, auth: tuple[str, str] | None = None):
        self.base = f"http://{address}"
        self.auth = auth

    def call(self, method: str, path: str, body=None, *, content_type: str | None = None,
             accept: str | None = None, raw: bytes | None = None, headers: dict | None = None):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        h = dict(headers or {})
        if content_type:
            h["Content-Type"] = content_type
        elif data is not None:
            h["Content-Type"] = "application/json" if path.startswith("/v3") else V2
        if accept:
            h["Accept"] = accept
        if self.auth:
            h["Authorization"] = "Basic " + base64.b64encode(":".join(self.auth).encode()).decode()
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, text, answer = r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            status, text, answer = e.code, e.read(), dict(e.headers)
        return status, {k.lower(): v for k, v in answer.items()}, _decode(text)

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.call("PUT", path, body, **kw)

    def delete(self, path, **kw):
        return self.call("DELETE", path, **kw)


def _decode(text: bytes):
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        lines = [l for l in text.splitlines() if l.strip()]
        try:
            return [json.loads(l) for l in lines]
        except ValueError:
            return text


def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    """:func:`tests.support.waiting.wait_for` with the gateway tests' bound and pace."""
    return waiting.wait_for(predicate, timeout, 0.05, what)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def start_gateway(tmp_path_factory, name: str, overrides: dict | None = None) -> KbrokerProcess:
    return KbrokerProcess(tmp_path_factory.mktemp(name) / "data", {
        "kbroker.rest.proxy.listen": "127.0.0.1:0",
        "group.initial.rebalance.delay.ms": "0",
        **(overrides or {})}).start()


@pytest.fixture(scope="module")
def gateway_broker(tmp_path_factory):
    broker = start_gateway(tmp_path_factory, "rest", {
        "kbroker.rest.proxy.consumer.instance.timeout.ms": "4000",
        "kbroker.rest.proxy.max.request.bytes": "65536",
        "num.partitions": "1",
        "group.consumer.heartbeat.interval.ms": "500",
        "group.consumer.min.heartbeat.interval.ms": "500",
    })
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def rest(gateway_broker) -> Rest:
    return Rest(rest_address(gateway_broker))


@pytest.fixture(scope="module")
def cluster_id(rest) -> str:
    status, _, body = rest.get("/v3/clusters")
    assert status == 200
    return body["data"][0]["cluster_id"]
