"""ShareGroupHeartbeat (key 76), v1: membership of a share group (KIP-932).

A member joins with epoch 0 and its (client-generated, v1) member id and subscribed topics,
heartbeats with its member epoch, and leaves with epoch -1; the answer carries its member
epoch, the heartbeat interval and, when it changed, its assigned partitions (topic ids).
Rules: :mod:`kbroker.group.share.state`; driver: :mod:`kbroker.group.share.coordinator`.
v0 (the KIP's early-access version) is not in Kafka 4.3.1's definitions.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.group.share.config import share_groups_enabled
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire import messages

Response = messages.ShareGroupHeartbeatResponse


def share_groups_of(broker):
    from kbroker.share.service import share_groups   # started with the first share request
    return share_groups(broker)


@api(76, versions=(1, 1))
async def handle(ctx: RequestContext, request) -> Response:
    from kbroker.group.share.state import HeartbeatRequest  # on first use (start-up)
    if not share_groups_enabled(ctx.broker.metadata):
        return Response(throttle_time_ms=0, error_code=E.UNSUPPORTED_VERSION, error_message=None,
                        member_id=None, member_epoch=0, heartbeat_interval_ms=0, assignment=None)
    req = HeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, rack_id=request.rack_id,
        subscribed_topic_names=(None if request.subscribed_topic_names is None
                                else list(request.subscribed_topic_names)),
        client_id=ctx.client_id or "", client_host="/" + (ctx.client_host or ""))
    r = await share_groups_of(ctx.broker).heartbeat(req)
    assignment = None
    if r.assignment is not None:
        assignment = Response.Assignment(topic_partitions=[
            Response.TopicPartitions(topic_id=t, partitions=ps) for t, ps in r.assignment.items()])
    return Response(throttle_time_ms=0, error_code=r.error, error_message=r.message,
                    member_id=r.member_id, member_epoch=r.member_epoch,
                    heartbeat_interval_ms=r.heartbeat_interval_ms, assignment=assignment)
