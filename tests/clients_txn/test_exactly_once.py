"""Exactly-once as Kafka promises it, with confluent-kafka against a real kbroker process:

- a consume-transform-produce loop (send_offsets_to_transaction) over a few thousand
  records, its process SIGKILLed and restarted three times in the middle, ends with every
  input record in the output exactly once (read_committed);
- a broker SIGKILLed while transactions are open: after the restart the coordinator aborts
  them (one by timeout, one when a new instance of the producer starts), committed data is
  intact and read_committed consumers never see a partial transaction.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from tests.clients.conftest import create_topic
from tests.support.broker_proc import REPO_ROOT, BrokerProcess

from .conftest import TXN_OVERRIDES
from .helpers import end_offsets, read_all

WORKER = Path(__file__).with_name("ctp_worker.py")


class Worker:
    def __init__(self, *args):
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        self.proc = subprocess.Popen([sys.executable, str(WORKER), *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)
        self.progress = 0
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            parts = line.split()
            # a SIGKILL can cut the last line short: only whole lines count
            if len(parts) == 2 and parts[0] == "committed" and parts[1].isdigit():
                self.progress = int(parts[1])

    def wait_progress(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.progress < n:
            assert self.proc.poll() is None, f"worker exited: {self.lines[-5:]}"
            assert time.monotonic() < deadline, f"no progress: {self.lines[-5:]}"
            time.sleep(0.01)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._drained()

    def wait(self, timeout: float = 120) -> int:
        rc = self.proc.wait(timeout)
        self._drained()
        return rc

    def _drained(self) -> None:
        """The process is gone, but lines it wrote may still be in the pipe: ``progress`` and
        ``lines`` are final once the reader has read to its end."""
        self._reader.join(60)
        assert not self._reader.is_alive(), "the worker's stdout never reached its end"


def produce_input(bootstrap, topic, n, partitions):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, b"%d" % i, key=b"k%d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def test_consume_transform_produce_survives_sigkill_exactly_once(bootstrap, name):
    n, parts = 3000, 2
    src, dst = name + "-in", name + "-out"
    create_topic(bootstrap, src, parts)
    create_topic(bootstrap, dst, 3)
    produce_input(bootstrap, src, n, parts)
    args = (bootstrap, src, dst, parts, name + "-g", name + "-tx")
    done = 0
    for pause in (0.0, 0.013, 0.031):
        w = Worker(*args)
        w.wait_progress(400)          # 400 records committed by this instance, then
        time.sleep(pause)             # die somewhere inside a later transaction
        w.kill()
        done += w.progress
    assert done < n
    w = Worker(*args)
    assert w.wait() == 0, w.lines[-5:]
    assert w.lines[-1].startswith("done")
    out = read_all(bootstrap, dst, 3, isolation="read_committed", expect=n, timeout=30)
    assert len(out) == n, (len(out), len(set(out)))
    assert sorted(out) == sorted(b"out-%d" % i for i in range(n))
    # aborted attempts are in the log, but only read_uncommitted sees them
    assert len(read_all(bootstrap, dst, 3, isolation="read_uncommitted", timeout=30)) >= n


def test_broker_sigkill_with_open_transactions(tmp_path, name):
    proc = BrokerProcess(tmp_path / "data", overrides=TXN_OVERRIDES)
    proc.start()
    try:
        bs = proc.bootstrap
        create_topic(bs, name, 2)
        committed = Producer({"bootstrap.servers": bs, "transactional.id": name + "-c"})
        committed.init_transactions(30)
        committed.begin_transaction()
        for i in range(10):
            committed.produce(name, b"ok-%d" % i, partition=i % 2)
        committed.commit_transaction(30)
        # two transactions left open: data in the log, no decision yet
        open_a = Producer({"bootstrap.servers": bs, "transactional.id": name + "-a",
                           "transaction.timeout.ms": 3000})
        open_b = Producer({"bootstrap.servers": bs, "transactional.id": name + "-b"})
        for p, tag in ((open_a, b"a"), (open_b, b"b")):
            p.init_transactions(30)
            p.begin_transaction()
            for i in range(6):
                p.produce(name, tag + b"-%d" % i, partition=i % 2)
            assert p.flush(30) == 0
        assert sorted(end_offsets(bs, name, 2, "read_committed")) == [6, 6]   # LSO held back
        proc.kill()
        del open_a, open_b
        proc.start()
        # "b" is resolved by a new instance of its producer; "a" by its timeout
        again = Producer({"bootstrap.servers": bs, "transactional.id": name + "-b"})
        again.init_transactions(30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            lso = end_offsets(bs, name, 2, "read_committed")
            if lso == end_offsets(bs, name, 2, "read_uncommitted"):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"transactions not completed: LSO {lso}")
        got = read_all(bs, name, 2, isolation="read_committed")
        assert sorted(got) == sorted(b"ok-%d" % i for i in range(10))
        assert len(read_all(bs, name, 2, isolation="read_uncommitted")) == 22
    finally:
        proc.stop()
