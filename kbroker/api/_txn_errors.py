"""The fenced-producer error code an API version can carry (KIP-588).

KIP-588 added PRODUCER_FENCED (90) for a transactional producer that a newer instance with
the same transactional id has fenced. Clients speaking versions from before it do not know
code 90; Kafka answers them INVALID_PRODUCER_EPOCH (47), which they handle the same way
(the producer is fenced). The first version that may carry 90:

- InitProducerId (22): v4
- AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26): v2
- TxnOffsetCommit (28): never — Kafka answers 47 at every version (its transaction
  verification turns a fenced producer into INVALID_PRODUCER_EPOCH, and so does the
  append of the offsets' transactional batch).

The coordinators (``kbroker.txn``) always speak the new code; handlers map it on the way out
with :func:`fenced_error_for`.
"""
from __future__ import annotations

from kbroker.wire.error_codes import ErrorCode as E

# API key -> first version that may answer PRODUCER_FENCED (None: no version may)
FIRST_FENCED_VERSION: dict[int, int | None] = {22: 4, 24: 2, 25: 2, 26: 2, 28: None}


def fenced_error_for(api_key: int, version: int, error: int) -> int:
    """``error`` as the client of ``api_key`` at ``version`` must see it."""
    if error != E.PRODUCER_FENCED:
        return error
    first = FIRST_FENCED_VERSION[api_key]
    if first is None or version < first:
        return int(E.INVALID_PRODUCER_EPOCH)
    return error
