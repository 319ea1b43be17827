"""Fetch (API key 1): read record batches, long-polling until ``min_bytes`` are available.

Versions: v4–v18, as Kafka 4.3. v4 is the floor every Kafka 4.x client still speaks
(KIP-896). v13+ name topics by id (KIP-516): ids are resolved through the metadata image at
every read (an id the image does not know answers its partitions ``UNKNOWN_TOPIC_ID``; a
session keeps it and resolves it later, as Kafka's ``maybeResolveUnknownName``), answers carry
the id; a session opened with ids cannot be continued without them or the reverse
(``FETCH_SESSION_TOPIC_ID_ERROR``). v14 is v13 (KIP-405's tiered-storage error, never
raised). v15 moves the replica id into ``replica_state`` (KIP-903). v16 (KIP-951): a partition
answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current leader, and the
answer carries that leader's endpoint. v17/v18 add follower fields (``replica_directory_id``,
KIP-853; the follower's ``high_watermark``) that kbroker's own fetchers do not send and the
leader ignores.

ACLs (``kbroker.authz``): a follower fetch needs CLUSTER_ACTION on the cluster, a consumer
READ on each topic; a partition that fails gets TOPIC_AUTHORIZATION_FAILED and no records
(checked at every read, over the session's partitions too).

KIPs: KIP-74 (``max_bytes``; the first partition with data returns at least one whole batch),
KIP-98 (``isolation_level``, ``last_stable_offset``, ``aborted_transactions``), KIP-107
(``log_start_offset``), KIP-227 (incremental fetch sessions, v7+: the rules and the cache
live in :mod:`kbroker.replica.fetch_session`; a full fetch — epoch 0 or -1 whatever the session id —
is answered with exactly the requested partitions in request order, an incremental one with
the session's partitions that changed, grouped by topic as they come), KIP-320 (``current_leader_epoch`` → FENCED/UNKNOWN_LEADER_EPOCH), KIP-392
(``preferred_read_replica`` = -1), KIP-595 tagged fields at v12 left at their defaults.
KIP-951's ``current_leader`` (tagged since v12) stays at its default as in Kafka, which fills
it (with ``node_endpoints``) only from v16 on NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH.

Follower fetches (``replica_id`` >= 0, the broker id of a replica; KIP-392's
``replica_state`` is v15+ and not served) read up to the log end offset with no isolation,
record the follower's position (ISR and high watermark, kbroker/replica/state.py) and answer
``diverging_epoch`` (v12, KIP-320 tagged field) when ``last_fetched_epoch`` shows the
follower's log diverged from the leader's.

Records are answered as file regions so the server can ``os.sendfile`` them. Not
implemented: rack-aware replica selection (fetching from followers).
"""
from __future__ import annotations

from dataclasses import replace

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.api._topic_ids import topic_names
from kbroker.authz.acls import CLUSTER_ACTION, READ
from kbroker.replica.fetch_session import FetchSessionCache, PartitionOutcome
from kbroker.quota.manager import throttle_fetch
from kbroker.replica import FetchResult, FetchSpec
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Resp = messages.FetchResponse
_PartitionData = Resp.PartitionData
# the errors whose partitions name their current leader (KIP-951, v16+)
_LEADER_NAMED = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
_NOTHING_DENIED = frozenset()


async def _leader_throttle(ctx, read: list, replica_id: int, max_wait_ms: int) -> bool:
    """Kafka's ``shouldLeaderThrottle`` on a follower fetch: a partition throttled on this
    leader, whose follower is not in the ISR, is answered without records while the leader
    quota is exceeded (decided once for the request, before its bytes are recorded); the
    bytes sent for throttled partitions are recorded. When everything with data was held
    back the answer waits ``max_wait_ms`` (Kafka's delayed fetch ignores throttled
    partitions), so a throttled follower does not spin. True when something was held back."""
    quota = getattr(getattr(ctx.broker, "quotas", None), "leader_replication", None)
    if quota is None or not quota._throttled:
        return False
    replicas = ctx.broker.replicas
    exceeded = None
    held, sent, recorded = 0, 0, 0
    for i, r in enumerate(read):
        if r.error_code or not quota.is_throttled(r.topic, r.partition):
            sent += r.size
            continue
        part = replicas.get_replica(r.topic, r.partition)
        in_sync = part is not None and replica_id in getattr(part, "isr", ())
        if not in_sync and r.size:
            if exceeded is None:
                exceeded = quota.is_exceeded()
            if exceeded:
                quota.stats["held_back"] += 1
                read[i] = replace(r, records=None)
                held += 1
                continue
        recorded += r.size
        sent += r.size
    quota.record(recorded)
    if held and not sent and max_wait_ms > 0:
        import trio
        await trio.sleep(max_wait_ms / 1000)
    return bool(held)


