"""Fetch (key 1), v4–v18, on the controller listener: replication of ``__cluster_metadata-0``
(KIP-595). A fetch from a replica of the quorum (``replica_id`` >= 0: a voter or an
observer broker) goes to the Raft core, which validates the fetch offset and last fetched
epoch, long-polls up to ``max_wait_ms`` and answers records, a diverging epoch or a snapshot
id. Client fetches do not belong on the controller plane: their partitions are answered
``NOT_LEADER_OR_FOLLOWER``. From v13 the topic is Kafka's fixed metadata topic id; v17's
``ReplicaDirectoryId`` (KIP-853) tells the leader which log dir of a replica fetches; v16+
answers name the leader's endpoint in ``NodeEndpoints``; v18's ``HighWatermark`` (KIP-1166) is
the fetcher's: a fetcher behind on it is answered at once instead of long-polling."""
from __future__ import annotations

from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.raft import wire_map
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from ._raft_rpc import step
from .registry import controller_api

Resp = messages.FetchResponse


def _refuse(request, code: int):
    return Resp(throttle_time_ms=0, error_code=0, session_id=0, responses=[
        Resp.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=[
            Resp.PartitionData(partition_index=p.partition, error_code=code, high_watermark=-1,
                               last_stable_offset=-1, log_start_offset=-1, records=b"")
            for p in t.partitions or ()]) for t in request.topics or ()])


@controller_api(1, versions=(4, 18), cluster_operation=CLUSTER_ACTION)
async def handle(ctx, request):
    if not wire_map.is_raft_fetch(request, ctx.version):
        return _refuse(request, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    quorum = ctx.broker.quorum

    def answer_to_wire(answer):     # v16+: the leader's endpoint in NodeEndpoints (KIP-853)
        return wire_map.fetch_response_to_wire(answer, quorum._wall(), quorum.node_endpoints(
            1, ctx.version, Resp, answer.current_leader.leader_id))
    return await step(ctx, request, lambda r: wire_map.fetch_request_from_wire(r, ctx.version), answer_to_wire,
                      lambda code: _refuse_whole(code) if code == ErrorCode.INCONSISTENT_CLUSTER_ID
                      else _refuse(request, code))


def _refuse_whole(code: int):
    """Kafka's answer to a Fetch of another cluster: the error at the top, no partitions (the
    fetching node then names the refusal in its log)."""
    return Resp(throttle_time_ms=0, error_code=code, session_id=0, responses=[])
