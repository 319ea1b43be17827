"""The ``kbroker`` client commands against a real kbroker: what only a kbroker target shows.

The command scenarios themselves (``compat_tests/kbroker_cli.py``: topics, produce/consume,
groups, configs, cluster, ACLs, users, share groups) run in ``compat_tests/test_kbroker_cli.py``
against kbroker and Apache Kafka alike, in ``make test`` and ``make compat``; they ran here too,
against kbroker alone, with the same assertions, until they were kept in one place."""
from __future__ import annotations

import pytest

from compat_tests import kbroker_cli as s
from tests.support.broker_proc import BrokerProcess


@pytest.fixture(scope="module")
def bs(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("cli") / "data")
    proc.start()
    try:
        yield proc.bootstrap
    finally:
        proc.stop()


def test_client_commands_import_neither_trio_nor_the_broker(bs):
    """Start-up stays fast: parsing imports no client library, a client command imports
    confluent-kafka but never trio or the broker's modules (nor kafka-python: not a
    dependency of the commands any more)."""
    import subprocess
    import sys
    code = (
        "import sys\n"
        "from kbroker.tools.cli import _parser, main\n"
        "_parser().parse_args(['topics', 'list'])\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('trio', 'kafka', 'confluent_kafka')], 'parser imports'\n"
        f"assert main(['topics', 'list', '-b', {bs!r}]) == 0\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] == 'trio' or m.startswith(('kbroker.server',"
        " 'kbroker.node.broker', 'kbroker.log', 'kbroker.raft', 'kbroker.wire'))]\n"
        "assert not heavy, heavy\n"
        "assert 'confluent_kafka' in sys.modules and 'kafka' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=s.REPO_ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_broker_that_never_answers_ends_the_command():
    """A broker that accepts the connection and then says nothing (the socket's backlog
    completes the TCP handshake; nothing ever reads from it), with ``--timeout 2``: the
    command ends well within a generous bound with one line naming the address (librdkafka
    gives up on the silent connection itself before ``--timeout``'s own deadline)."""
    import socket
    import time
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    where = f"127.0.0.1:{silent.getsockname()[1]}"
    try:
        started = time.monotonic()
        r = s.failed("topics", "list", "-b", where, "--timeout", "2", timeout=60)
        elapsed = time.monotonic() - started
        assert elapsed < 20, f"took {elapsed:.1f} s: {r.stderr}"
        [line] = r.stderr.strip().splitlines()
        assert line.startswith("kbroker: ") and where in line, line
    finally:
        silent.close()