def _aborted(found):
    """None under read_uncommitted; else the (producer id, first offset) of every aborted
    transaction overlapping the returned data (consumers skip those batches)."""
    if found is None:
        return None
    return [Resp.AbortedTransaction.make(producer_id=pid, first_offset=first)
            for pid, first in found]


def partition_data(r: FetchResult):
    """A partition's answer for a read (``make``: the generated constructor as a plain call;
    the absent diverging epoch, leader and snapshot are the shared defaults, never changed:
    a partition that diverged gets its own, KIP-320)."""
    pd = _PartitionData.make(
        partition_index=r.partition, error_code=r.error_code, high_watermark=r.high_watermark,
        last_stable_offset=r.last_stable_offset, log_start_offset=r.log_start_offset,
        aborted_transactions=_aborted(r.aborted_transactions),
        # Kafka answers an empty record set (size 0), never null.
        records=r.records if r.records is not None else b"")
    if r.diverging_epoch is not None:
        pd.diverging_epoch = _PartitionData.EpochEndOffset.make(epoch=r.diverging_epoch[0],
                                                                end_offset=r.diverging_epoch[1])
    return pd


def session_cache(broker) -> FetchSessionCache:
    """The broker's fetch session cache (made on first use, sized by
    ``max.incremental.fetch.session.cache.slots``)."""
    cache = getattr(broker, "fetch_sessions", None)
    if cache is None:
        try:
            slots = int(broker.config.get("max.incremental.fetch.session.cache.slots"))
        except (KeyError, AttributeError, TypeError, ValueError):
            slots = 1000
        cache = broker.fetch_sessions = FetchSessionCache(slots)
    return cache


def _current_leaders(ctx: RequestContext, answered) -> list:
    """KIP-951 (v16+): NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH partitions name their
    current leader; the answer lists that leader's endpoint on the request's listener."""
    replicas = ctx.broker.replicas
    brokers = getattr(getattr(replicas, "image", None), "brokers", None) or {}
    nodes: dict[int, object] = {}
    for name, pd in answered:
        if pd.error_code not in _LEADER_NAMED:
            continue
        leader, epoch = replicas.current_leader(name, pd.partition_index)
        pd.current_leader = Resp.LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)
        b = brokers.get(leader) if leader >= 0 else None
        if b is None or getattr(b, "fenced", False) or leader in nodes:
            continue
        ep = b.endpoint(ctx.listener)
        if ep is not None:
            nodes[leader] = Resp.NodeEndpoint(node_id=leader, host=ep[0], port=ep[1], rack=b.rack)
    return [nodes[k] for k in sorted(nodes)]


