"""AddOffsetsToTxn (key 25), v0–v4: add a consumer group's ``__consumer_offsets`` partition
to the producer's transaction, before TxnOffsetCommit (KIP-98, used by
``sendOffsetsToTransaction``). The coordinator answers as for AddPartitionsToTxn
(``kbroker.txn.coordinator.add_offsets``); the offsets topic is created if needed.

ACLs (``kbroker.authz``): WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import GROUP, READ, TRANSACTIONAL_ID, WRITE
from kbroker.api._txn_errors import fenced_error_for
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.AddOffsetsToTxnResponse


@api(25, versions=(0, 4))
async def handle(ctx: RequestContext, request) -> Resp:
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return Resp(throttle_time_ms=0, error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorize(READ, GROUP, request.group_id):
        return Resp(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED)
    coordinator = transactions(ctx.broker)
    if coordinator is None:
        return Resp(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE)
    err = await coordinator.add_offsets(request.transactional_id, request.producer_id,
                                        request.producer_epoch, request.group_id)
    return Resp(throttle_time_ms=0, error_code=fenced_error_for(25, ctx.version, err))
