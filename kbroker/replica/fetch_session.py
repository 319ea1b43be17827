"""Incremental fetch sessions (KIP-227): the broker's session cache and the rules of a fetch.

A consumer of many partitions would otherwise name every partition in every Fetch and get
every partition back. With a session, the first (full) fetch registers the partitions; later
(incremental) fetches name only what changed (new fetch offsets, added partitions, forgotten
topics) and are answered only with partitions that have something to say.

Rules (Kafka's ``FetchManager.newContext`` and friends, behaviour only):

- The request's ``(session_id, session_epoch)`` decide. Epoch ``-1`` (FINAL) or ``0``
  (INITIAL) is a *full* fetch whatever the session id: a session named by such a request is
  closed first. Epoch -1 creates nothing (sessionless: answered with session id 0); epoch 0
  asks for a new session, created when the answer is built if the cache has room (or can
  evict), else the answer carries session id 0 and the client stays sessionless.
- Any other epoch is *incremental*: an unknown id → ``FETCH_SESSION_ID_NOT_FOUND``; an epoch
  other than the session's next → ``INVALID_FETCH_SESSION_EPOCH``; a session made with topic
  ids used by a version without them (or the reverse) → ``FETCH_SESSION_TOPIC_ID_ERROR``.
  Otherwise the request's partitions are added or update the cached ones, forgotten ones
  are dropped, and the fetch reads *every* partition of the session (in session order). A
  session left empty is closed and the fetch is sessionless. Epochs count 1, 2, …, wrap to 1.
- An incremental answer holds a partition only if it has records, an error, a diverging
  epoch or a preferred read replica, or its high watermark or log start offset changed
  since last sent. A partition that returned records moves to the end of the session, so
  the response size limit does not starve the others.
- The cache: ``max.incremental.fetch.session.cache.slots`` (default 1000) split over 8 shards
  (Kafka's ``NumFetchSessionCacheShards``), new sessions going round-robin; a session id
  names its shard. A full shard may evict, in its own entries: first a session unused for
  more than ``MIN_EVICTION_MS`` (120 s); else the least valuable evictable session, ordered by
  (privileged, size, id), if the newcomer is at least as valuable. Followers' sessions
  (``replica_id`` >= 0) are privileged: they evict consumers' sessions, and are evictable by
  other privileged sessions only once older than 120 s; any session is evictable by a
  consumer's only once older than 120 s.

Pure: no I/O, no clock (every call takes ``now_ms``), randomness injected (``rng``).
The Fetch handler (:mod:`kbroker.api.fetch`) uses it; ``statistics()`` counts full and
incremental requests and the partitions they named.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Sequence

from kbroker.wire.error_codes import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NUM_SHARDS = 8                      # Kafka's NumFetchSessionCacheShards
MIN_EVICTION_MS = 120_000           # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
INT_MAX = (1 << 31) - 1
FIRST_TOPIC_ID_VERSION = 13         # Fetch v13 names topics by id (KIP-516)


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: FINAL stays FINAL, INT_MAX wraps to 1 (never 0)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT_MAX else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: the latest request data for it (``req``: whatever the
    handler reads partitions with) and what was last sent about it."""
    req: Any
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class PartitionOutcome:
    """What a read returned for one partition: the facts that decide whether an incremental
    answer must include it."""
    high_watermark: int
    log_start_offset: int
    records_size: int = 0
    error_code: int = 0
    diverging_epoch: bool = False
    preferred_read_replica: int = -1

    def must_respond(self, cached: CachedPartition, update: bool) -> bool:
        respond = self.records_size > 0 or self.preferred_read_replica != -1 or self.diverging_epoch
        if cached.high_watermark != self.high_watermark:
            respond = True
            if update:
                cached.high_watermark = self.high_watermark
        if cached.log_start_offset != self.log_start_offset:
            respond = True
            if update:
                cached.log_start_offset = self.log_start_offset
        if self.error_code:
            respond = True
            if update:
                cached.high_watermark = -1   # re-sent once the error is gone
        return respond


@dataclass(eq=False)
class FetchSession:
    """An incremental fetch session (KIP-227) and its partitions."""
    id: int
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int                                  # the epoch the next request must carry
    partitions: dict = field(default_factory=dict)   # key → CachedPartition, session order
    cached_size: int = -1                       # size as last filed in the eviction order

    def evictable_key(self) -> tuple:
        return (self.privileged, self.cached_size, self.id)


