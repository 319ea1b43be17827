"""ShareGroupDescribe (key 77), v1: share groups (KIP-932) with their epochs, assignor
(``simple``) and members (subscriptions, assignments with topic names).

An unknown id, or a group of another type, answers ``GROUP_ID_NOT_FOUND``. Authorized
operations are not computed (``-2147483648``).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.group.share.config import share_groups_enabled
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.api.share_group_heartbeat import share_groups_of
from kbroker.wire import messages

Response = messages.ShareGroupDescribeResponse


@api(77, versions=(1, 1))
async def handle(ctx: RequestContext, request) -> Response:
    if not share_groups_enabled(ctx.broker.metadata):
        return Response(throttle_time_ms=0, groups=[
            Response.DescribedGroup(error_code=E.UNSUPPORTED_VERSION, error_message=None,
                                    group_id=g, group_state="", group_epoch=0, assignment_epoch=0,
                                    assignor_name="", members=[])
            for g in request.group_ids])
    described = share_groups_of(ctx.broker).describe(list(request.group_ids))
    return Response(throttle_time_ms=0, groups=[
        Response.DescribedGroup(
            error_code=d.error, error_message=d.message, group_id=d.group_id,
            group_state=d.state, group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
            assignor_name=d.assignor_name, members=[
                Response.Member(
                    member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                    client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    assignment=Response.Assignment(topic_partitions=[
                        Response.TopicPartitions(topic_id=t, topic_name=n, partitions=ps)
                        for t, n, ps in m.assignment]))
                for m in (d.members or [])])
        for d in described])
