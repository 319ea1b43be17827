"""AssignReplicasToDirs (key 73), v0 (KIP-858), on the controller listener: a broker tells
the active controller which of its log directories holds each of its replicas. kbroker's
brokers send it for the replicas of a directory that went offline, next to the heartbeat
that reports the directory (``OfflineLogDirs``), so the controller can take exactly those
replicas out of their ISRs (``QuorumController.assign_replicas_to_dirs``). The assignment is
kept by the active controller only (Kafka writes it into the partitions' ``Directories``);
brokers repeat it with every heartbeat while a directory is offline, so a new active
controller learns it again. ``STALE_BROKER_EPOCH`` for a stale registration,
``NOT_CONTROLLER`` off the active controller."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.metadata.quorum_controller import NotController
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.AssignReplicasToDirsResponse


def _answer(request, code: int, per_partition: int):
    return Response(throttle_time_ms=0, error_code=code, directories=[
        Response.DirectoryData(id=d.id, topics=[
            Response.TopicData(topic_id=t.topic_id, partitions=[
                Response.PartitionData(partition_index=p.partition_index, error_code=per_partition)
                for p in t.partitions])
            for t in d.topics])
        for d in request.directories])


@controller_api(73, versions=(0, 0), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    c = ctx.broker.controller
    if c is None or not c.active:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER)
    assignments = {d.id: [(t.topic_id, p.partition_index) for t in d.topics for p in t.partitions]
                   for d in request.directories}
    try:
        code = await c.assign_replicas_to_dirs(request.broker_id, request.broker_epoch, assignments)
    except NotController:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER)
    if code:
        return Response(throttle_time_ms=0, error_code=code)
    return _answer(request, ErrorCode.NONE, ErrorCode.NONE)
