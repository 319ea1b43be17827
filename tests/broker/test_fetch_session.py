"""The fetch session cache (KIP-227) as a pure module: injected time (``now_ms``) and rng."""
import random

from kbroker.replica.fetch_session import (FINAL_EPOCH, INT_MAX, FetchSessionCache, PartitionOutcome,
                                   next_epoch)
from kbroker.wire.error_codes import ErrorCode

E = ErrorCode


def parts(*keys):
    return [(k, f"req-{k}") for k in keys]


def quiet(n, hw=10, lso=0):
    return [PartitionOutcome(hw, lso) for _ in range(n)]


def open_session(cache, keys, *, now=0, privileged=False, version=12):
    ctx = cache.new_context(version=version, session_id=0, epoch=0, partitions=parts(*keys),
                            forgotten=[], privileged=privileged, now_ms=now)
    err, sid, included = ctx.finish(quiet(len(keys)), now)
    assert err == 0 and all(included)
    return sid


def incremental(cache, sid, epoch, keys=(), forgotten=(), *, now=0, version=12):
    return cache.new_context(version=version, session_id=sid, epoch=epoch, partitions=parts(*keys),
                             forgotten=list(forgotten), privileged=False, now_ms=now)


def test_epochs_count_from_one_and_wrap_to_one():
    assert [next_epoch(e) for e in (0, 1, 41, INT_MAX, FINAL_EPOCH)] == [1, 2, 42, 1, FINAL_EPOCH]


def test_full_fetch_opens_a_session_and_incremental_reads_the_whole_session():
    cache = FetchSessionCache(rng=random.Random(1))
    sid = open_session(cache, [("a", 0), ("a", 1), ("b", 0)])
    assert sid > 0 and cache.get(sid).epoch == 1
    # names one partition (new offset), adds one, forgets one: reads the session, in order
    ctx = incremental(cache, sid, 1, [("a", 1), ("c", 0)], forgotten=[("b", 0)])
    assert ctx.kind == "incremental"
    assert [k for k, _ in ctx.partitions] == [("a", 0), ("a", 1), ("c", 0)]
    assert cache.get(sid).epoch == 2
    # answered: the new partition (never sent) and the one whose watermark moved
    outcomes = [PartitionOutcome(10, 0), PartitionOutcome(11, 0), PartitionOutcome(5, 0)]
    assert ctx.finish(outcomes, 0) == (0, sid, [False, True, True])
    stats = cache.statistics()
    assert (stats["sessions"], stats["partitions_cached"], stats["incremental_requests"]) == (1, 3, 1)
    assert stats["max_partitions_in_incremental_request"] == 2


def test_epoch_zero_or_minus_one_is_a_full_fetch_whatever_the_session_id():
    cache = FetchSessionCache(rng=random.Random(2))
    for session_id in (-1, 0, 12345):
        ctx = cache.new_context(version=12, session_id=session_id, epoch=-1, partitions=parts(("a", 0)),
                                forgotten=[], privileged=False, now_ms=0)
        assert ctx.error_code == 0 and ctx.kind == "sessionless"
        assert ctx.finish(quiet(1), 0) == (0, 0, [True])
    sid = open_session(cache, [("a", 0)])
    # epoch -1 naming the session closes it
    ctx = cache.new_context(version=12, session_id=sid, epoch=-1, partitions=parts(("a", 0)),
                            forgotten=[], privileged=False, now_ms=0)
    assert ctx.kind == "sessionless" and cache.get(sid) is None
    # epoch 0 naming a session closes it and opens a new one
    sid = open_session(cache, [("a", 0)])
    ctx = cache.new_context(version=12, session_id=sid, epoch=0, partitions=parts(("a", 0)),
                            forgotten=[], privileged=False, now_ms=0)
    assert ctx.kind == "full" and cache.get(sid) is None
    err, new_sid, _ = ctx.finish(quiet(1), 0)
    assert err == 0 and new_sid not in (0, sid)
    # below v7 there are no sessions
    ctx = cache.new_context(version=6, session_id=0, epoch=0, partitions=parts(("a", 0)),
                            forgotten=[], privileged=False, now_ms=0)
    assert ctx.finish(quiet(1), 0) == (0, 0, [True])


def test_session_errors():
    cache = FetchSessionCache(rng=random.Random(3))
    assert incremental(cache, 777, 1).error_code == E.FETCH_SESSION_ID_NOT_FOUND
    sid = open_session(cache, [("a", 0)])
    assert incremental(cache, sid, 2).error_code == E.INVALID_FETCH_SESSION_EPOCH
    assert incremental(cache, sid, 1, version=13).error_code == E.FETCH_SESSION_TOPIC_ID_ERROR
    # two requests with the same epoch: the second one is refused (a duplicate)
    first = incremental(cache, sid, 1)
    assert incremental(cache, sid, 1).error_code == E.INVALID_FETCH_SESSION_EPOCH
    assert first.finish(quiet(1), 0)[0] == 0
    # a request whose session moved on while it waited (another one got in) is refused
    slow = incremental(cache, sid, 2)
    assert incremental(cache, sid, 3).error_code == 0
    assert slow.finish(quiet(1), 0) == (E.INVALID_FETCH_SESSION_EPOCH, sid, [False])


