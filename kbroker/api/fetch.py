"""Fetch (API key 1): read record batches, long-polling until ``min_bytes`` are available.

Versions: v4–v12. Capped at v12 because v13+ address topics by id (KIP-516) and kbroker
answers Metadata with zero topic ids, so clients stay on name-based versions. v4 is the
floor every Kafka 4.x client still speaks (KIP-896).

KIPs: KIP-74 (``max_bytes``; the first partition with data returns at least one whole batch),
KIP-98 (``isolation_level``, ``last_stable_offset``, ``aborted_transactions``), KIP-107
(``log_start_offset``), KIP-227 (fetch sessions: session id 0 is answered with full
responses listing exactly the requested partitions in request order — legal for every
client), KIP-320 (``current_leader_epoch`` → FENCED/UNKNOWN_LEADER_EPOCH), KIP-392
(``preferred_read_replica`` = -1), KIP-595 tagged fields at v12 left at their defaults.
KIP-951's ``current_leader`` (tagged since v12) stays at its default as in Kafka, which fills
it (with ``node_endpoints``) only from v16 on NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH.

Follower fetches (``replica_id`` >= 0, the broker id of a replica; KIP-392's
``replica_state`` is v15+ and not served) read up to the log end offset with no isolation,
record the follower's position (ISR and high watermark, kbroker/replica/state.py) and answer
``diverging_epoch`` (v12, KIP-320 tagged field) when ``last_fetched_epoch`` shows the
follower's log diverged from the leader's.

Records are answered as file regions so the server can ``os.sendfile`` them. Not
implemented: incremental fetch sessions (a request naming a session id other than 0 gets
FETCH_SESSION_ID_NOT_FOUND), rack-aware replica selection (fetching from followers).

ACLs (``kbroker.authz``): a follower fetch needs CLUSTER_ACTION on the cluster, a consumer
READ on each topic; a partition that fails gets TOPIC_AUTHORIZATION_FAILED and no records.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import CLUSTER_ACTION, READ
from kbroker.quota.manager import throttle_fetch
from kbroker.replica import FetchSpec
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Resp = messages.FetchResponse


def _aborted(found):
    """None under read_uncommitted; else the (producer id, first offset) of every aborted
    transaction overlapping the returned data (consumers skip those batches)."""
    if found is None:
        return None
    return [Resp.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in found]


@api(1, versions=(4, 12))
async def handle(ctx: RequestContext, request):
    version = ctx.api_version
    if version >= 7 and request.session_id != 0:
        # We never hand out a session id, so any non-zero id is one we do not know.
        return Resp(throttle_time_ms=0, error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                    session_id=0, responses=[])
    if version >= 7 and request.session_epoch not in (0, -1):
        return Resp(throttle_time_ms=0, error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                    session_id=0, responses=[])
    replica_id = request.replica_id
    if replica_id >= 0 and not ctx.authorize_cluster(CLUSTER_ACTION):
        denied = frozenset(ft.topic for ft in request.topics)
    else:
        denied = denied_topics(ctx, READ, (ft.topic for ft in request.topics))
    specs = [FetchSpec(ft.topic, fp.partition, fp.fetch_offset, fp.partition_max_bytes,
                       fp.current_leader_epoch if version >= 9 else -1,
                       fp.last_fetched_epoch if version >= 12 else -1,
                       fp.log_start_offset if version >= 5 else -1)
             for ft in request.topics if ft.topic not in denied for fp in ft.partitions]
    max_bytes = request.max_bytes if version >= 3 else 0x7FFFFFFF
    results = await ctx.broker.replicas.fetch(
        specs, max_bytes=max_bytes, min_bytes=request.min_bytes,
        max_wait_ms=request.max_wait_ms, isolation_level=request.isolation_level,
        replica_id=replica_id if replica_id >= 0 else -1)
    topics: list = []
    it = iter(results)
    stats = ctx.broker.topic_stats
    follower = replica_id >= 0
    for ft in request.topics:
        parts = []
        counters = None
        if ft.topic in denied:
            topics.append(Resp.FetchableTopicResponse(topic=ft.topic, partitions=[
                Resp.PartitionData(partition_index=fp.partition,
                                   error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                   high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                                   preferred_read_replica=-1, records=b"")
                for fp in ft.partitions]))
            continue
        for _ in ft.partitions:
            r = next(it)
            # metered as Kafka's BrokerTopicStats: consumers' bytes per topic, followers' apart
            if r.error_code:
                stats.fetch_failed(ft.topic, r.error_code)
            elif follower:
                stats.replication_bytes_out += r.size
            else:
                if counters is None:
                    counters = stats.topic(ft.topic)
                counters.fetch_requests += 1
                counters.bytes_out += r.size
            pd = Resp.PartitionData(
                partition_index=r.partition, error_code=r.error_code,
                high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
                log_start_offset=r.log_start_offset,
                aborted_transactions=_aborted(r.aborted_transactions),
                preferred_read_replica=-1,
                # Kafka answers an empty record set (size 0), never null.
                records=r.records if r.records is not None else b"")
            if r.diverging_epoch is not None:
                pd.diverging_epoch = Resp.EpochEndOffset(epoch=r.diverging_epoch[0],
                                                         end_offset=r.diverging_epoch[1])
            parts.append(pd)
        topics.append(Resp.FetchableTopicResponse(topic=ft.topic, partitions=parts))
    throttle = 0
    if replica_id < 0 and ctx.broker.quotas.fetch.enabled:     # consumer_byte_rate (KIP-219)
        throttle = throttle_fetch(ctx.broker.quotas.fetch, getattr(ctx, "principal", None),
                                  ctx.client_id, topics)
    return Resp(throttle_time_ms=throttle, error_code=0, session_id=0, responses=topics)
