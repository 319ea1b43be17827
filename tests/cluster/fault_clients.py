"""The clients of the seeded fault test besides its idempotent producer: a consumer group
that commits offsets and a transactional producer that commits and aborts.

Both run in threads through the whole fault schedule with real confluent-kafka clients and
keep what the brokers acknowledged, so that after healing the test can check:

- ``GroupCommitter``: every offset the group coordinator acknowledged (an OffsetCommit
  answered without error) is never ahead of what OffsetFetch answers later --
  committed offsets never go back;
- ``TxnWriter``: every transaction whose ``commit_transaction`` returned is wholly visible to a
  read_committed consumer, every aborted one (``abort_transaction`` returned, or the commit
  failed and was aborted) never is, and nothing else is there.

A commit or EndTxn whose outcome is unknown (a retriable error) is retried as librdkafka
allows; a transaction whose fate is still unknown at the end is reported, not guessed.
"""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.support.async_commits import AsyncCommits

GROUP = "fault-group"
TXN_TOPIC = "faults-txn"
TXN_ID = "fault-txn"


class GroupCommitter(threading.Thread):
    """A member of ``GROUP`` subscribed to ``topic``: it reads and commits the position it
    reached every few records; ``acked[partition]`` is the highest offset acknowledged.

    Its thread blocks nowhere but in ``poll`` (0.2 s) and the final ``close``, so that
    ``stop`` reaches it whatever the cluster does: its commits are asynchronous, answered
    through ``poll``, and a stop commits the position reached and leaves the group -- or
    drops the consumer if that commit stays unanswered (``abandoned``;
    :mod:`tests.support.async_commits` says why). A synchronous commit would wait for as long
    as no coordinator answers, and while it waits nobody polls, so the revocation librdkafka
    hands the application when the session is lost is never taken either (its group then
    sits in ``wait-unassign-call`` with the commit still queued for a coordinator; the thread
    never saw ``stop``)."""

    DRAIN_S = 30.0   # how long a stop waits for the answer to the commit under way

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.async_commits = AsyncCommits()
        self.exc: BaseException | None = None

    # what the fault test reads: the counters of its commits
    acked = property(lambda self: self.async_commits.acked)
    commits = property(lambda self: self.async_commits.commits)       # acknowledged
    attempts = property(lambda self: self.async_commits.attempts)     # asked for
    pending = property(lambda self: self.async_commits.pending)       # not answered yet
    abandoned = property(lambda self: self.async_commits.abandoned)   # dropped, not closed

    def run(self):
        try:
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP,
                          "enable.auto.commit": False, "auto.offset.reset": "earliest",
                          "session.timeout.ms": 30000, "heartbeat.interval.ms": 1000,
                          "fetch.wait.max.ms": 200, "topic.metadata.refresh.interval.ms": 1000,
                          "on_commit": self.async_commits.answered})
            c.subscribe([self.topic])
            pos: dict[int, int] = {}
            n = 0
            try:
                while not self.stop.is_set():
                    m = c.poll(0.2)
                    if m is None or m.error() is not None:
                        continue
                    pos[m.partition()] = m.offset() + 1
                    n += 1
                    if n % 40 == 0:
                        self._commit(c, pos)
            finally:
                if pos:
                    self._commit(c, pos)   # the position reached
                self.async_commits.drain_s = self.DRAIN_S
                self.async_commits.close(c)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.exc = e

    def _commit(self, c, pos):
        if self.async_commits.pending:
            return                 # one at a time: the next one carries this position too
        self.async_commits.commit(c, [TopicPartition(self.topic, p, o) for p, o in pos.items()])


def committed_offsets(bootstrap: str, topic: str, partitions) -> dict[int, int]:
    """OffsetFetch of ``GROUP`` through a client that does not join it."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(topic, p) for p in partitions], timeout=60)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


class TxnWriter(threading.Thread):
    """Transactions of a few records each on ``TXN_TOPIC``; every third one is aborted.
    ``committed`` / ``aborted``: the values of the transactions whose end was acknowledged;
    ``unknown``: values of a transaction whose end could not be learned."""

    def __init__(self, bootstrap: str, seed: int):
        super().__init__(daemon=True)
        self.bootstrap, self.seed = bootstrap, seed
        self.stop = threading.Event()
        self.committed: list[bytes] = []
        self.aborted: list[bytes] = []
        self.unknown: list[bytes] = []
        self.exc: BaseException | None = None

    def run(self):
        try:
            p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": TXN_ID,
                          "linger.ms": 5, "transaction.timeout.ms": 120000,
                          "message.timeout.ms": 120000, "retry.backoff.ms": 100,
                          "topic.metadata.refresh.interval.ms": 1000})
            self._retry(lambda: p.init_transactions(30))
            i = 0
            while not self.stop.is_set():
                values = [f"s{self.seed}-t{i}-{j}".encode() for j in range(5)]
                self._one(p, values, commit=i % 3 != 2)
                i += 1
                time.sleep(0.1)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.exc = e

    def _one(self, p, values, commit: bool):
        self._retry(p.begin_transaction)
        for j, v in enumerate(values):
            p.produce(TXN_TOPIC, key=b"t%d" % j, value=v)
        try:
            if commit:
                self._retry(lambda: p.commit_transaction(120))
                self.committed += values
                return
        except KafkaException as e:
            if not e.args[0].txn_requires_abort():
                self.unknown += values
                raise
        try:
            self._retry(lambda: p.abort_transaction(120))
        except KafkaException:
            self.unknown += values
            raise
        self.aborted += values

    @staticmethod
    def _retry(fn, deadline: float = 180.0):
        end = time.monotonic() + deadline
        while True:
            try:
                return fn()
            except KafkaException as e:
                if not e.args[0].retriable() or time.monotonic() > end:
                    raise
                time.sleep(0.2)


def read_committed(bootstrap: str, topic: str, partitions, timeout: float = 60.0) -> list[bytes]:
    """Every value a read_committed consumer reads from the beginning up to the last stable
    offset of each partition (read until two idle polls after reaching it)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "fault-txn-reader",
                  "enable.auto.commit": False, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest", "enable.partition.eof": True,
                  "fetch.wait.max.ms": 100})
    out: list[bytes] = []
    try:
        from confluent_kafka import OFFSET_BEGINNING
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(eof) < len(partitions):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == -191:       # _PARTITION_EOF
                    eof.add(m.partition())
                continue
            eof.discard(m.partition())
            out.append(m.value())
    finally:
        c.close()
    return out
