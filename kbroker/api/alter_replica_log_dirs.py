"""AlterReplicaLogDirs (key 34), v1–v2: move replicas of this broker between its log directories.

KIP-113 (v0, removed by KIP-896), v2 flexible. ``kafka-reassign-partitions.sh`` with log dirs
and ``Admin.alterReplicaLogDirs`` send it. Per partition, as Kafka's
``ReplicaManager.alterReplicaLogDirs`` answers:

- a partition the metadata does not know → ``UNKNOWN_TOPIC_OR_PARTITION`` (checked first);
- a destination that is not one of ``log.dirs`` (absolute path) → ``LOG_DIR_NOT_FOUND``;
- a partition with no local replica → ``REPLICA_NOT_AVAILABLE``;
- a replica already in the destination → NONE (nothing to move);
- a replica in another directory → moved there (``ReplicaManager.move_replica_dir``,
  ``LogManager.move_log``: copied, then swapped, crash-safe) and NONE. Kafka answers NONE at
  once and copies through a "future" replica in the background; kbroker copies before
  answering, so DescribeLogDirs shows the partition in its new directory right away (and
  never as a future replica). A copy that fails (disk full, I/O error) answers
  ``KAFKA_STORAGE_ERROR``: a storage error takes the directory that met it offline
  (kbroker/log/failure.py, its line), another error is logged here; a copy that fails
  leaves the replica where it was.
"""
from __future__ import annotations

import logging
import os

from kbroker.api import RequestContext, api
from kbroker.log.errors import KafkaStorageError
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.AlterReplicaLogDirsResponse
_log = logging.getLogger("kbroker.api")


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
    if os.path.abspath(str(log.log_dir)) == os.path.abspath(path):
        return ErrorCode.NONE
    dest = next(d for d in logs.log_dirs if os.path.abspath(str(d)) == os.path.abspath(path))
    try:
        ctx.broker.replicas.move_replica_dir(topic, index, dest)
    except KafkaStorageError:
        return ErrorCode.KAFKA_STORAGE_ERROR     # the failed dir has its line already
    except OSError as e:
        _log.error("moving %s-%d to %s failed: %s", topic, index, dest, e)
        return ErrorCode.KAFKA_STORAGE_ERROR
    _log.info("moved %s-%d to log directory %s", topic, index, dest)
    return ErrorCode.NONE


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
