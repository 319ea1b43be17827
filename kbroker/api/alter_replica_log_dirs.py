"""AlterReplicaLogDirs (key 34), v1–v2: move replicas of this broker between its log directories.

KIP-113 (v0, removed by KIP-896), v2 flexible. ``kafka-reassign-partitions.sh`` with log dirs
and ``Admin.alterReplicaLogDirs`` send it. Per partition, as Kafka's
``ReplicaManager.alterReplicaLogDirs`` answers:

- a partition the metadata does not know → ``UNKNOWN_TOPIC_OR_PARTITION`` (checked first);
- a destination that is not one of ``log.dirs`` (absolute path) → ``LOG_DIR_NOT_FOUND``;
- a partition with no local replica → ``REPLICA_NOT_AVAILABLE``;
- a replica already in the destination → NONE (nothing to move);
- a replica in another directory → ``KAFKA_STORAGE_ERROR``: kbroker places partitions over
  several ``log.dirs`` but cannot move one between them yet (Kafka would copy it through a
  "future" replica and answer NONE). With a single log directory — the usual set-up — every
  answer is Kafka's.
"""
from __future__ import annotations

import os

from kbroker.api import RequestContext, api
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.AlterReplicaLogDirsResponse


def _answer(ctx: RequestContext, path: str, topic: str, index: int) -> int:
    t = ctx.broker.metadata.topics.get(topic)
    if t is None or index not in t.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    logs = ctx.broker.logs
    dirs = {os.path.abspath(str(d)) for d in getattr(logs, "log_dirs", [])}
    if not os.path.isabs(path) or os.path.abspath(path) not in dirs:
        return ErrorCode.LOG_DIR_NOT_FOUND
    log = logs.get(topic, index)
    if log is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    if os.path.abspath(str(log.dir.parent)) == os.path.abspath(path):
        return ErrorCode.NONE
    return ErrorCode.KAFKA_STORAGE_ERROR


@api(34, versions=(1, 2))
async def handle(ctx: RequestContext, request) -> Response:
    results: dict[str, list] = {}
    for d in request.dirs:
        for t in d.topics:
            parts = results.setdefault(t.name, [])
            for index in t.partitions:
                parts.append(Response.AlterReplicaLogDirPartitionResult(
                    partition_index=index, error_code=_answer(ctx, d.path, t.name, index)))
    return Response(throttle_time_ms=0, results=[
        Response.AlterReplicaLogDirTopicResult(topic_name=name, partitions=parts)
        for name, parts in results.items()])
