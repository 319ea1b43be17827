"""A ``group.protocol=consumer`` (KIP-848) librdkafka member on its own thread, shared by the
real-client, cluster-failover and compat tests of the consumer group protocol.

It records every (partition, offset) it processed in ``seen`` (under ``lock``), commits what it
processed every ``commit_interval`` seconds and when partitions are revoked (KIP-848
rebalances are incremental), and forgets the positions of revoked partitions so it never
commits them again. ``close()`` stops the thread (the consumer's close revokes, so commits,
and leaves) and re-raises whatever the thread raised.

``tolerate_commit_errors``: a commit that fails (the coordinator is moving, in the failover
test) is kept in ``commit_errors`` and made again later instead of ending the member; the
member then also commits once more before closing.
"""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, TopicPartition


class Member:
    def __init__(self, bootstrap, group, topic, seen, lock, *, commit_interval: float = 1.0,
                 tolerate_commit_errors: bool = False, close_timeout: float = 60.0,
                 must_close: bool = True, **extra):
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": 1000}
        conf.update(extra)
        self.topic, self.seen, self.lock = topic, seen, lock
        self.commit_interval = commit_interval
        self.tolerate_commit_errors = tolerate_commit_errors
        self.close_timeout = close_timeout
        self.must_close = must_close
        self.positions: dict[int, int] = {}
        self.assignment: set[int] = set()
        self.error = None
        self.commit_errors: list[str] = []
        self._stop = threading.Event()
        self.c = Consumer(conf)
        self.c.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _commit(self, partitions):
        offs = [TopicPartition(self.topic, p, self.positions[p]) for p in partitions
                if p in self.positions]
        if not offs:
            return
        if not self.tolerate_commit_errors:
            self.c.commit(offsets=offs, asynchronous=False)
            return
        try:
            for tp in self.c.commit(offsets=offs, asynchronous=False) or ():
                if tp.error is not None:
                    self.commit_errors.append(f"{tp.partition}: {tp.error}")
        except Exception as e:  # noqa: BLE001 - the coordinator may be moving: commit again later
            self.commit_errors.append(repr(e))

    def _on_assign(self, c, parts):
        self.assignment |= {p.partition for p in parts}

    def _on_revoke(self, c, parts):
        ps = {p.partition for p in parts}
        self._commit(ps)
        for p in ps:                  # not ours any more: never commit them again
            self.positions.pop(p, None)
        self.assignment -= ps

    def _run(self):
        try:
            last = time.monotonic()
            while not self._stop.is_set():
                m = self.c.poll(0.1)
                if m is not None and not m.error():
                    with self.lock:
                        self.seen.append((m.partition(), m.offset()))
                    self.positions[m.partition()] = m.offset() + 1
                if time.monotonic() - last > self.commit_interval:
                    self._commit(list(self.positions))
                    last = time.monotonic()
            if self.tolerate_commit_errors:
                self._commit(list(self.positions))
            self.c.close()                         # revokes (commits) and leaves
        except BaseException as e:   # noqa: BLE001
            self.error = e

    def close(self):
        self._stop.set()
        self.t.join(self.close_timeout)
        if self.must_close:
            assert not self.t.is_alive(), "consumer did not close"
        if self.error:
            raise self.error
