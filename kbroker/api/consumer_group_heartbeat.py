"""ConsumerGroupHeartbeat (key 68), v0–v1: the consumer group protocol (KIP-848).

A member joins (epoch 0), heartbeats with its member epoch and owned partitions, and
leaves (epoch -1, or -2 for a static member leaving temporarily); the coordinator answers
its member epoch, the heartbeat interval and — when it changed or the request was a full
one — its assigned partitions (topic ids). v1 requires client-generated member ids
(KIP-1082) and adds ``SubscribedTopicRegex``. The rules are in
:mod:`kbroker.group.consumer.protocol`. With the finalized ``group.version`` at 0 every
request answers UNSUPPORTED_VERSION, as Kafka.

ACLs (``kbroker.authz``): READ on the group (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on
every subscribed topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import DESCRIBE, GROUP, READ
from kbroker.wire.error_codes import ErrorCode
from kbroker.group.consumer.feature import consumer_protocol_enabled
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.ConsumerGroupHeartbeatResponse


@api(68, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    from kbroker.group.consumer.protocol import HeartbeatRequest  # on first use (start-up)
    refused = None
    if not consumer_protocol_enabled(ctx.broker):
        refused = ErrorCode.UNSUPPORTED_VERSION, None      # group.version 0 (Kafka's answer)
    elif not ctx.authorize(READ, GROUP, request.group_id):
        refused = ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    elif request.subscribed_topic_names:
        hidden = denied_topics(ctx, DESCRIBE, request.subscribed_topic_names)
        if hidden:
            refused = (ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                       "The following topics are not authorized: " + ", ".join(sorted(hidden)))
    if refused is not None:
        return Response(throttle_time_ms=0, error_code=refused[0], error_message=refused[1],
                        member_id=request.member_id, member_epoch=-1, heartbeat_interval_ms=0,
                        assignment=None)
    owned = None if request.topic_partitions is None else [
        (tp.topic_id, list(tp.partitions)) for tp in request.topic_partitions]
    req = HeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, instance_id=request.instance_id,
        rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=(None if request.subscribed_topic_names is None
                                else list(request.subscribed_topic_names)),
        subscribed_topic_regex=request.subscribed_topic_regex if ctx.version >= 1 else None,
        server_assignor=request.server_assignor, owned=owned,
        client_id=ctx.client_id or "", client_host="/" + (ctx.client_host or ""),
        api_version=ctx.version)
    r = await coordinator_of(ctx.broker).consumer_group_heartbeat(req)
    assignment = None
    if r.assignment is not None:
        assignment = Response.Assignment(topic_partitions=[
            Response.TopicPartitions(topic_id=t, partitions=ps) for t, ps in r.assignment.items()])
    return Response(throttle_time_ms=0, error_code=r.error, error_message=r.message,
                    member_id=r.member_id, member_epoch=r.member_epoch,
                    heartbeat_interval_ms=r.heartbeat_interval_ms, assignment=assignment)
