"""DescribeTransactions (key 65), v0: state, producer id/epoch, timeout, start time and
partitions of transactional ids (KIP-664; ``kafka-transactions.sh describe``). An id the
coordinator does not know is TRANSACTIONAL_ID_NOT_FOUND.

ACLs (``kbroker.authz``): DESCRIBE on each transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); topics the principal may not DESCRIBE are left out.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_names, denied_topics
from kbroker.authz.acls import DESCRIBE, TRANSACTIONAL_ID
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.DescribeTransactionsResponse


@api(65, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Resp:
    coordinator = transactions(ctx.broker)
    if coordinator is not None:
        await coordinator.maybe_load()
    out = []
    denied = denied_names(ctx, DESCRIBE, TRANSACTIONAL_ID, request.transactional_ids)
    for tid in request.transactional_ids:
        if tid in denied:
            err, meta = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        elif coordinator is None:
            err, meta = E.COORDINATOR_NOT_AVAILABLE, None
        else:
            err, meta = coordinator.describe(tid)
        if meta is None:
            out.append(Resp.TransactionState(error_code=err, transactional_id=tid,
                                             transaction_state="", transaction_timeout_ms=0,
                                             transaction_start_time_ms=-1, producer_id=-1,
                                             producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        hidden = denied_topics(ctx, DESCRIBE, (t for t, _ in meta.partitions))
        for t, p in sorted(meta.partitions):
            if t not in hidden:
                by_topic.setdefault(t, []).append(p)
        out.append(Resp.TransactionState(
            error_code=E.NONE, transactional_id=tid, transaction_state=meta.state.display_name,
            transaction_timeout_ms=meta.timeout_ms, transaction_start_time_ms=meta.start_ms,
            producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
            topics=[Resp.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return Resp(throttle_time_ms=0, transaction_states=out)
