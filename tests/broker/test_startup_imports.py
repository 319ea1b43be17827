"""What ``kbroker serve`` imports before it is ready (start-up cost, issue 32): a real
``python -v -m kbroker serve`` process, whose import log names every module it loaded up
to its ``kbroker ready`` line. Module names only, never times: a plain single
node loads no client command, no ``importlib.metadata`` (the version lookup is for
``--version``; CRC32C is loaded without its package's ``__init__``), none of the
consumer, share and streams group types (their API handlers still register: the ApiVersions
tests keep the registry complete) and, without SASL listeners, no SASL mechanism."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from tests.support.broker_proc import free_port

# ``python -v`` names every module as it is loaded (``-X importtime`` misses those loaded
# through importlib.import_module, as the API registry loads its modules)
_IMPORT = re.compile(r"^import '([\w.]+)' #")


def _modules_until_ready(tmp_path) -> set[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-v", "-m", "kbroker", "serve",
         "--data-dir", str(tmp_path / "data"), "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True, cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    names: set[str] = set()
    ready = False
    try:
        for line in proc.stderr:
            m = _IMPORT.match(line)
            if m:
                names.add(m.group(1))
            elif "kbroker ready" in line:
                ready = True
                break
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    assert ready, "the broker never logged its ready line"
    return names


def test_a_plain_single_node_imports_neither_client_commands_nor_package_metadata(tmp_path):
    names = _modules_until_ready(tmp_path)
    assert "kbroker.server" in names and "kbroker.api.produce" in names   # the probe works
    assert "importlib.metadata" not in names
    assert not {n for n in names if n.startswith("kafka")}, "a Kafka client library was loaded"
    commands = {n for n in names if n.startswith("kbroker.tools.")} - {"kbroker.tools.cli"}
    assert not commands, f"client command modules loaded by serve: {sorted(commands)}"
    # consumer (KIP-848), share (KIP-932) and streams (KIP-1071) group types load on first use
    group_types = {n for n in names if n.startswith(("kbroker.group.consumer.protocol",
                                                     "kbroker.group.consumer.state",
                                                     "kbroker.group.streams",
                                                     "kbroker.group.share.state",
                                                     "kbroker.group.share.protocol"))}
    assert not group_types, f"group types loaded before any group was used: {sorted(group_types)}"
    # no SASL listener: neither the SASL state machine nor its mechanisms
    assert not names & {"kbroker.security.authenticator", "kbroker.security.mechanisms"}


def test_serve_parser_alone_and_version_on_demand():
    """``serve`` builds only its own parser; ``--version`` still answers on stdout."""
    out = subprocess.run([sys.executable, "-m", "kbroker", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and re.fullmatch(r"kbroker \S+\n", out.stdout), out
    out = subprocess.run([sys.executable, "-m", "kbroker", "serve", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--data-dir" in out.stdout
    out = subprocess.run([sys.executable, "-m", "kbroker", "topics", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "list" in out.stdout
