"""AssignReplicasToDirs (key 73), v0 (KIP-858), on the controller listener: a broker tells
the active controller which of its log directories holds each replica it placed (a new
replica's log, or one moved by AlterReplicaLogDirs; ``kbroker/metadata/assignments.py``).
The controller writes each as a ``PartitionChangeRecord`` with the replica's directory in
``Directories`` (``QuorumController.assign_replicas_to_dirs``), and a replica placed in a
directory the broker no longer reports online leaves its ISR. Answers per partition:
UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (not a replica of the
broker) or NONE. Top level: ``STALE_BROKER_EPOCH`` for a stale registration,
``UNSUPPORTED_VERSION`` below metadata.version 3.7-IV2, ``NOT_CONTROLLER`` off the active
controller."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.metadata.quorum_controller import NotController
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.AssignReplicasToDirsResponse


def _answer(request, errors: dict):
    return Response(throttle_time_ms=0, error_code=ErrorCode.NONE, directories=[
        Response.DirectoryData(id=d.id, topics=[
            Response.TopicData(topic_id=t.topic_id, partitions=[
                Response.PartitionData(partition_index=p.partition_index,
                                       error_code=errors.get((d.id, t.topic_id, p.partition_index),
                                                             ErrorCode.NONE))
                for p in t.partitions])
            for t in d.topics])
        for d in request.directories])


@controller_api(73, versions=(0, 0), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    c = ctx.broker.controller
    if c is None or not c.active:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER)
    assignments: dict = {}
    for d in request.directories:
        assignments.setdefault(d.id, []).extend(
            (t.topic_id, p.partition_index) for t in d.topics for p in t.partitions)
    try:
        code, errors = await c.assign_replicas_to_dirs(request.broker_id, request.broker_epoch, assignments)
    except NotController:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER)
    if code:
        return Response(throttle_time_ms=0, error_code=code)
    return _answer(request, errors)
