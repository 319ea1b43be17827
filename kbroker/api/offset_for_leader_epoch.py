"""OffsetForLeaderEpoch (API key 23): the end offset of a leader epoch (KIP-101, KIP-279).

Versions: v2–v4 (v0/v1 removed by KIP-896; v3 adds ``replica_id``, v4 is flexible).
Consumers use it to validate their position after a leader change (KIP-320): the answer
is the largest epoch <= the asked one and the offset where the next epoch began, the log end
offset for the current epoch, and epoch/offset -1 for an epoch newer than the leader's.
The epoch is the one core's metadata image gives each partition — the same number
Metadata reports and the log stamps into stored batches (see PITFALLS: one consistent epoch).
Answers come from the leader's persisted leader-epoch cache (the same one followers truncate
against); a replica that is not the leader answers NOT_LEADER_OR_FOLLOWER, as Kafka does
for every requester but its debugging replica id.

ACLs (``kbroker.authz``): a follower (``replica_id`` >= 0) needs CLUSTER_ACTION on the
cluster (CLUSTER_AUTHORIZATION_FAILED), a consumer DESCRIBE on each topic
(TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import CLUSTER_ACTION, DESCRIBE
from kbroker.wire.error_codes import ErrorCode
from kbroker.replica import ReplicaError
from kbroker.wire import messages

Resp = messages.OffsetForLeaderEpochResponse


@api(23, versions=(2, 4))
async def handle(ctx: RequestContext, request):
    replicas = ctx.broker.replicas
    topics = []
    if getattr(request, "replica_id", -1) >= 0:
        refused = frozenset() if ctx.authorize_cluster(CLUSTER_ACTION) else \
            frozenset(t.topic for t in request.topics)
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    else:
        refused = denied_topics(ctx, DESCRIBE, (t.topic for t in request.topics))
        code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    for t in request.topics:
        parts = []
        for p in t.partitions:
            out = Resp.EpochEndOffset(partition=p.partition, error_code=0,
                                      leader_epoch=-1, end_offset=-1)
            if t.topic in refused:
                out.error_code = code
                parts.append(out)
                continue
            try:
                out.leader_epoch, out.end_offset = replicas.end_offset_for_epoch(
                    t.topic, p.partition, p.leader_epoch, p.current_leader_epoch)
            except ReplicaError as exc:
                out.error_code = exc.error_code
            parts.append(out)
        topics.append(Resp.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return Resp(throttle_time_ms=0, topics=topics)