def test_forgetting_everything_closes_the_session():
    cache = FetchSessionCache(rng=random.Random(4))
    sid = open_session(cache, [("a", 0), ("a", 1)])
    ctx = incremental(cache, sid, 1, forgotten=[("a", 0), ("a", 1)])
    assert ctx.kind == "sessionless" and cache.get(sid) is None
    assert ctx.finish([], 0) == (0, 0, [])


def test_what_an_incremental_answer_includes():
    cache = FetchSessionCache(rng=random.Random(5))
    sid = open_session(cache, [("a", 0)])
    cases = [
        (PartitionOutcome(10, 0), False),                       # nothing changed
        (PartitionOutcome(10, 0, records_size=7), True),        # records
        (PartitionOutcome(10, 3), True),                        # log start offset moved
        (PartitionOutcome(10, 3, error_code=6), True),          # an error ...
        (PartitionOutcome(10, 3), True),                        # ... re-sent once it is gone
        (PartitionOutcome(10, 3, diverging_epoch=True), True),
        (PartitionOutcome(10, 3, preferred_read_replica=2), True),
        (PartitionOutcome(10, 3), False),
    ]
    for epoch, (outcome, want) in enumerate(cases, start=1):
        assert incremental(cache, sid, epoch).finish([outcome], 0) == (0, sid, [want])


def test_partitions_that_returned_records_move_to_the_end():
    cache = FetchSessionCache(rng=random.Random(6))
    sid = open_session(cache, [("a", 0), ("a", 1), ("a", 2)])
    ctx = incremental(cache, sid, 1)
    ctx.finish([PartitionOutcome(10, 0, records_size=5), PartitionOutcome(11, 0),
                PartitionOutcome(10, 0)], 0)
    assert [k for k, _ in incremental(cache, sid, 2).partitions] == [("a", 1), ("a", 2), ("a", 0)]


def test_slots_are_split_over_eight_shards_round_robin():
    cache = FetchSessionCache(16, rng=random.Random(7))     # 2 slots per shard
    ids = [open_session(cache, [("a", p)]) for p in range(16)]
    assert all(ids) and len(set(ids)) == 16
    assert sorted(i // (INT_MAX // 8) for i in ids) == sorted(list(range(8)) * 2)
    # a full cache of fresh, equal sessions: a newcomer of the same size is not cached
    assert open_session(cache, [("a", 99)]) == 0
    assert cache.statistics()["sessions"] == 16
    assert FetchSessionCache(0).statistics()["sessions"] == 0
    assert open_session(FetchSessionCache(0), [("a", 0)]) == 0


def test_eviction_rules():
    cache = FetchSessionCache(2, num_shards=1, rng=random.Random(8))
    small = open_session(cache, [("a", 0)], now=0)
    big = open_session(cache, [("a", 0), ("a", 1), ("a", 2)], now=0)
    # young sessions cannot be evicted by a consumer, even by a bigger one
    assert open_session(cache, [("b", p) for p in range(9)], now=1000) == 0
    # a follower (privileged) evicts the least valuable consumer session
    follower = open_session(cache, [("c", 0)], now=1000, privileged=True)
    assert follower and cache.get(small) is None and cache.get(big) is not None
    # a session unused for more than 120 s is evicted first, whoever asks
    incremental(cache, follower, 1, now=100_000).finish(quiet(1), 100_000)
    newcomer = open_session(cache, [("d", 0)], now=120_001)
    assert newcomer and cache.get(big) is None and cache.get(follower) is not None
    # sessions older than 120 s (since creation) can be evicted by a bigger consumer session
    incremental(cache, follower, 2, now=250_000).finish(quiet(1), 250_000)
    incremental(cache, newcomer, 1, now=250_000).finish(quiet(1), 250_000)
    bigger = open_session(cache, [("e", 0), ("e", 1)], now=250_001)
    assert bigger and cache.get(newcomer) is None and cache.get(follower) is not None
    # ... but not by a smaller one (size first; privileged ones only by privileged)
    incremental(cache, bigger, 1, now=380_000).finish(quiet(2), 380_000)
    incremental(cache, follower, 3, now=380_000).finish(quiet(1), 380_000)
    assert open_session(cache, [("f", 0)], now=380_001) == 0
    assert cache.statistics()["evictions"] == 3
