"""EndTxn (key 26), v0–v4: commit or abort the producer's transaction (KIP-98).

The coordinator writes PrepareCommit/PrepareAbort to ``__transaction_state``, a marker to
every partition of the transaction and then CompleteCommit/CompleteAbort; the answer
comes once that is done (``kbroker.txn.coordinator.end_txn``). A retried EndTxn of a
completed transaction answers NONE. Capped at v4: v5 belongs to KIP-890's second phase
(transaction.version 2: the epoch is bumped by every EndTxn), not implemented.

ACLs (``kbroker.authz``): WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import TRANSACTIONAL_ID, WRITE
from kbroker.api._txn_errors import fenced_error_for
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.EndTxnResponse


@api(26, versions=(0, 4))
async def handle(ctx: RequestContext, request) -> Resp:
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return Resp(throttle_time_ms=0, error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coordinator = ctx.broker.transactions
    if coordinator is None:
        return Resp(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE)
    err = await coordinator.end_txn(request.transactional_id, request.producer_id,
                                    request.producer_epoch, request.committed)
    return Resp(throttle_time_ms=0, error_code=fenced_error_for(26, ctx.version, err))
