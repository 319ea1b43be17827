"""ElectLeaders (key 43), v0–v2: elect the preferred (type 0) or, for leaderless partitions,
any eligible (type 1) replica as leader — ``kafka-leader-election.sh``,
``Admin.electLeaders``.

- KIP-183 (v0, preferred only), KIP-460 (v1: election type, top-level error code), v2
  flexible (KIP-482). Kafka's brokers forward it to the active controller; so does kbroker
  (``ControllerChannel.elect_leaders``; served on the controller listener by
  ``kbroker.controller_server.forwarded``).
- Per partition: ``ELECTION_NOT_NEEDED``, ``PREFERRED_LEADER_NOT_AVAILABLE``,
  ``ELIGIBLE_LEADERS_NOT_AVAILABLE``, ``UNKNOWN_TOPIC_OR_PARTITION`` (rules in
  ``kbroker/metadata/elect.py``). A null topic list means every partition (those needing no
  election are left out); an empty list is answered at once with no results.
Not implemented: unclean election out of the ISR (answered ``ELIGIBLE_LEADERS_NOT_AVAILABLE``),
``timeout_ms`` (the answer comes once the elections are committed), authorization.

ACLs (``kbroker.authz``): ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire import messages

Response = messages.ElectLeadersResponse


@api(43, versions=(0, 2))
async def handle(ctx: RequestContext, request) -> Response:
    election_type = request.election_type if ctx.version >= 1 else 0
    if not ctx.authorize_cluster(ALTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return Response(throttle_time_ms=0, error_code=code, replica_election_results=[
            Response.ReplicaElectionResult(topic=t.topic, partition_result=[
                Response.ReplicaElectionResult.PartitionResult(partition_id=i, error_code=code)
                for i in t.partitions]) for t in request.topic_partitions or ()])
    if request.topic_partitions is None:
        topics = None
    else:
        topics = [(t.topic, list(t.partitions)) for t in request.topic_partitions]
        if not topics:
            return Response(throttle_time_ms=0, error_code=0, replica_election_results=[])
    code, results = await ctx.broker.controller.elect_leaders(election_type, topics)
    return Response(throttle_time_ms=0, error_code=code, replica_election_results=[
        Response.ReplicaElectionResult(topic=name, partition_result=[
            Response.ReplicaElectionResult.PartitionResult(partition_id=i, error_code=c, error_message=m)
            for i, c, m in parts])
        for name, parts in results])
