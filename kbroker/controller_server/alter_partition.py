"""AlterPartition (key 56), v2–v3 as Kafka 4 (v0–v1 removed by KIP-896; KIP-497, KIP-704 ids in v2, KIP-903 broker epochs in v3),
on the controller listener: a partition leader changes the ISR of partitions it leads.

The checks and the records are the controller's (``QuorumController.alter_partition``,
Kafka's ``ReplicationControlManager.alterPartition`` rules); this module decodes and builds
the answer: v0–v1 name topics, v2+ identify them by id; each partition answers an error or
its state after the change (leader, leader epoch, ISR, partition epoch). A requester whose
broker epoch is not its current registration gets ``STALE_BROKER_EPOCH`` for the whole
request; off the active controller every partition gets ``NOT_CONTROLLER`` (Kafka's
top-level answer), so the broker finds the new controller and retries.
An ISR change that holds every target replica of an ongoing reassignment completes it
(KIP-455); if that moves the leadership away from the requester the answer is
``NEW_LEADER_ELECTED`` (v0–v1: ``FENCED_LEADER_EPOCH``), as Kafka.
Not implemented: leader recovery after unclean election (never elected uncleanly:
``RECOVERING`` is refused)."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.metadata.quorum_controller import NotController
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.AlterPartitionResponse


def _topic(td, partitions):
    return Response.TopicData(topic_id=td.topic_id, partitions=partitions)


@controller_api(56, versions=(2, 3), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    c = ctx.broker.controller
    try:
        if c is None or not c.active:
            raise NotController()
        code, results = await c.alter_partition(request.broker_id, request.broker_epoch, request.topics,
                                                version=ctx.version)
    except NotController:
        return Response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER, topics=[])
    return Response(throttle_time_ms=0, error_code=code, topics=[
        _topic(td, [Response.PartitionData(
            partition_index=index, error_code=r.error_code, leader_id=r.leader_id,
            leader_epoch=r.leader_epoch, isr=list(r.isr), leader_recovery_state=0,
            partition_epoch=r.partition_epoch) for index, r in answers])
        for td, answers in results])
