"""A keyed timer table for the pure coordinator: deadlines as data, no clock.

Kafka's coordinator schedules one operation per key (a member's heartbeat expiry, a
group's join or sync deadline) *after a delay* (``CoordinatorTimer.schedule(key, delay,
...)``); scheduling a key again replaces its operation, cancelling removes it. Those timers
run on a monotonic clock (``SystemTimer`` reads ``Time.hiResClockMs``), so a step of the wall
clock neither expires sessions nor holds a rebalance back. Here the table keeps the same
shape: its deadlines are on the monotonic clock, whose reading the shard passes in with every
event (:meth:`advance`); :meth:`schedule` arms an operation ``delay_ms`` after that reading.
Whoever drives the coordinator asks :meth:`next_deadline` and, once its monotonic clock has
reached it, pops due entries with :meth:`pop_due` and runs them (with the wall-clock time,
which the operations need only for what they write). Ties fire in scheduling order, so a
scripted trace is exact.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Any, Callable, Hashable


class TimerTable:
    """Invariants: at most one live entry per key; the heap may hold stale entries (a
    replaced or cancelled key), recognised by their sequence number and skipped."""

    def __init__(self) -> None:
        self.clock_ms = 0          # the last monotonic reading passed in (advance)
        self._live: dict[Hashable, tuple[int, int, Callable[[int], Any]]] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._seq = itertools.count()

    def advance(self, mono_ms: int) -> None:
        """The monotonic clock reads ``mono_ms`` (it never goes back: a smaller reading is
        ignored)."""
        if mono_ms > self.clock_ms:
            self.clock_ms = mono_ms

    def schedule(self, key: Hashable, delay_ms: int, op: Callable[[int], Any]) -> None:
        """Run ``op(now_ms)`` ``delay_ms`` after the current monotonic reading (a negative
        delay is due at once); replaces ``key``'s operation."""
        deadline_ms = self.clock_ms + max(0, delay_ms)
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq, op)
        heapq.heappush(self._heap, (deadline_ms, seq, key))
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        # heartbeats reschedule the same keys constantly: rebuild when stale entries dominate
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._live):
            self._heap = [(d, s, k) for k, (d, s, _) in self._live.items()]
            heapq.heapify(self._heap)

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def cancel_where(self, pred: Callable[[Hashable], bool]) -> None:
        for key in [k for k in self._live if pred(k)]:
            del self._live[key]

    def deadline(self, key: Hashable) -> int | None:
        """``key``'s deadline on the monotonic clock, or None."""
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    def _prune(self) -> None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            entry = self._live.get(key)
            if entry is not None and entry[1] == seq:
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._prune()
        return self._heap[0][0] if self._heap else None

    def pop_due(self) -> tuple[Hashable, Callable[[int], Any]] | None:
        """Remove and return the earliest entry whose deadline the monotonic clock has
        reached, if any."""
        self._prune()
        if not self._heap or self._heap[0][0] > self.clock_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        _, _, op = self._live.pop(key)
        return key, op

    def keys(self):
        return list(self._live)
