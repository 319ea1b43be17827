"""The ``kbroker`` client commands against a real kbroker (one broker for the module); the same
scenarios run against Apache Kafka in ``compat_tests/test_kbroker_cli.py``. The broker checks
retention every half second (``RETENTION_CHECK_OVERRIDES``, shown to delete an expired record
before the first test), so a scenario whose old-timestamped records retention could delete
fails at once, not only when the 5-minute check falls between two of its steps."""
from __future__ import annotations

import uuid

import pytest

from compat_tests import kbroker_cli as s
from tests.support.broker_proc import BrokerProcess


@pytest.fixture(scope="module")
def bs(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("cli") / "data",
                         overrides={"group.initial.rebalance.delay.ms": "0", **s.RETENTION_CHECK_OVERRIDES})
    proc.start()
    try:
        s.wait_retention_runs(proc.bootstrap, f"expired-{uuid.uuid4().hex[:8]}")
        yield proc.bootstrap
    finally:
        proc.stop()


@pytest.fixture
def topic(request):
    return f"{request.node.name.removeprefix('test_')}-{uuid.uuid4().hex[:8]}"


def test_version():
    s.scenario_version()


def test_topics(bs, topic):
    s.scenario_topics(bs, topic)


def test_produce_consume(bs, topic):
    s.scenario_produce_consume(bs, topic)


def test_groups(bs, topic):
    s.scenario_groups(bs, topic)


def test_configs(bs):
    s.scenario_configs(bs)


def test_cluster(bs):
    s.scenario_cluster(bs)


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
