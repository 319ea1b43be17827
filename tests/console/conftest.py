"""Fixtures of the console tests: a real ``kbroker serve`` child process with its HTTP
listener on loopback, a small JSON client over real sockets (urllib), and Debian's
chromium driven by Playwright (``browser``; screenshots with ``shot`` into ``results/``)."""
from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kbroker.testing.processes import KbrokerProcess


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


RESULTS = Path(__file__).resolve().parent / "results"
TIMEOUT_MS = 20_000


def chromium_path() -> str:
    path = os.environ.get("KBROKER_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("no chromium on this machine: `make console-browser` installs Debian's package")
    return path


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: `make console-browser` (requirements-dev.txt) installs it")
    RESULTS.mkdir(exist_ok=True)
    expect.set_options(timeout=TIMEOUT_MS)     # pages poll every 1-3 s; a loaded machine is slow
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(),
                              args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


def shot(page, name: str, full: bool = False) -> Path:
    path = RESULTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full)
    return path
