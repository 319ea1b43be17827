"""EndTxn (key 26), v0–v5: commit or abort the producer's transaction (KIP-98).

The coordinator writes PrepareCommit/PrepareAbort to ``__transaction_state``, a marker to
every partition of the transaction and then CompleteCommit/CompleteAbort; the answer
comes once that is done (``kbroker.txn.coordinator.end_txn``). A retried EndTxn of a
completed transaction answers NONE.

v5 is transaction version 2 (KIP-890 part 2; what Kafka's ``EndTxnRequest`` version > 4
means, whatever the cluster finalized): every EndTxn bumps the producer epoch, the answer
carries the producer id and epoch to use next (a new id once the epoch is exhausted), an
abort is allowed without an ongoing transaction, and a retry is recognised by the epoch
before the bump. Errors carry producer id/epoch -1, as Kafka's.

ACLs (``kbroker.authz``): WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import TRANSACTIONAL_ID, WRITE
from kbroker.api._txn_errors import fenced_error_for
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.EndTxnResponse


TV2_VERSION = 5


@api(26, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Resp:
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return Resp(throttle_time_ms=0, error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coordinator = transactions(ctx.broker)
    if coordinator is None:
        return Resp(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE)
    err, pid, epoch = await coordinator.end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch,
        request.committed, tv2=ctx.version >= TV2_VERSION)
    resp = Resp(throttle_time_ms=0, error_code=fenced_error_for(26, ctx.version, err))
    if ctx.version >= TV2_VERSION:
        resp.producer_id, resp.producer_epoch = pid, epoch
    return resp
