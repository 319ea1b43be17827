"""A windowed rate with Kafka's sampling rules, and Kafka's throttle-time formula. Pure:
every call takes ``now_ms``.

As Kafka's ``Rate`` over a ``WindowedSum`` (``SampledStat``): values are summed into
samples of ``window_ms``; at most ``samples + 1`` are kept (one may overlap the start of the
measured window); a sample whose last event is ``samples * window_ms`` old is reset. The
measured window runs from the oldest sample's start to now, but counts as at least
``samples - 1`` full windows (so a new client is not judged on a few milliseconds), and at
least 1 ms. The rate is the sum over the window, per second.

Throttle time when the rate exceeds the bound (``QuotaUtils.throttleTime``):
``round((rate - bound) / bound * window size in ms)``.
"""
from __future__ import annotations

import math


class _Sample:
    __slots__ = ("start_ms", "last_ms", "value", "events")

    def __init__(self, now_ms: int):
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.last_ms = now_ms
        self.value = 0.0
        self.events = 0


class SampledRate:
    def __init__(self, samples: int = 11, window_ms: int = 1000):
        self.samples = max(1, samples)
        self.window_ms = max(1, window_ms)
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_ms = now_ms

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for s in self._samples:
            if now_ms - s.last_ms >= expire:
                s.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        oldest = min(s.start_ms for s in self._samples)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def total(self, now_ms: int) -> float:
        self._purge(now_ms)
        return sum(s.value for s in self._samples)

    def measure(self, now_ms: int) -> float:
        """Per second over the current window."""
        total = self.total(now_ms)
        return total / (self.window_size_ms(now_ms) / 1000.0)


def throttle_time_ms(rate: float, bound: float, window_ms: int) -> int:
    """Kafka's ``QuotaUtils.throttleTime``: how long until the average is back at the bound."""
    if rate <= bound:
        return 0
    return math.floor((rate - bound) / bound * window_ms + 0.5)    # Java's Math.round
