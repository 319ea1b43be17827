"""The ``kbroker`` client commands against a real kbroker: what only a kbroker target shows.

The command scenarios themselves (``compat_tests/kbroker_cli.py``: topics, produce/consume,
groups, configs, cluster, ACLs, users, share groups) run in ``compat_tests/test_kbroker_cli.py``
against kbroker and Apache Kafka alike, in ``make test`` and ``make compat``; they ran here too,
against kbroker alone, with the same assertions, until they were kept in one place."""
from __future__ import annotations

import uuid

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



def test_a_forked_command_answers_as_a_fresh_interpreter(bs, tmp_path):
    """compat_tests/cli_fork.py, which runs the suites' ``kbroker`` commands: the same exit
    codes, stdout and stderr as ``python -m kbroker`` in a fresh interpreter, with the caller's
    stdin, environment (KBROKER_BOOTSTRAP_SERVERS instead of ``-b``) and working directory
    (a relative ``--command-config`` file); a run over its timeout is killed."""
    import json
    import os
    import subprocess
    import sys

    from compat_tests import cli_fork
    topic = f"fork-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, KBROKER_BOOTSTRAP_SERVERS=bs)
    (tmp_path / "client.properties").write_text("client.id=forked\n")

    def forked(*argv, stdin=None, timeout=60):
        return cli_fork.run(list(argv), stdin, env, tmp_path, timeout)

    assert forked("topics", "create", topic).returncode == 0
    produced = forked("produce", topic, "-p", "0", "--json", "--timestamp", "1700000000000", stdin="a\nb\n")
    assert [json.loads(line)["offset"] for line in produced.stdout.splitlines()] == [0, 1], produced
    runs = {("--version",): 0, ("nonsense",): 2, ("acls", "list"): 1, ("topics", "create", topic): 1,
            ("consume", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%o %v %T\\n",
             "--command-config", "client.properties"): 0,
            ("consume", topic, "-e", "--command-config", "missing.properties"): 2}
    got = {}
    for argv, code in runs.items():
        fork = got[argv[-1]] = forked(*argv)
        fresh = subprocess.run([sys.executable, "-m", "kbroker", *argv], capture_output=True, text=True,
                               timeout=60, env=env, cwd=tmp_path)
        assert (fork.returncode, fork.stdout, fork.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
        assert fork.returncode == code, fork
    assert got["client.properties"].stdout == "0 a 1700000000000\n1 b 1700000000000\n"
    assert "missing.properties" in got["missing.properties"].stderr
    with pytest.raises(subprocess.TimeoutExpired):
        forked("consume", topic, "-p", "0", "-o", "end", timeout=2)
