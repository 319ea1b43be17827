"""A ``group.protocol=consumer`` (KIP-848) librdkafka member on its own thread, shared by the
real-client, cluster-failover and compat tests of the consumer group protocol.

It records every (partition, offset) it processed in ``seen`` (under ``lock``), commits what it
processed every ``commit_interval`` seconds and when partitions are revoked (KIP-848
rebalances are incremental), and forgets the positions of revoked partitions so it never
commits them again. Commits are asynchronous, answered through the member's own poll
(:mod:`tests.support.async_commits`), so ``close()`` always reaches the thread: it commits
the positions reached, waits for the answers and closes the consumer (which revokes, so
commits what is still unacknowledged, and leaves) -- or, when a commit stays unanswered (a
coordinator nobody can reach), drops the consumer without its close. librdkafka
acknowledges a revocation only once the commits in progress are answered, so a commit made
on revocation still lands before the partition's next owner reads the group's offsets.
``close()`` then re-raises whatever the thread raised.

``tolerate_commit_errors``: a commit that fails (the coordinator is moving, in the failover
test) is kept in ``commit_errors`` and made again later instead of failing the member;
otherwise ``close()`` fails on any failed commit. ``must_close``: ``close()`` fails if the
consumer had to be dropped without its close.
"""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, TopicPartition

from tests.support.async_commits import AsyncCommits


class Member:
    def __init__(self, bootstrap, group, topic, seen, lock, *, commit_interval: float = 1.0,
                 tolerate_commit_errors: bool = False, close_timeout: float = 60.0,
                 must_close: bool = True, **extra):
        self.commits = AsyncCommits(drain_s=close_timeout / 2)
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": 1000, "on_commit": self.commits.answered}
        conf.update(extra)
        self.topic, self.seen, self.lock = topic, seen, lock
        self.commit_interval = commit_interval
        self.tolerate_commit_errors = tolerate_commit_errors
        self.close_timeout = close_timeout
        self.must_close = must_close
        self.positions: dict[int, int] = {}
        self.assignment: set[int] = set()
        self.error = None
        self._stop = threading.Event()
        self.c = Consumer(conf)
        self.c.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    @property
    def commit_errors(self) -> list[str]:
        return self.commits.errors

    def _commit(self, partitions):
        """Commit the positions of ``partitions`` not acknowledged yet."""
        offs = [TopicPartition(self.topic, p, self.positions[p]) for p in partitions
                if p in self.positions and self.commits.acked.get(p) != self.positions[p]]
        if offs:
            self.commits.commit(self.c, offs)

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
                if time.monotonic() - last > self.commit_interval and not self.commits.pending:
                    self._commit(list(self.positions))   # one at a time
                    last = time.monotonic()
            self._commit(list(self.positions))
            if self.tolerate_commit_errors:
                self._commit_until_acknowledged(time.monotonic() + self.close_timeout / 2)
            self.commits.close(self.c)     # revokes (commits what is left) and leaves
        except BaseException as e:   # noqa: BLE001
            self.error = e

    def _unacknowledged(self) -> list[int]:
        return [p for p, pos in self.positions.items() if self.commits.acked.get(p) != pos]

    def _commit_until_acknowledged(self, deadline: float) -> None:
        """The last commit of a member whose commits may fail: one refused because it raced a
        rejoin (ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS) is made again once the consumer's
        poll has rejoined, until every position is acknowledged or ``deadline``; so what
        the member processed is committed before it leaves, as an application's last
        ``commit`` retried on those errors does."""
        while time.monotonic() < deadline:
            if not self.commits.wait_answered(self.c, deadline - time.monotonic()):
                return
            if not self._unacknowledged():
                return
            self.c.poll(0.1)           # the rejoin (its records are not processed)
            self._commit(self._unacknowledged())

    def close(self):
        self._stop.set()
        self.t.join(self.close_timeout)
        assert not self.t.is_alive(), "the member's thread did not end"
        if self.must_close:
            assert not self.commits.abandoned, \
                f"consumer dropped without its close: {self.commits.pending} commit(s) unanswered"
        if self.error:
            raise self.error
        if not self.tolerate_commit_errors:
            assert not self.commits.errors, f"commits failed: {self.commits.errors}"
