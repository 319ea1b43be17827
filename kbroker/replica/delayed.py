"""Delayed operations: answers that wait for a partition to change (Kafka's DelayedFetch,
DelayedProduce and DelayedDeleteRecords; of Kafka's purgatories only the fetch's timer,
:class:`FetchPurgatory`).

Each waiter parks on the partitions it depends on (``Partition.wait_for_change``, a trio
Event per waiter) and checks its condition again after every wake-up: an append, a
high-watermark move, a follower's new log start offset, a leadership or epoch change, or the
deadline (a parked fetch's is kept by the purgatory's one timer while it runs). A parked
operation never blocks another connection, and leadership lost in between (even if it came
back: ``leader_generation``) ends it with NOT_LEADER_OR_FOLLOWER.

The conditions themselves are the replication state's (:mod:`kbroker.replica.state`); this
module only waits for them.
"""
from __future__ import annotations

import heapq
import math
from typing import Callable

import trio

from kbroker.replica.partition import Partition
from kbroker.replica.results import FetchResult, FetchSpec
from kbroker.replica.state import acks_all_outcome
from kbroker.wire.error_codes import ErrorCode

Lookup = Callable[[str, int], "Partition | None"]


async def wait_replicated(lookup: Lookup, topic: str, index: int, required_offset: int,
                          timeout_ms: int, stats: dict) -> int:
    """DelayedProduce for one partition: wait until the HW reaches ``required_offset``
    (last offset + 1). Returns NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND (ISR below
    min.insync.replicas at completion), NOT_LEADER_OR_FOLLOWER (leadership lost meanwhile)
    or REQUEST_TIMED_OUT."""
    part = lookup(topic, index)
    if part is None or not part.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    done = replicated(part, required_offset)
    if done is not None:
        return done
    generation = part.leader_generation
    stats["delayed_produces"] += 1
    deadline = trio.current_time() + max(0, timeout_ms) / 1000.0
    while True:
        if lookup(topic, index) is not part or not part.is_leader \
                or part.leader_generation != generation:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        done = replicated(part, required_offset)
        if done is not None:
            return done
        if trio.current_time() >= deadline:
            stats["delayed_produce_timeouts"] += 1
            return ErrorCode.REQUEST_TIMED_OUT
        await part.wait_for_change(deadline)


def replicated(part: Partition, required_offset: int) -> int | None:
    """The acks=all answer for ``required_offset`` right now, or None to keep waiting."""
    return acks_all_outcome(part.log.high_watermark, required_offset, len(part.isr),
                            part.config.min_insync_replicas)


async def wait_low_watermark(lookup: Lookup, topic: str, index: int, required_offset: int,
                             timeout_ms: int, low_watermark: Callable[[Partition], int],
                             stats: dict) -> tuple[int, int | None]:
    """DelayedDeleteRecords for one partition: wait until the low watermark reaches
    ``required_offset`` (every live replica has deleted up to it; followers learn the
    leader's log start offset from fetch responses and report theirs in the next fetch).
    Returns (NONE, low watermark), (NOT_LEADER_OR_FOLLOWER, -1) when this node no longer
    leads, or (REQUEST_TIMED_OUT, None) after ``timeout_ms``."""
    deadline = trio.current_time() + max(0, timeout_ms) / 1000.0
    while True:
        part = lookup(topic, index)
        if part is None or not part.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
        low = low_watermark(part)
        if low >= required_offset:
            return ErrorCode.NONE, low
        if trio.current_time() >= deadline:
            stats["delayed_delete_records_timeouts"] += 1
            return ErrorCode.REQUEST_TIMED_OUT, None
        await part.wait_for_change(deadline)


class _Parked:
    """One parked fetch's deadline entry: ``event`` is None once the fetch has left (woken
    by data, or cancelled) or the timer woke it; ``expired`` when the timer did."""
    __slots__ = ("event", "expired")

    def __init__(self, event: trio.Event):
        self.event = event
        self.expired = False


