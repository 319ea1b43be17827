"""DescribeProducers (key 61), v0: the active producers of partitions this node leads
(KIP-664; ``kafka-transactions.sh describe-producers``): producer id and epoch, last
sequence and timestamp, coordinator epoch of the last marker and the first offset of the
producer's open transaction (-1 when none), from the partition's producer state.

ACLs (``kbroker.authz``): READ on each topic (else TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import READ
from kbroker.wire.error_codes import ErrorCode
from kbroker.replica import ReplicaError
from kbroker.wire import messages

Resp = messages.DescribeProducersResponse


@api(61, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Resp:
    replicas = ctx.broker.replicas
    topics = []
    denied = denied_topics(ctx, READ, (t.name for t in request.topics))
    for t in request.topics:
        parts = []
        for p in t.partition_indexes:
            if t.name in denied:
                parts.append(Resp.PartitionResponse(partition_index=p, active_producers=[],
                                                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            try:
                entries = replicas.describe_producers(t.name, p)
            except ReplicaError as exc:
                parts.append(Resp.PartitionResponse(partition_index=p, error_code=exc.error_code,
                                                    error_message=exc.message, active_producers=[]))
                continue
            parts.append(Resp.PartitionResponse(partition_index=p, error_code=0, error_message=None,
                active_producers=[Resp.ProducerState(
                    producer_id=e.producer_id, producer_epoch=e.producer_epoch,
                    last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                    coordinator_epoch=e.coordinator_epoch,
                    current_txn_start_offset=(-1 if e.current_txn_first_offset is None
                                              else e.current_txn_first_offset))
                    for e in sorted(entries, key=lambda e: e.producer_id)]))
        topics.append(Resp.TopicResponse(name=t.name, partitions=parts))
    return Resp(throttle_time_ms=0, topics=topics)
