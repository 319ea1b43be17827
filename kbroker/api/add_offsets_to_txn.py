"""AddOffsetsToTxn (key 25), v0–v4: add a consumer group's ``__consumer_offsets`` partition
to the producer's transaction, before TxnOffsetCommit (KIP-98, used by
``sendOffsetsToTransaction``). The coordinator answers as for AddPartitionsToTxn
(``kbroker.txn.coordinator.add_offsets``); the offsets topic is created if needed.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._txn_errors import fenced_error_for
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.AddOffsetsToTxnResponse


@api(25, versions=(0, 4))
async def handle(ctx: RequestContext, request) -> Resp:
    coordinator = ctx.broker.transactions
    if coordinator is None:
        return Resp(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE)
    err = await coordinator.add_offsets(request.transactional_id, request.producer_id,
                                        request.producer_epoch, request.group_id)
    return Resp(throttle_time_ms=0, error_code=fenced_error_for(25, ctx.version, err))