class FetchPurgatory:
    """The deadlines of parked fetches (Kafka's fetch purgatory and its expiration reaper):
    one timer task wakes each parked fetch when its ``max_wait_ms`` has passed, so a fetch
    parks on a plain ``trio.Event`` without a cancel scope of its own: entering and leaving
    a deadline-bearing cancel scope per long poll was ~6 % of the broker's instructions for
    a parked fetch woken by one append, its Produce included (callgrind;
    benchmarks/README.md, "Request cost"). Entries of fetches that left early (woken by
    data) stay in the heap until they reach its top or are most of it (then it is rebuilt
    without them). :meth:`run` runs in the replica manager's nursery; while it
    does not, :func:`fetch` parks under ``trio.move_on_at`` as before."""

    _REBUILD_MIN = 1024

    def __init__(self) -> None:
        self._heap: list = []        # (deadline, sequence, _Parked)
        self._seq = 0
        self._left = 0               # entries in the heap whose fetch has left
        self._scope: trio.CancelScope | None = None     # the timer's sleep
        self.running = False

    def __len__(self) -> int:
        """Fetches parked here now."""
        return len(self._heap) - self._left

    def park(self, deadline: float, event: trio.Event) -> _Parked:
        """Set ``event`` at ``deadline`` (trio's clock) unless :meth:`leave` comes first."""
        entry = _Parked(event)
        heapq.heappush(self._heap, (deadline, self._seq, entry))
        self._seq += 1
        scope = self._scope
        if scope is not None and deadline < scope.deadline:
            scope.deadline = deadline
        return entry

    def leave(self, entry: _Parked) -> None:
        """The fetch of ``entry`` is no longer parked (its entry is dropped lazily)."""
        if entry.event is None:
            return
        entry.event = None
        self._left += 1
        heap = self._heap
        if self._left > len(heap) // 2 and len(heap) >= self._REBUILD_MIN:
            self._heap = [e for e in heap if e[2].event is not None]
            heapq.heapify(self._heap)
            self._left = 0

    async def run(self) -> None:
        """The timer, until cancelled; on the way out every fetch still parked is woken
        (it reads again, and parks under its own cancel scope if it must wait on)."""
        self.running = True
        try:
            while True:
                heap = self._heap
                now = trio.current_time()
                # expired entries are woken; entries whose fetch left are dropped from the
                # top too, so the timer sleeps until the first deadline still parked (it
                # wakes about once per max_wait_ms, not once per fetch woken by data)
                while heap and (heap[0][0] <= now or heap[0][2].event is None):
                    entry = heapq.heappop(heap)[2]
                    event = entry.event
                    if event is None:
                        self._left -= 1
                        continue
                    entry.event = None
                    entry.expired = True
                    event.set()
                with trio.CancelScope(deadline=heap[0][0] if heap else math.inf) as scope:
                    self._scope = scope
                    await trio.sleep_forever()
                self._scope = None
        finally:
            self.running = False
            self._scope = None
            heap, self._heap, self._left = self._heap, [], 0
            for _, _, entry in heap:
                if entry.event is not None:
                    event, entry.event = entry.event, None
                    event.set()


async def fetch(read_all: Callable[[bool], list[FetchResult]], lookup: Lookup,
                specs: list[FetchSpec], *, min_bytes: int, max_wait_ms: int,
                stats: dict, follower: bool = False,
                purgatory: FetchPurgatory | None = None) -> list[FetchResult]:
    """DelayedFetch: ``read_all(True)``, and when fewer than ``min_bytes`` are available park
    on every partition read until data arrives on one of them or ``max_wait_ms`` passes,
    reading again with ``read_all(False)`` after each wake-up (the argument says whether this
    is the read made when the request arrived). Errors and divergence answer at once.
    A ``follower`` fetch reads up to the log end offset and parks among the partition's
    ``log_end_waiters`` (woken by appends, not by high-watermark moves); a consumer's reads
    up to the high watermark and parks among its ``waiters``. The deadline is kept by
    ``purgatory`` while its timer runs, else by a cancel scope."""
    deadline = trio.current_time() + max(0, max_wait_ms) / 1000.0
    first = True
    while True:
        results = read_all(first)
        first = False
        if (max_wait_ms <= 0 or not specs or sum(r.size for r in results) >= min_bytes
                or any(r.error_code or r.diverging_epoch is not None for r in results)):
            return results
        if trio.current_time() >= deadline:
            return results
        stats["long_polls"] += 1
        event = trio.Event()
        parked = []
        for spec in specs:
            part = lookup(spec.topic, spec.partition)
            if part is not None:
                (part.log_end_waiters if follower else part.waiters).add(event)
                parked.append(part)
        entry = purgatory.park(deadline, event) \
            if purgatory is not None and purgatory.running else None
        try:
            if entry is not None:
                await event.wait()
                if not entry.expired:
                    stats["fetch_wakeups"] += 1
            else:
                with trio.move_on_at(deadline):
                    await event.wait()
                    stats["fetch_wakeups"] += 1
        finally:
            if entry is not None:
                purgatory.leave(entry)
            for part in parked:
                (part.log_end_waiters if follower else part.waiters).discard(event)
