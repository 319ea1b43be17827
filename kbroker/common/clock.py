"""The broker's two clocks, and the one reading each kind of time needs.

Kafka reads time two ways (``org.apache.kafka.common.utils.Time``): ``milliseconds()``, the
wall clock, for what is written down or compared with written timestamps (record and commit
timestamps, retention, offsets expiry, transaction start times, delegation token expiry)
and for some ages kept in memory (quota sample windows, fetch session ages, ISR catch-up
times); and ``hiResClockMs()``/``nanoseconds()`` or a scheduler's delays, a monotonic clock, for
intervals that a step of the wall clock (NTP, a VM resumed) must neither stretch nor skip:
the group coordinator's timers (``CoordinatorTimer`` on ``SystemTimer``), share-partition
acquisition locks, broker sessions at the controller, periodic tasks (checkpoints).
kbroker keeps one more on the monotonic clock than Kafka 4.3.1: the ISR catch-up times of
``replica.lag.time.max.ms`` (Kafka's ``Partition.getOutOfSyncReplicas`` compares wall-clock
fetch times, so a forward step there empties ISRs).

kbroker's injected clock (``Broker.clock``) has both: ``now_ms()`` (wall) and
``monotonic_ms()``. Tests inject clocks of their own; one with only ``now_ms`` (a clock that
never steps) serves as both, through :func:`monotonic_reader`.
"""
from __future__ import annotations

import time
from typing import Callable


class SystemClock:
    """Wall-clock milliseconds (record timestamps, retention) and monotonic milliseconds
    (``monotonic_ms``: intervals, which a step of the wall clock must not stretch or skip)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def __call__(self) -> int:
        return self.now_ms()


def monotonic_reader(clock) -> Callable[[], int]:
    """The monotonic reading of an injected clock: its ``monotonic_ms``, or its ``now_ms`` for
    a test clock without one (a clock that never steps serves for both)."""
    reader = getattr(clock, "monotonic_ms", None)
    return reader if reader is not None else clock.now_ms
