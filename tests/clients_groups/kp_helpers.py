"""kafka-python consumers on their own threads (a KafkaConsumer is single-threaded; a
parked JoinGroup must not block the other members of the group), and a consumer in a
subprocess that a test can SIGKILL (a crash: no LeaveGroup, heartbeats just stop)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from .conftest import SESSION_MS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def consumer_config(bootstrap, group, **extra):
    cfg = dict(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
               session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500,
               max_poll_interval_ms=20000, enable_auto_commit=False,
               client_id=f"kp-{group}")
    cfg.update(extra)
    return cfg


class ConsumerThread:
    """Polls a KafkaConsumer on a thread; exposes its assignment and records."""

    def __init__(self, bootstrap, group, topic, **extra):
        from kafka import KafkaConsumer
        self._make = lambda: KafkaConsumer(topic, **consumer_config(bootstrap, group, **extra))
        self.assignment: set[int] = set()
        self.records: list[tuple[int, int, bytes]] = []     # (partition, offset, value)
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._commit = threading.Event()
        self._committed = threading.Event()
        self.error: BaseException | None = None
        self.poll_errors: list = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        from kafka.errors import KafkaError
        try:
            c = self._make()
            try:
                while not self._stop.is_set():
                    try:
                        batch = c.poll(timeout_ms=100)
                    except KafkaError as e:
                        # kafka-python 3 surfaces connection errors from poll while the
                        # broker is down (restart tests); an application would retry
                        self.poll_errors.append(e)
                        time.sleep(0.1)
                        continue
                    with self.lock:
                        self.assignment = {tp.partition for tp in c.assignment()}
                        for tp, recs in batch.items():
                            self.records.extend((tp.partition, r.offset, r.value) for r in recs)
                    if self._commit.is_set():
                        c.commit()
                        self._commit.clear()
                        self._committed.set()
            finally:
                c.close()
        except BaseException as e:   # noqa: BLE001 - reported to the test
            self.error = e

    def commit(self, timeout=10):
        self._committed.clear()
        self._commit.set()
        assert self._committed.wait(timeout), "commit did not happen"

    def close(self):
        self._stop.set()
        self.thread.join(20)
        assert not self.thread.is_alive()
        if self.error:
            raise self.error

    def values(self) -> list[bytes]:
        with self.lock:
            return [v for _, _, v in self.records]


_CHILD = r"""
import json, sys
from kafka import KafkaConsumer
from tests.support import kafka_python_fixes
kafka_python_fixes.apply()
cfg = json.loads(sys.argv[1])
topic = cfg.pop("topic")
c = KafkaConsumer(topic, **cfg)
last = None
while True:
    c.poll(timeout_ms=100)
    a = sorted(tp.partition for tp in c.assignment())
    if a != last:
        print(json.dumps(a), flush=True)
        last = a
"""


class ConsumerProcess:
    """A kafka-python consumer in a child process; ``assignment`` follows its output."""

    def __init__(self, bootstrap, group, topic, **extra):
        cfg = consumer_config(bootstrap, group, **extra)
        cfg["topic"] = topic
        env = dict(os.environ, PYTHONPATH=REPO)
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(cfg)],
                                     stdout=subprocess.PIPE, text=True, env=env)
        self.assignment: set[int] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.assignment = set(json.loads(line))
            except ValueError:
                pass

    def kill(self):
        self.proc.kill()
        self.proc.wait(10)
