"""ListTransactions (key 66), v0–v2: the transactional ids this coordinator knows (KIP-664).

Filters: state names (unknown names are echoed in ``unknown_state_filters``), producer ids,
v1's ``duration_filter`` (KIP-994: only transactions open longer than that many ms) and v2's
``transactional_id_pattern`` (KIP-1152: a regular expression the whole id must match; null or
empty: no filter; one that does not compile: ``INVALID_REGULAR_EXPRESSION``, nothing listed).
Python's ``re`` stands in for Java's regex syntax; the common subset behaves alike.

ACLs (``kbroker.authz``): only the transactional ids the principal may DESCRIBE are listed.
"""
from __future__ import annotations

import re

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_names
from kbroker.authz.acls import DESCRIBE, TRANSACTIONAL_ID
from kbroker.txn.metadata import STATE_BY_NAME
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.ListTransactionsResponse


@api(66, versions=(0, 2))
async def handle(ctx: RequestContext, request) -> Resp:
    coordinator = transactions(ctx.broker)
    states = list(request.state_filters or ())
    unknown = [s for s in states if s not in STATE_BY_NAME]
    if coordinator is None:
        return Resp(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE,
                    unknown_state_filters=unknown, transaction_states=[])
    pattern = request.transactional_id_pattern if ctx.version >= 2 else None
    matcher = None
    if pattern:
        try:
            matcher = re.compile(pattern)
        except re.error:
            return Resp(throttle_time_ms=0, error_code=E.INVALID_REGULAR_EXPRESSION,
                        unknown_state_filters=unknown, transaction_states=[])
    await coordinator.maybe_load()
    duration = request.duration_filter if ctx.version >= 1 else -1
    found = coordinator.list_transactions(set(states) - set(unknown) if states else None,
                                          set(request.producer_id_filters or ()) or None,
                                          duration)
    if states and len(unknown) == len(states):
        found = []
    if matcher is not None:
        found = [m for m in found if matcher.fullmatch(m.transactional_id)]
    hidden = denied_names(ctx, DESCRIBE, TRANSACTIONAL_ID, (m.transactional_id for m in found))
    found = [m for m in found if m.transactional_id not in hidden]
    return Resp(throttle_time_ms=0, error_code=E.NONE, unknown_state_filters=unknown,
                transaction_states=[Resp.TransactionState(transactional_id=m.transactional_id,
                                                          producer_id=m.producer_id,
                                                          transaction_state=m.state.display_name)
                                    for m in found])