@api(1, versions=(4, 18))
async def handle(ctx: RequestContext, request):
    version = ctx.api_version
    use_ids = version >= 13
    names = topic_names(ctx.broker) if use_ids else {}
    # a session's partition key: (topic id, partition) from v13, else (topic name, partition)
    asked = []
    for ft in request.topics:
        topic_key = ft.topic_id if use_ids else ft.topic
        name = names.get(ft.topic_id) if use_ids else ft.topic
        for fp in ft.partitions:
            asked.append(((topic_key, fp.partition), FetchSpec(
                name, fp.partition, fp.fetch_offset, fp.partition_max_bytes,
                fp.current_leader_epoch if version >= 9 else -1,
                fp.last_fetched_epoch if version >= 12 else -1,
                fp.log_start_offset if version >= 5 else -1)))
    forgotten = ([((t.topic_id if use_ids else t.topic), p)
                  for t in request.forgotten_topics_data for p in t.partitions]
                 if version >= 7 else [])
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    now_ms = ctx.broker.clock.now_ms()
    fctx = session_cache(ctx.broker).new_context(
        version=version, session_id=request.session_id if version >= 7 else 0,
        epoch=request.session_epoch if version >= 7 else -1,
        partitions=asked, forgotten=forgotten, privileged=replica_id >= 0, now_ms=now_ms)
    if fctx.error_code:
        return Resp(throttle_time_ms=0, error_code=fctx.error_code, session_id=0, responses=[])
    specs = []
    for (topic_key, _), spec in fctx.partitions:
        if use_ids and spec.topic is None:
            spec = replace(spec, topic=names.get(topic_key))    # created since it was asked for
        specs.append(spec)
    if replica_id >= 0 and not ctx.authorize_cluster(CLUSTER_ACTION):
        denied = frozenset(s.topic for s in specs if s.topic is not None)
    elif ctx.authorizer is None:
        denied = _NOTHING_DENIED       # no authorizer: every topic may be read
    else:
        denied = denied_topics(ctx, READ, {s.topic for s in specs if s.topic is not None})
    readable = [s for s in specs if s.topic is not None and s.topic not in denied]
    read = await ctx.broker.replicas.fetch(
        readable, max_bytes=request.max_bytes, min_bytes=request.min_bytes,
        max_wait_ms=request.max_wait_ms, isolation_level=request.isolation_level,
        replica_id=replica_id if replica_id >= 0 else -1) if readable else []
    if replica_id >= 0 and read:
        # leader.replication.throttled.rate (KIP-73): throttled partitions answer no records
        # while the leader quota is exceeded; the follower then waits as a delayed fetch would
        await _leader_throttle(ctx, read, replica_id, request.max_wait_ms)
    it = iter(read)
    results = [FetchResult(None, s.partition, ErrorCode.UNKNOWN_TOPIC_ID) if s.topic is None
               else FetchResult(s.topic, s.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
               if s.topic in denied else next(it) for s in specs]
    # a sessionless fetch answers every partition: only a session reads the outcomes
    outcomes = [PartitionOutcome(r.high_watermark, r.log_start_offset, r.size, r.error_code,
                                 r.diverging_epoch is not None)
                for r in results] if fctx.uses_outcomes else ()
    error_code, session_id, included = fctx.finish(outcomes, ctx.broker.clock.now_ms())
    if error_code:
        return Resp(throttle_time_ms=0, error_code=error_code, session_id=session_id, responses=[])
    topics: list = []
    stats = ctx.broker.topic_stats
    follower = replica_id >= 0
    for spec, r in zip(specs, results):
        if spec.topic is None or spec.topic in denied:
            continue          # an unknown topic id or a denied topic: nothing was read
        # metered as Kafka's BrokerTopicStats: consumers' bytes per topic, followers' apart
        if r.error_code:
            stats.fetch_failed(spec.topic, r.error_code)
        elif follower:
            stats.replication_bytes_out += r.size
        else:
            counters = stats.topic(spec.topic)
            counters.fetch_requests += 1
            counters.bytes_out += r.size
    keys: list = []          # the topic key of each entry of ``topics``
    answered: list = []      # (topic, answer) of the partitions that may name a leader
    for ((topic_key, _), _spec), spec, r, keep in zip(fctx.partitions, specs, results, included):
        if not keep:
            continue
        pd = partition_data(r)
        if r.error_code in _LEADER_NAMED:
            answered.append((spec.topic, pd))
        # consecutive partitions of one topic share an entry (Kafka's FetchResponse.of)
        if keys and keys[-1] == topic_key:
            topics[-1].partitions.append(pd)
        else:
            topics.append(Resp.FetchableTopicResponse.make(topic_id=topic_key, partitions=[pd])
                          if use_ids else
                          Resp.FetchableTopicResponse.make(topic=topic_key, partitions=[pd]))
            keys.append(topic_key)
    endpoints = _current_leaders(ctx, answered) if version >= 16 and answered else []
    throttle = 0
    if replica_id < 0 and ctx.broker.quotas.fetch.enabled:     # consumer_byte_rate (KIP-219)
        throttle = throttle_fetch(ctx.broker.quotas.fetch, getattr(ctx, "principal", None),
                                  ctx.client_id, topics)
    return Resp.make(throttle_time_ms=throttle, error_code=0, session_id=session_id,
                     responses=topics, node_endpoints=endpoints)
