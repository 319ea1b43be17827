"""Fixtures for broker tests.

- ``kbroker_proc``: a real ``python -m kbroker serve`` subprocess on a free port with a
  temporary data dir (see ``tests/support/broker_proc.py``); stopped gracefully after the test.
- ``broker_server``: an in-process broker (``kbroker.server.serve``) inside the test's trio
  run, with its ``Server`` object (``.bootstrap``, ``.broker``, ``.request_shutdown()``).
- ``make_config``: a ``BrokerConfig`` for a tmp data dir and port 0.
"""
from __future__ import annotations

import pytest
import trio

from kbroker.config.broker import BrokerConfig
from tests.support.broker_proc import BrokerProcess


@pytest.fixture
def kbroker_proc(tmp_path):
    proc = BrokerProcess(tmp_path / "data")
    proc.start()
    try:
        yield proc
    finally:
        if proc.running:
            proc.stop()


@pytest.fixture
def make_config(tmp_path):
    def make(**overrides) -> BrokerConfig:
        raw = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data")}
        raw.update({k.replace("_", "."): v for k, v in overrides.items()})
        return BrokerConfig.from_dict(raw)
    return make


@pytest.fixture
async def broker_server(make_config, nursery):
    from kbroker.server import serve
    server = await nursery.start(serve, make_config())
    yield server
    server.request_shutdown()
    with trio.fail_after(10):
        await server.wait_stopped()
