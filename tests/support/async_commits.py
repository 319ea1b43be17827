"""Offset commits of a librdkafka consumer that a stop can always reach, shared by the test
clients that commit from a thread of their own (the fault test's ``GroupCommitter``, the
KIP-848 ``Member``, the clock-step test's members).

A synchronous ``commit`` waits for as long as no coordinator answers: one queued for a
coordinator nobody can reach never returns, the thread stops polling (so it never sees the
stop, nor takes the revocation librdkafka hands it when the session is lost), and a teardown
that joins it hangs. So the commits here are asynchronous, their answers served by the
consumer's own ``poll`` through ``on_commit`` (pass :meth:`AsyncCommits.answered` as the
consumer's ``on_commit``). At the stop, :meth:`AsyncCommits.close` polls until every commit
asked for is answered (at most ``drain_s``) and then closes the consumer -- unless one is
still unanswered: librdkafka's close waits for every commit it holds, so the consumer is then
dropped without its close (its handle is destroyed as if the process ended; the coordinator
expires the member) and ``abandoned`` says so.

Everything here runs on the consumer's thread (``commit``, and ``answered`` from its poll or
close); other threads only read the counters.
"""
from __future__ import annotations

import time

from confluent_kafka import KafkaException, TopicPartition


class AsyncCommits:
    """The commits of one consumer. ``acked[partition]``: the highest offset a commit
    answered without error stored; ``commits``: commits answered without error;
    ``attempts``: commits asked for; ``pending``: asked for and not answered yet;
    ``errors``: why commits failed (refused at once, or answered with an error)."""

    def __init__(self, drain_s: float = 30.0):
        self.drain_s = drain_s
        self.acked: dict[int, int] = {}
        self.commits = 0
        self.attempts = 0
        self.pending = 0
        self.errors: list[str] = []
        self.abandoned = False       # closed with a commit unanswered: the group was not left

    def commit(self, c, offsets: list[TopicPartition]) -> bool:
        """Ask for a commit of ``offsets``; False if librdkafka refused it at once (e.g. no
        assignment right now; kept in ``errors``)."""
        self.attempts += 1
        try:
            c.commit(offsets=offsets, asynchronous=True)
        except KafkaException as e:
            self.errors.append(str(e))
            return False
        self.pending += 1
        return True

    def answered(self, err, partitions) -> None:
        """``on_commit``: the answer to one commit. Only a commit answered without any error
        counts (librdkafka reports the first partition's error as the commit's); a failed one
        is not retried here, the owner's next commit carries a position at least as far."""
        self.pending -= 1
        if err is not None:
            self.errors.append(str(err))
            return
        for tp in partitions:
            if tp.error is None and tp.offset >= 0:
                self.acked[tp.partition] = max(self.acked.get(tp.partition, -1), tp.offset)
        self.commits += 1

    def wait_answered(self, c, timeout: float) -> bool:
        """Poll ``c`` until every commit asked for is answered, at most ``timeout`` seconds
        (records it returns meanwhile are dropped: not processed, so not committed either).
        True if none is pending."""
        deadline = time.monotonic() + timeout
        while self.pending and time.monotonic() < deadline:
            c.poll(0.2)
        return not self.pending

    def close(self, c) -> bool:
        """Close ``c`` once every commit is answered; drop it without the close if one is
        still unanswered after ``drain_s`` (``abandoned``). True if it was closed."""
        if not self.wait_answered(c, self.drain_s):
            self.abandoned = True
            return False             # the caller's reference goes: destroyed without close
        c.close()
        return True
