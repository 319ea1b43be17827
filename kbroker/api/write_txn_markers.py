"""WriteTxnMarkers (key 27), v1: append commit/abort markers to partitions (KIP-98).

Sent by a transaction coordinator to the leaders of a transaction's partitions; on one
node the coordinator writes its markers directly, and this API does the same work
(``TransactionCoordinator.write_markers``) for a coordinator elsewhere. Markers on
``__consumer_offsets`` also complete the transaction's offsets in the group coordinator.
v0 was removed by KIP-896 (Kafka 4). Not implemented: authorization (cluster action).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.WriteTxnMarkersResponse


@api(27, versions=(1, 1))
async def handle(ctx: RequestContext, request) -> Resp:
    coordinator = ctx.broker.transactions
    out = []
    for m in request.markers:
        partitions = [(t.name, p) for t in m.topics for p in t.partition_indexes]
        if coordinator is None:
            errors = {tp: E.COORDINATOR_NOT_AVAILABLE for tp in partitions}
        else:
            errors = coordinator.write_markers(m.producer_id, m.producer_epoch,
                                               m.transaction_result, partitions,
                                               m.coordinator_epoch)
        out.append(Resp.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
            Resp.WritableTxnMarkerTopicResult(name=t.name, partitions=[
                Resp.WritableTxnMarkerPartitionResult(partition_index=p,
                                                      error_code=errors[(t.name, p)])
                for p in t.partition_indexes])
            for t in m.topics]))
    return Resp(markers=out)
