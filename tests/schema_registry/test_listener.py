"""Turning the registry on: ``--schema-registry``, the config key, ``--dev``'s default
(127.0.0.1:8081, only a warning when that port is taken), a taken explicit port is a
start-up error naming the key, and a broker without the setting serves no registry."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from kbroker.testing.processes import KbrokerProcess, free_port
from kbroker.tools.cli import _parser, build_config


def config(*argv):
    return build_config(_parser().parse_args(["serve", *argv]))


def test_flag_key_and_dev_default():
    assert config().get("kbroker.schema.registry.listen") is None
    c = config("--schema-registry", "127.0.0.1:18081")
    assert c.get("kbroker.schema.registry.listen") == "127.0.0.1:18081"
    assert c.schema_registry_optional is False
    c = config("--dev")
    assert c.get("kbroker.schema.registry.listen") == "127.0.0.1:8081"
    assert c.schema_registry_optional is True
    # an explicit setting wins over --dev's and is not optional
    c = config("--dev", "--override", "kbroker.schema.registry.listen=127.0.0.1:18082")
    assert c.get("kbroker.schema.registry.listen") == "127.0.0.1:18082"
    assert c.schema_registry_optional is False
    from kbroker.config.broker import ConfigError
    with pytest.raises(ConfigError):
        config("--schema-registry", "no-port")


def _hold(port: int):
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen(1)
    return s


def test_dev_with_8081_taken_warns_and_serves_kafka(tmp_path):
    try:
        held = _hold(8081)          # if another process holds it, the case is the same
    except OSError:
        held = None
    port = free_port()
    out = tmp_path / "out.txt"
    with open(out, "wb") as log:
        p = subprocess.Popen([sys.executable, "-m", "kbroker", "serve", "--dev", "--port", str(port)],
                             cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        from tests.cluster.support import wait_for
        wait_for(lambda: "kbroker ready:" in out.read_text(errors="replace") or p.poll() is not None,
                 timeout=60, what="the ready line")
        text = out.read_text(errors="replace")
        assert "kbroker ready:" in text, text[-2000:]
        assert "schema registry not started" in text
    finally:
        p.terminate()
        p.wait(30)
        if held is not None:
            held.close()


def test_an_explicit_taken_port_stops_the_start(tmp_path):
    held = _hold(free_port())
    try:
        port = held.getsockname()[1]
        broker = KbrokerProcess(tmp_path / "data", {"kbroker.schema.registry.listen": f"127.0.0.1:{port}"},
                                start_timeout=60)
        with pytest.raises(RuntimeError) as e:
            broker.start()
        assert "kbroker.schema.registry.listen" in str(e.value)
    finally:
        held.close()


def test_no_registry_without_the_setting(tmp_path):
    broker = KbrokerProcess(tmp_path / "data").start()
    try:
        assert "schema registry on" not in broker.log_text()
        assert "_schemas" not in broker.admin.list_topics(internal=True)
    finally:
        broker.stop()
