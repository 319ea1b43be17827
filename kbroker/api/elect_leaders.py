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
- ``timeout_ms`` is the deadline of the controller's event, checked (as Kafka's controller
  queue does) before the election runs: 0 or less answers ``REQUEST_TIMED_OUT`` — top level
  and for every requested partition — and elects nothing; an empty topic list is answered
  before that check, as Kafka's ``QuorumController.electLeaders`` does.
Not implemented: unclean election out of the ISR (answered ``ELIGIBLE_LEADERS_NOT_AVAILABLE``),
a deadline that passes while the election is being committed (the answer comes once it is).

ACLs (``kbroker.authz``): ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

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
    if request.timeout_ms <= 0:
        # the controller event's deadline has passed before it runs (Kafka's getErrorResponse)
        code, results = ErrorCode.REQUEST_TIMED_OUT, [
            (name, [(i, ErrorCode.REQUEST_TIMED_OUT, None) for i in parts])
            for name, parts in (topics or [])]
    else:
        code, results = await ctx.broker.controller.elect_leaders(election_type, topics)
    if ctx.version < 1 and code:
        code = 0  # v0 has no top-level error code: the partitions carry it
    return Response(throttle_time_ms=0, error_code=code, replica_election_results=[
        Response.ReplicaElectionResult(topic=name, partition_result=[
            Response.ReplicaElectionResult.PartitionResult(partition_id=i, error_code=c, error_message=m)
            for i, c, m in parts])
        for name, parts in results])
