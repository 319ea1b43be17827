"""ConsumerGroupDescribe (key 69), v0–v1: consumer groups (KIP-848) with their epochs, the
assignor, and every member's subscription, current and target assignment; v1 adds each
member's ``MemberType`` (KIP-1099: 0 = a classic-protocol member, 1 = consumer protocol).

A classic group (or an unknown id) answers ``GROUP_ID_NOT_FOUND`` — the admin client then
falls back to DescribeGroups, as with Kafka. Authorized operations are not computed
(``-2147483648``, "not requested"). With the finalized ``group.version`` at 0 every group
is answered UNSUPPORTED_VERSION, as Kafka.

ACLs (``kbroker.authz``): DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_names
from kbroker.authz.acls import DESCRIBE, GROUP
from kbroker.wire.error_codes import ErrorCode
from kbroker.group.consumer.feature import consumer_protocol_enabled
from kbroker.group.service import coordinator_of
from kbroker.wire import messages

Response = messages.ConsumerGroupDescribeResponse


def _assignment(tps):
    return Response.Assignment(topic_partitions=[
        Response.TopicPartitions(topic_id=t, topic_name=name, partitions=ps)
        for t, name, ps in tps])


@api(69, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Response:
    if not consumer_protocol_enabled(ctx.broker):
        return Response(throttle_time_ms=0, groups=[
            Response.DescribedGroup(error_code=ErrorCode.UNSUPPORTED_VERSION, group_id=g, members=[])
            for g in request.group_ids])
    denied = denied_names(ctx, DESCRIBE, GROUP, request.group_ids)
    allowed = [g for g in request.group_ids if g not in denied]
    described = await coordinator_of(ctx.broker).consumer_group_describe(allowed) if allowed else []
    return Response(throttle_time_ms=0, groups=[
        Response.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=g, members=[])
        for g in request.group_ids if g in denied] + [
        Response.DescribedGroup(
            error_code=d.error, error_message=d.message, group_id=d.group_id,
            group_state=d.state, group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
            assignor_name=d.assignor_name, members=[
                Response.DescribedGroup.Member(
                    member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                    member_epoch=m.member_epoch, client_id=m.client_id,
                    client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=_assignment(m.assignment),
                    target_assignment=_assignment(m.target_assignment),
                    member_type=m.member_type if ctx.version >= 1 else -1)
                for m in d.members])
        for d in described])
