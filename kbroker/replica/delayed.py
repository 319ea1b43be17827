"""Delayed operations: answers that wait for a partition to change (Kafka's DelayedFetch,
DelayedProduce and DelayedDeleteRecords, without a purgatory).

Each waiter parks on the partitions it depends on (``Partition.wait_for_change``, a trio
Event per waiter) and checks its condition again after every wake-up: an append, a
high-watermark move, a follower's new log start offset, a leadership or epoch change, or the
deadline. A parked operation never blocks another connection, and leadership lost in between
(even if it came back: ``leader_generation``) ends it with NOT_LEADER_OR_FOLLOWER.

The conditions themselves are the replication state's (:mod:`kbroker.replica.state`); this
module only waits for them.
"""
from __future__ import annotations

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


async def fetch(read_all: Callable[[bool], list[FetchResult]], lookup: Lookup,
                specs: list[FetchSpec], *, min_bytes: int, max_wait_ms: int,
                stats: dict, follower: bool = False) -> list[FetchResult]:
    """DelayedFetch: ``read_all(True)``, and when fewer than ``min_bytes`` are available park
    on every partition read until data arrives on one of them or ``max_wait_ms`` passes,
    reading again with ``read_all(False)`` after each wake-up (the argument says whether this
    is the read made when the request arrived). Errors and divergence answer at once.
    A ``follower`` fetch reads up to the log end offset and parks among the partition's
    ``log_end_waiters`` (woken by appends, not by high-watermark moves); a consumer's reads
    up to the high watermark and parks among its ``waiters``."""
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
        try:
            with trio.move_on_at(deadline):
                await event.wait()
                stats["fetch_wakeups"] += 1
        finally:
            for part in parked:
                (part.log_end_waiters if follower else part.waiters).discard(event)