class _Shard:
    """One shard of the cache: ``max_entries`` sessions with ids in its own range."""

    def __init__(self, num: int, max_entries: int, eviction_ms: int, id_range: int, rng):
        self.num, self.max_entries, self.eviction_ms = num, max_entries, eviction_ms
        self.id_range, self.rng = id_range, rng
        self.sessions: dict[int, FetchSession] = {}
        self.evictable_by_all: set[FetchSession] = set()
        self.evictable_by_privileged: set[FetchSession] = set()
        self.num_partitions = 0
        self.evictions = 0

    def new_session_id(self) -> int:
        lo, hi = max(1, self.num * self.id_range), (self.num + 1) * self.id_range
        while True:
            sid = self.rng.randrange(lo, hi)
            if sid not in self.sessions:
                return sid

    def touch(self, s: FetchSession, now_ms: int) -> None:
        s.last_used_ms = now_ms
        if s.cached_size != -1:
            self.num_partitions -= s.cached_size
        self.evictable_by_all.discard(s)
        self.evictable_by_privileged.discard(s)
        s.cached_size = len(s.partitions)
        old = now_ms - s.creation_ms > self.eviction_ms
        if not s.privileged or old:
            self.evictable_by_privileged.add(s)
        if old:
            self.evictable_by_all.add(s)
        self.num_partitions += s.cached_size

    def remove(self, s: FetchSession) -> bool:
        if self.sessions.get(s.id) is not s:
            return False
        del self.sessions[s.id]
        self.evictable_by_all.discard(s)
        self.evictable_by_privileged.discard(s)
        self.num_partitions -= max(0, s.cached_size)
        return True

    def try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stale.last_used_ms > self.eviction_ms:
            self.remove(stale)
            self.evictions += 1
            return True
        pool = self.evictable_by_privileged if privileged else self.evictable_by_all
        if not pool:
            return False
        victim = min(pool, key=FetchSession.evictable_key)
        if (privileged, size, 0) < victim.evictable_key():
            return False
        self.remove(victim)
        self.evictions += 1
        return True

    def maybe_create(self, now_ms: int, privileged: bool, uses_topic_ids: bool,
                     partitions: dict) -> int:
        if len(self.sessions) < self.max_entries or self.try_evict(privileged, len(partitions), now_ms):
            s = FetchSession(self.new_session_id(), privileged, uses_topic_ids, now_ms, now_ms,
                             next_epoch(INITIAL_EPOCH), partitions)
            self.sessions[s.id] = s
            self.touch(s, now_ms)
            return s.id
        return INVALID_SESSION_ID


class FetchContext:
    """What one Fetch request reads and how its answer is built.

    ``error_code`` (a session error: read nothing, answer it with session id 0), else
    ``partitions``: ``(key, req)`` pairs to read, in answer order. After reading, call
    ``finish(outcomes, now_ms)`` with one :class:`PartitionOutcome` per partition; it returns
    ``(error_code, session_id, included)`` — ``included[i]`` says whether partition ``i``
    goes into the answer."""

    kind = "sessionless"
    # whether ``finish`` reads the outcomes (a sessionless fetch answers every partition:
    # the caller may pass none)
    uses_outcomes = False

    def __init__(self, partitions: list, error_code: int = 0):
        self.partitions = partitions
        self.error_code = error_code

    def finish(self, outcomes: Sequence[PartitionOutcome], now_ms: int) -> tuple[int, int, list[bool]]:
        return self.error_code, INVALID_SESSION_ID, [True] * len(self.partitions)


class _FullContext(FetchContext):
    kind = "full"
    uses_outcomes = True

    def __init__(self, cache: "FetchSessionCache", partitions: list, privileged: bool,
                 uses_topic_ids: bool):
        super().__init__(partitions)
        self.cache, self.privileged, self.uses_topic_ids = cache, privileged, uses_topic_ids

    def finish(self, outcomes, now_ms):
        cached = {key: CachedPartition(req, o.high_watermark, o.log_start_offset)
                  for (key, req), o in zip(self.partitions, outcomes)}
        sid = self.cache.next_shard().maybe_create(now_ms, self.privileged, self.uses_topic_ids,
                                                   cached)
        return 0, sid, [True] * len(outcomes)


