"""StreamsGroupTopologyDescriptionUpdate (key 93), v0 (Kafka 4.4, KIP-1331): a streams member
pushes its topology's full description for the broker's topology description plugin
(``group.streams.topology.description.plugin.class``) to store; StreamsGroupDescribe v1 then
serves it.

kbroker has no such plugin (it is a Java interface of Kafka's broker), so every push is answered
as Kafka 4.4 answers it without a plugin: UNSUPPORTED_VERSION with the message "The broker has
no streams group topology description plugin configured." — before any group or member check,
as Kafka does. Members are never asked to push (``TopologyDescriptionRequired`` is false in
every StreamsGroupHeartbeat answer), and Kafka Streams treats the answer as "not stored".

ACLs (``kbroker.authz``): READ on the group (GROUP_AUTHORIZATION_FAILED), checked first.
Not implemented: storing descriptions (no plugin).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import GROUP, READ
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.StreamsGroupTopologyDescriptionUpdateResponse
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


@api(93, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize(READ, GROUP, request.group_id):
        return Response(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                        error_message=None)
    return Response(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION,
                    error_message=NO_PLUGIN)
