"""The quota rate and throttle time, against Kafka's formulas (``Rate`` over a
``WindowedSum`` with ``quota.window.num`` samples of ``quota.window.size.seconds``, and
``QuotaUtils.throttleTime``), on an explicit clock."""
from __future__ import annotations

import pytest

from kbroker.quota.rate import SampledRate, throttle_time_ms


def test_a_new_client_is_measured_over_samples_minus_one_full_windows():
    r = SampledRate(samples=11, window_ms=1000)
    r.record(1000, 0)
    # elapsed 0 ms, fewer than 10 full windows: counted as 10 windows -> 1000 B / 10 s
    assert r.window_size_ms(0) == 10_000
    assert r.measure(0) == pytest.approx(100.0)
    r.record(1000, 500)
    assert r.window_size_ms(500) == 10_500
    assert r.measure(500) == pytest.approx(2000 / 10.5)


def test_window_grows_with_real_time_once_full_windows_exist():
    r = SampledRate(samples=3, window_ms=1000)
    for t in range(0, 2500, 500):          # 5 records of 100 B, over 2 s
        r.record(100, t)
    # oldest sample started at 0; 2000 ms elapsed = 2 full windows = samples - 1
    assert r.window_size_ms(2000) == 2000
    assert r.measure(2000) == pytest.approx(500 / 2.0)
    assert r.window_size_ms(2700) == 2700


def test_old_samples_are_purged():
    r = SampledRate(samples=2, window_ms=1000)
    r.record(5000, 0)
    assert r.total(1999) == 5000
    # a sample whose last event is samples * window old is forgotten
    assert r.total(2000) == 0
    assert r.measure(2000) == 0


def test_at_most_samples_plus_one_samples_are_kept():
    r = SampledRate(samples=2, window_ms=100)
    for t in (0, 100, 200, 300):
        r.record(1, t)
    assert len(r._samples) == 3
    # the first sample was reused for t=300 (its value reset); the one of t=100 is now
    # samples * window old and purged: 200 and 300 remain
    assert r.total(300) == 2


@pytest.mark.parametrize("rate, bound, window, expected", [
    (100.0, 50.0, 10_000, 10_000),     # twice the quota: wait one whole window
    (150.0, 100.0, 11_000, 5_500),
    (100.0, 100.0, 10_000, 0),         # at the bound: no throttle
    (90.0, 100.0, 10_000, 0),
    (100.5, 100.0, 1_000, 5),          # 4.999.. rounds to 5 (Java's Math.round)
    (100.25, 100.0, 2_000, 5),         # exactly 5.0
    (100.025, 100.0, 1_000, 0),        # 0.25 rounds down
    (100.5, 100.0, 100, 1),            # 0.5 rounds up as Math.round does (not to even)
    (102.5, 100.0, 100, 3),            # 2.5 -> 3
])
def test_throttle_time_is_kafkas(rate, bound, window, expected):
    assert throttle_time_ms(rate, bound, window) == expected
