"""DescribeLogDirs (API key 35): log directories and the size of each partition in them.

Versions: v1–v5 (v0 removed by KIP-896; v2 flexible; v3 top-level ``error_code``; v5
``is_cordoned``, KIP-1066: the directory is in ``cordoned.log.dirs``; v4
``total_bytes``/``usable_bytes``, KIP-827). ``topics`` null means every partition.
Every local replica is listed, leader or follower. ``offset_lag`` is Kafka's
``getLogEndOffsetLag`` for a current (not future) replica: max(high watermark − log end
offset, 0) of the local log; ``is_future_key`` is false (KIP-113's future replicas, moves
between directories, are not implemented). A directory taken offline after an I/O error
(kbroker/replica/log_dir_failure.py) is listed with ``KAFKA_STORAGE_ERROR`` and no replicas.

ACLs (``kbroker.authz``): DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED, no
log dirs).
"""
from __future__ import annotations

import os

from kbroker.api import RequestContext, api
from kbroker.authz.acls import DESCRIBE
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire import messages

Resp = messages.DescribeLogDirsResponse


@api(35, versions=(1, 5))
async def handle(ctx: RequestContext, request):
    if not ctx.authorize_cluster(DESCRIBE):
        return Resp(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    wanted = None
    if request.topics is not None:
        wanted = {}
        for t in request.topics:
            wanted.setdefault(t.topic, set()).update(t.partitions)
    results = []
    cordoned = {os.path.abspath(str(d)) for d in getattr(ctx.broker.logs, "cordoned", ()) or ()}
    for log_dir, error, topics, total, usable in ctx.broker.replicas.describe_log_dirs(wanted):
        results.append(Resp.DescribeLogDirsResult(
            error_code=error, log_dir=log_dir, total_bytes=total, usable_bytes=usable,
            is_cordoned=log_dir in cordoned,
            topics=[Resp.DescribeLogDirsTopic(
                name=name,
                partitions=[Resp.DescribeLogDirsPartition(partition_index=i, partition_size=size,
                                                          offset_lag=lag, is_future_key=False)
                            for i, size, lag in parts])
                for name, parts in topics]))
    return Resp(throttle_time_ms=0, error_code=0, results=results)
