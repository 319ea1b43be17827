"""Which quota applies to a (user, client-id) and under which tags its rate is kept — Kafka's
eight-level precedence and ``quotaMetricTags`` — and the throttle times a manager returns."""
from __future__ import annotations

import pytest

from kbroker.metadata.client_quotas import entity_key
from kbroker.quota.manager import ClientQuotaManager, throttle_fetch

KEY = "producer_byte_rate"


def manager(quotas: dict, clock=lambda: 0) -> ClientQuotaManager:
    m = ClientQuotaManager(KEY, samples=11, window_ms=1000, clock_ms=clock)
    m.update({entity_key(e): {KEY: v} for e, v in quotas.items()})
    return m


U, C = "user", "client-id"
ALL_LEVELS = {
    ((U, "alice"), (C, "app")): 1.0,
    ((U, "alice"), (C, None)): 2.0,
    ((U, "alice"),): 3.0,
    ((U, None), (C, "app")): 4.0,
    ((U, None), (C, None)): 5.0,
    ((U, None),): 6.0,
    ((C, "app"),): 7.0,
    ((C, None),): 8.0,
}


@pytest.mark.parametrize("drop, expected_tags, expected", [
    (0, ("alice", "app"), 1.0),
    (1, ("alice", "app"), 2.0),
    (2, ("alice", ""), 3.0),
    (3, ("alice", "app"), 4.0),
    (4, ("alice", "app"), 5.0),
    (5, ("alice", ""), 6.0),
    (6, ("", "app"), 7.0),
    (7, ("", "app"), 8.0),
])
def test_precedence(drop, expected_tags, expected):
    """Remove the ``drop`` highest levels: the next one applies, with Kafka's tags."""
    levels = dict(list(ALL_LEVELS.items())[drop:])
    m = manager(levels)
    tags = m.metric_tags("alice", "app")
    assert tags == expected_tags
    assert m.quota_limit(tags) == expected


def test_single_kind_of_quota_picks_simple_tags():
    assert manager({((C, "app"),): 10.0}).metric_tags("bob", "app") == ("", "app")
    assert manager({((U, "bob"),): 10.0}).metric_tags("bob", "app") == ("bob", "")
    assert manager({((U, "bob"), (C, "x")): 10.0}).metric_tags("bob", "app") == ("bob", "app")


def test_no_quota_records_nothing():
    m = manager({})
    assert not m.enabled
    assert m.record("User:bob", "app", 10**9) == 0
    assert m.statistics()["sensors"] == 0


def test_ip_entities_and_other_keys_are_not_client_quotas():
    m = ClientQuotaManager(KEY, 11, 1000, lambda: 0)
    m.update({entity_key([("ip", "1.2.3.4")]): {"connection_creation_rate": 5.0},
              entity_key([(C, "app")]): {"consumer_byte_rate": 5.0}})
    assert not m.enabled


def test_throttle_time_follows_the_rate_and_clients_of_one_user_share_it():
    now = [0]
    m = manager({((U, "alice"),): 100.0}, clock=lambda: now[0])
    assert m.record("User:alice", "a", 500) == 0          # 500 B over 10 s: 50 B/s
    # 1500 B over 10 s = 150 B/s: (150 - 100) / 100 * 10 s = 5 s
    assert m.record("User:alice", "b", 1000) == 5000
    assert m.record("User:bob", "a", 100000) == 0         # another user: no quota
    now[0] = 20_000                                        # everything purged
    assert m.record("User:alice", "a", 500) == 0


def test_a_throttled_fetch_answers_no_records_and_takes_the_bytes_back():
    class P:
        def __init__(self, records):
            self.records = records

    class T:
        def __init__(self, parts):
            self.partitions = parts

    m = ClientQuotaManager("consumer_byte_rate", 11, 1000, lambda: 0)
    m.update({entity_key([(C, None)]): {"consumer_byte_rate": 100.0}})
    topics = [T([P(b"x" * 600), P(b"y" * 900)])]
    throttle = throttle_fetch(m, None, "c", topics)
    assert throttle == 5000                    # 1500 B / 10 s = 150 B/s
    assert [p.records for p in topics[0].partitions] == [b"", b""]
    small = [T([P(b"z" * 500)])]
    assert throttle_fetch(m, None, "c", small) == 0   # the taken-back bytes no longer count
    assert small[0].partitions[0].records == b"z" * 500
