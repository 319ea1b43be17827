"""WriteTxnMarkers (key 27), v1–v2: append commit/abort markers to partitions (KIP-98).

Sent by a transaction coordinator (``kbroker.txn.markers.MarkerChannel``) to the leader
of a transaction's partitions; the coordinator writes the markers of partitions it leads
itself. This leader writes each marker (``kbroker.txn.markers.write_as_leader``: then waits
for it to be replicated, as Kafka appends markers with acks=-1); a partition it does not lead
answers NOT_LEADER_OR_FOLLOWER and the coordinator retries at the new leader. Markers on
``__consumer_offsets`` also complete the transaction's offsets in the group coordinator.
v0 was removed by KIP-896 (Kafka 4). v2 (KIP-890 part 2) adds each marker's
``transaction_version`` (2: a TV2 transaction, whose marker carries the epoch the
coordinator bumped at EndTxn; the marker is written the same way, a higher epoch being a
valid marker epoch). Not implemented: Kafka's stricter TV2 check (a TV2 marker's epoch
above the transaction's data epoch).

ACLs (``kbroker.authz``): CLUSTER_ACTION on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import CLUSTER_ACTION
from kbroker.txn.markers import write_as_leader
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.WriteTxnMarkersResponse


@api(27, versions=(1, 2))
async def handle(ctx: RequestContext, request) -> Resp:
    coordinator = transactions(ctx.broker)
    out = []
    allowed = ctx.authorize_cluster(CLUSTER_ACTION)
    for m in request.markers:
        partitions = [(t.name, p) for t in m.topics for p in t.partition_indexes]
        if not allowed:
            errors = {tp: E.CLUSTER_AUTHORIZATION_FAILED for tp in partitions}
        elif coordinator is None:
            errors = {tp: E.COORDINATOR_NOT_AVAILABLE for tp in partitions}
        else:
            errors = await write_as_leader(ctx.broker, m.producer_id, m.producer_epoch,
                                           m.transaction_result, partitions,
                                           m.coordinator_epoch, coordinator.stats)
        out.append(Resp.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
            Resp.WritableTxnMarkerTopicResult(name=t.name, partitions=[
                Resp.WritableTxnMarkerPartitionResult(partition_index=p,
                                                      error_code=errors[(t.name, p)])
                for p in t.partition_indexes])
            for t in m.topics]))
    return Resp(markers=out)
