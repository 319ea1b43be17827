"""Data-directory safety (issue 20): the ``.lock`` of every log directory, and start-up
file-system errors that name the path."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import trio
from kafka import KafkaConsumer, KafkaProducer

from kbroker.config.broker import BrokerConfig
from kbroker.log.dirs import LogDirError
from tests.support.broker_proc import REPO_ROOT, BrokerProcess, free_port


def serve(data_dir, *extra, prefix=(), timeout=60):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run([*prefix, sys.executable, "-m", "kbroker", "serve",
                           "--data-dir", str(data_dir), "--port", str(free_port()), *extra],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def test_second_broker_on_a_locked_directory_exits_and_the_first_keeps_running(tmp_path):
    data = tmp_path / "data"
    first = BrokerProcess(data)
    first.start()
    try:
        producer = KafkaProducer(bootstrap_servers=first.bootstrap)
        producer.send("locked", b"before").get(timeout=30)
        marker = data / ".kafka_cleanshutdown"
        assert not marker.exists()
        second = serve(data)
        assert second.returncode == 1, second.stderr
        assert f"log directory {data} is in use by another broker" in second.stderr
        assert "Traceback" not in second.stderr
        # the second process wrote nothing: no clean-shutdown marker beside a live broker
        assert not marker.exists()
        assert first.running
        producer.send("locked", b"after").get(timeout=30)
        producer.close()
        consumer = KafkaConsumer("locked", bootstrap_servers=first.bootstrap,
                                 auto_offset_reset="earliest", consumer_timeout_ms=10_000)
        values = []
        for msg in consumer:
            values.append(msg.value)
            if len(values) == 2:
                break
        consumer.close()
        assert values == [b"before", b"after"]
    finally:
        assert first.stop() == 0
    # released at exit: the directory can be used again
    again = BrokerProcess(data)
    again.start()
    assert again.stop() == 0


async def test_two_embedded_brokers_on_one_directory(tmp_path):
    from kbroker.server import serve as serve_in_process

    def config():
        return BrokerConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0",
                                       "log.dirs": str(tmp_path / "data")})

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_in_process, config())
        with pytest.raises(BaseException) as info:
            async with trio.open_nursery() as inner:
                await inner.start(serve_in_process, config())
        leaf = info.value
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        assert isinstance(leaf, LogDirError)
        assert str(tmp_path / "data") in str(leaf)
        server.request_shutdown()
        await server.wait_stopped()
    # a clean stop released the lock for the next broker of this process
    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_in_process, config())
        server.request_shutdown()


def test_not_a_directory_is_named(tmp_path):
    f = tmp_path / "plain-file"
    f.write_text("x")
    r = serve(f)
    assert r.returncode == 1
    assert f"log directory {f} is not a directory" in r.stderr
    r = serve(f / "below")
    assert r.returncode == 1
    assert f"cannot create log directory {f / 'below'}: Not a directory" in r.stderr


def _unprivileged() -> tuple:
    """A command prefix that runs the broker without root's permission override (root
    ignores file modes): ``setpriv`` to user nobody; nothing when not root."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.fail("running as root without setpriv (util-linux) to drop privileges")
    return ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


@pytest.fixture
def open_tmp():
    """A fresh directory user nobody can reach: pytest's base directory is 0700 (and any
    pytest session starting meanwhile makes it so again), so not below it."""
    path = Path(tempfile.mkdtemp(prefix="kbroker-perm-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("case", ["parent-denied", "dir-read-only"])
def test_permission_denied_is_named(open_tmp, case):
    user = _unprivileged()
    tmp_path = open_tmp
    if case == "parent-denied":
        parent = tmp_path / "private"
        parent.mkdir(mode=0o700)
        target = parent / "data"
        if not user:
            os.chmod(parent, 0o000)
        expect = f"cannot create log directory {target}: Permission denied"
    else:
        target = tmp_path / "ro"
        target.mkdir()
        os.chmod(target, 0o555)
        expect = f"log directory {target} is not readable and writable by this process"
    try:
        r = serve(target, prefix=user)
    finally:
        for p in tmp_path.iterdir():
            os.chmod(p, 0o755)
    assert r.returncode == 1, r.stderr
    assert expect in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_unreadable_partition_directory_is_named(open_tmp):
    """A file-system error while loading the logs names the file it concerns."""
    prefix = _unprivileged()
    tmp_path = open_tmp
    data = tmp_path / "data"
    proc = BrokerProcess(data)
    proc.start()
    KafkaProducer(bootstrap_servers=proc.bootstrap).send("t", b"x").get(timeout=30)
    assert proc.stop() == 0
    if prefix:   # the broker runs as nobody: it owns everything but the partition
        for root, dirs, files in os.walk(data):
            for name in dirs + files:
                os.chown(os.path.join(root, name), 65534, 65534)
        os.chown(data, 65534, 65534)
        os.chown(data / "t-0", 0, 0)
    os.chmod(data / "t-0", 0o000)
    try:
        r = serve(data, prefix=prefix)
    finally:
        os.chmod(data / "t-0", 0o755)
    assert r.returncode == 1, r.stderr
    assert f"cannot load the logs in {data}: {data / 't-0'}" in r.stderr, r.stderr
    assert "Permission denied" in r.stderr and "Traceback" not in r.stderr
