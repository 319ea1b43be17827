"""``request_percentage`` (KIP-124) and ``controller_mutation_rate`` (KIP-599) arithmetic on an
explicit clock, against Kafka's formulas: request time as a percentage of one thread over the
quota windows with the throttle bounded by one window (``ClientRequestQuotaManager``), and the
token bucket of ``ControllerMutationQuotaManager`` (burst = quota * window num * window size,
strict vs permissive quotas, throttle = time to refill to zero)."""
from __future__ import annotations

import pytest

from kbroker.metadata.client_quotas import entity_key
from kbroker.quota.manager import RequestQuotaManager
from kbroker.quota.mutation import ControllerMutationQuotaManager, QuotaExceeded, TokenBucket

C = "client-id"


def test_request_time_is_a_percentage_of_one_thread_and_the_throttle_is_bounded():
    now = [0]
    m = RequestQuotaManager(samples=11, window_ms=1000, clock_ms=lambda: now[0])
    m.update({entity_key([(C, "app")]): {"request_percentage": 1.0}})
    # 50 ms of handling = 5 (percent-seconds); over the 10 s minimum window: 0.5 % < 1 %
    assert m.record_time("User:ANONYMOUS", "app", 50_000_000) == 0
    # another 100 ms: 15 / 10 s = 1.5 %: (1.5 - 1) / 1 * 10 s = 5000 ms, bounded by one window
    assert m.record_time("User:ANONYMOUS", "app", 100_000_000) == 1000
    # 80 ms = 8 / 10 s = 0.8 % over 0.7 %: (0.8 - 0.7) / 0.7 * 10 s = 1429 ms, bounded to 1 s
    m2 = RequestQuotaManager(11, 1000, lambda: 0)
    m2.update({entity_key([(C, None)]): {"request_percentage": 0.7}})
    assert m2.record_time(None, "x", 80_000_000) == 1000
    m3 = RequestQuotaManager(11, 10_000, lambda: 0)        # 10 s windows: bound 10 s
    m3.update({entity_key([(C, None)]): {"request_percentage": 0.7}})
    # 80 ms = 8 over 100 s = 0.08 %: within; 670 ms more = 75 / 100 s = 0.75 %
    # -> (0.75 - 0.7) / 0.7 * 100 s = 7143 ms, under the 10 s bound
    assert m3.record_time(None, "x", 80_000_000) == 0
    assert m3.record_time(None, "x", 670_000_000) == 7143
    m.record_exempt(1_000_000_000)
    assert m.statistics()["exempt_percent"] == pytest.approx(10.0)     # 100 over 10 s


def test_token_bucket_refills_at_the_rate_up_to_the_burst():
    b = TokenBucket(burst=22.0, now_ms=0)
    assert b.take(30, rate=2.0, burst=22.0, now_ms=0) == -8.0
    assert b.refill(2.0, 22.0, 1000) == -6.0
    assert b.refill(2.0, 22.0, 100_000) == 22.0


def mutation_manager(rate: float, clock):
    m = ControllerMutationQuotaManager(samples=11, window_ms=1000, clock_ms=clock)
    m.update({entity_key([(C, None)]): {"controller_mutation_rate": rate}})
    return m


def test_strict_quota_takes_a_big_request_then_refuses_until_refilled():
    now = [0]
    m = mutation_manager(2.0, lambda: now[0])            # burst 2 * 11 * 1 = 22
    q = m.quota_for("User:ANONYMOUS", "admin", strict=True)
    q.record(30)                                         # checked at 22 >= 0: taken, now -8
    with pytest.raises(QuotaExceeded) as e:
        q.record(1)
    assert e.value.throttle_ms == 4000                   # 8 tokens at 2/s
    assert q.throttle_time() == 4000
    now[0] = 1500
    assert q.throttle_time() == 2500                     # less the time passed since
    q2 = m.quota_for("User:ANONYMOUS", "admin", strict=True)
    with pytest.raises(QuotaExceeded) as e:              # -8 + 3 = -5 tokens
        q2.record(1)
    assert e.value.throttle_ms == 2500
    now[0] = 4000                                        # back at zero: allowed again
    q3 = m.quota_for("User:ANONYMOUS", "admin", strict=True)
    q3.record(1)
    assert q3.throttle_time() == 0
    assert m.statistics()["refused"] == 2


def test_permissive_quota_never_refuses_but_reports_the_throttle():
    m = mutation_manager(1.0, lambda: 0)                 # burst 11
    q = m.quota_for(None, "old-admin", strict=False)
    q.record(10)
    assert q.throttle_time() == 0
    q.record(5)                                          # -4 tokens at 1/s
    assert q.throttle_time() == 4000
    q.record(5)
    assert q.throttle_time() == 9000


def test_no_quota_is_unbounded():
    m = ControllerMutationQuotaManager(11, 1000, lambda: 0)
    q = m.quota_for(None, "x", strict=True)
    for _ in range(100):
        q.record(1000)
    assert q.throttle_time() == 0
