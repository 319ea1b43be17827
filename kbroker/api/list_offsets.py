"""ListOffsets (API key 2): offsets by timestamp, earliest, latest and max timestamp.

Versions: v1–v11. v0 (multiple ``old_style_offsets``) was removed by KIP-896; v10's
``timeout_ms`` (KIP-1075, asynchronous remote reads) is not needed without tiered storage.

Special timestamps: -2 earliest (log start offset), -1 latest (high watermark, or the last
stable offset under ``read_committed``, KIP-98), -3 the record with the max timestamp (v7+,
KIP-734), -4 earliest local (v8+, KIP-405; equals earliest without tiered storage), -5
latest tiered (v9+, KIP-1005) and -6 earliest pending upload (v11+, KIP-1023): without tiered
storage both answer offset -1, timestamp -1, leader epoch -1, as Kafka does. A special
timestamp below the version that defines it, or an unknown one (below -6), answers
UNSUPPORTED_VERSION for that partition (Kafka 4.3.1's answers). A real
timestamp answers the first offset whose timestamp is >= it, or offset/timestamp -1 when
none qualifies. ``leader_epoch`` (v4+) is the partition leader epoch (KIP-320); a stale
``current_leader_epoch`` gets FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH. A follower
(``replica_id`` >= 0) reads with no isolation: latest is the log end offset. A new leader
whose high watermark has not yet reached the start of its epoch answers latest with
OFFSET_NOT_AVAILABLE (clients retry), as Kafka does.

ACLs (``kbroker.authz``): DESCRIBE on each topic (else TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import DESCRIBE
from kbroker.replica import (EARLIEST_LOCAL_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP,
                             LATEST_TIERED_TIMESTAMP, MAX_TIMESTAMP, ReplicaError)
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Resp = messages.ListOffsetsResponse

# special timestamp -> the first version that may ask for it
_SINCE = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL_TIMESTAMP: 8, LATEST_TIERED_TIMESTAMP: 9,
          EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11}
_TIERED = (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP)


@api(2, versions=(1, 11))
async def handle(ctx: RequestContext, request):
    version = ctx.api_version
    replicas = ctx.broker.replicas
    isolation = request.isolation_level if version >= 2 else 0
    topics = []
    seen: set[tuple[str, int]] = set()
    denied = denied_topics(ctx, DESCRIBE, (t.name for t in request.topics))
    for t in request.topics:
        parts = []
        for p in t.partitions:
            out = Resp.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                    error_code=0, timestamp=-1, offset=-1,
                                                    leader_epoch=-1)
            parts.append(out)
            key = (t.name, p.partition_index)
            if key in seen:  # Kafka: a partition asked twice is an invalid request
                out.error_code = ErrorCode.INVALID_REQUEST
                continue
            seen.add(key)
            if t.name in denied:
                out.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            ts = p.timestamp
            if version < _SINCE.get(ts, 0) or ts < EARLIEST_PENDING_UPLOAD_TIMESTAMP:
                out.error_code = ErrorCode.UNSUPPORTED_VERSION
                continue
            try:
                if ts in _TIERED:
                    # no tiered storage: nothing is in (or pending upload to) remote storage,
                    # but the partition must still be led here
                    replicas.list_offset(t.name, p.partition_index, EARLIEST_LOCAL_TIMESTAMP,
                                         current_leader_epoch=p.current_leader_epoch,
                                         replica_id=request.replica_id if request.replica_id >= 0 else -1)
                    continue
                found_ts, offset, epoch = replicas.list_offset(
                    t.name, p.partition_index, ts, isolation_level=isolation,
                    current_leader_epoch=p.current_leader_epoch if version >= 4 else -1,
                    replica_id=request.replica_id if request.replica_id >= 0 else -1)
            except ReplicaError as exc:
                out.error_code = exc.error_code
                continue
            out.timestamp, out.offset = found_ts, offset
            if version >= 4:
                out.leader_epoch = epoch
        topics.append(Resp.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return Resp(throttle_time_ms=0, topics=topics)