class _IncrementalContext(FetchContext):
    kind = "incremental"
    uses_outcomes = True

    def __init__(self, session: FetchSession, request_epoch: int):
        super().__init__([(key, cp.req) for key, cp in session.partitions.items()])
        self.session, self.request_epoch = session, request_epoch

    def finish(self, outcomes, now_ms):
        s = self.session
        if s.epoch != next_epoch(self.request_epoch):
            # another request of this session got in between (a duplicate)
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, s.id, [False] * len(outcomes)
        included = []
        for (key, _), o in zip(self.partitions, outcomes):
            cp = s.partitions.get(key)
            if cp is None:           # forgotten by a later request meanwhile
                included.append(False)
                continue
            respond = o.must_respond(cp, True)
            included.append(respond)
            if respond and o.records_size > 0:
                s.partitions[key] = s.partitions.pop(key)   # to the end of the session
        return 0, s.id, included


class FetchSessionCache:
    """Every fetch session of this broker (see the module docstring for the rules)."""

    def __init__(self, max_slots: int = 1000, *, eviction_ms: int = MIN_EVICTION_MS,
                 num_shards: int = NUM_SHARDS, rng: random.Random | None = None):
        self.rng = rng or random.Random()
        id_range = INT_MAX // num_shards
        self.shards = [_Shard(n, max_slots // num_shards, eviction_ms, id_range, self.rng)
                       for n in range(num_shards)]
        self._round_robin = 0
        self.stats = {"full_requests": 0, "incremental_requests": 0, "sessionless_requests": 0,
                      "session_errors": 0, "partitions_in_full_requests": 0,
                      "partitions_in_incremental_requests": 0,
                      "max_partitions_in_incremental_request": 0}

    # ------------------------------------------------------------------ lookup
    def _shard_of(self, session_id: int) -> _Shard | None:
        n = session_id // self.shards[0].id_range if session_id > 0 else -1
        return self.shards[n] if 0 <= n < len(self.shards) else None

    def get(self, session_id: int) -> FetchSession | None:
        shard = self._shard_of(session_id)
        return shard.sessions.get(session_id) if shard is not None else None

    def next_shard(self) -> _Shard:
        shard = self.shards[self._round_robin % len(self.shards)]
        self._round_robin += 1
        return shard

    def remove(self, session_id: int) -> bool:
        shard = self._shard_of(session_id)
        s = shard.sessions.get(session_id) if shard is not None else None
        return s is not None and shard.remove(s)

    # ------------------------------------------------------------------ the rules
    def new_context(self, *, version: int, session_id: int, epoch: int,
                    partitions: Sequence[tuple[Hashable, Any]], forgotten: Iterable[Hashable],
                    privileged: bool, now_ms: int) -> FetchContext:
        """The context of one Fetch request: ``partitions`` are the request's ``(key, req)``
        pairs in request order, ``forgotten`` the keys of its forgotten topics' partitions."""
        partitions = list(partitions)
        if version < 7:
            # no session fields before v7 (KIP-227): always a full, sessionless fetch
            self.stats["sessionless_requests"] += 1
            return FetchContext(partitions)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)          # a full fetch closes the session it names
            self.stats["partitions_in_full_requests"] += len(partitions)
            if epoch == FINAL_EPOCH:
                self.stats["sessionless_requests"] += 1
                return FetchContext(partitions)
            self.stats["full_requests"] += 1
            return _FullContext(self, partitions, privileged, version >= FIRST_TOPIC_ID_VERSION)
        shard = self._shard_of(session_id)
        s = shard.sessions.get(session_id) if shard is not None else None
        if s is None:
            self.stats["session_errors"] += 1
            return FetchContext([], ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if s.epoch != epoch:
            self.stats["session_errors"] += 1
            return FetchContext([], ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if s.uses_topic_ids != (version >= FIRST_TOPIC_ID_VERSION):
            self.stats["session_errors"] += 1
            return FetchContext([], ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        self.stats["incremental_requests"] += 1
        self.stats["partitions_in_incremental_requests"] += len(partitions)
        self.stats["max_partitions_in_incremental_request"] = max(
            self.stats["max_partitions_in_incremental_request"], len(partitions))
        for key, req in partitions:
            cp = s.partitions.get(key)
            if cp is None:
                s.partitions[key] = CachedPartition(req)
            else:
                cp.req = req
        for key in forgotten:
            s.partitions.pop(key, None)
        if not s.partitions:
            shard.remove(s)
            return FetchContext(partitions)
        shard.touch(s, now_ms)
        s.epoch = next_epoch(s.epoch)
        return _IncrementalContext(s, epoch)

    # ------------------------------------------------------------------ statistics
    def statistics(self) -> dict:
        return {**self.stats,
                "sessions": sum(len(s.sessions) for s in self.shards),
                "partitions_cached": sum(s.num_partitions for s in self.shards),
                "evictions": sum(s.evictions for s in self.shards)}
