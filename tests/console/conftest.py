"""Fixtures of the console tests: a real ``kbroker serve`` child process with its HTTP
listener on loopback, and a small JSON client over real sockets (urllib)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from kbroker.testing import KbrokerProcess


class Console:
    """Calls the console's endpoints of one broker; answers (status, decoded body)."""

    def __init__(self, broker: KbrokerProcess):
        self.broker = broker
        self.base = f"http://{broker.http_address}"

    def raw(self, path: str, data: bytes | None = None, method: str | None = None,
            headers: dict | None = None) -> tuple[int, bytes, dict]:
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def get(self, path: str):
        status, body, _ = self.raw(path)
        return status, json.loads(body)

    def post(self, path: str, value):
        status, body, _ = self.raw(path, json.dumps(value).encode(),
                                   headers={"content-type": "application/json"})
        return status, json.loads(body)


@pytest.fixture(scope="module")
def console_broker(tmp_path_factory):
    broker = KbrokerProcess(tmp_path_factory.mktemp("console") / "data",
                            {"group.initial.rebalance.delay.ms": "0"}).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def console(console_broker) -> Console:
    return Console(console_broker)
