"""DescribeQuorum (key 55), v0–v2, on client listeners: the metadata quorum's leader, epoch,
high watermark, voters and observers with their lag — what ``kafka-metadata-quorum
--bootstrap-server ... describe --status/--replication`` prints.

Answered here when this node leads the quorum (always in a one-node setup), otherwise
forwarded to the leader's controller listener as Kafka brokers forward it to the controller
(``kbroker.controller_server.describe_quorum``). Not implemented: directory ids.

ACLs (``kbroker.authz``): DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import DESCRIBE
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as _E
from kbroker.controller_server.describe_quorum import describe


@api(55, versions=(0, 2))
async def handle(ctx: RequestContext, request):
    if not ctx.authorize_cluster(DESCRIBE):
        return messages.DescribeQuorumResponse(error_code=_E.CLUSTER_AUTHORIZATION_FAILED,
                                               error_message=None, topics=[], nodes=[])
    return await describe(ctx.broker.quorum, request, ctx.version)
