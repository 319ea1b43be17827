"""InitProducerId (key 22), v0–v5, for idempotent and transactional producers (KIP-98).

- ``transactional_id`` null: a new producer id with epoch 0 from a block reserved through
  the controller (``kbroker.metadata.producer_ids``), so ids never repeat across restarts.
  v3+ (KIP-360) may carry the producer's current id/epoch; for a non-transactional producer
  Kafka just hands out a fresh id, and so does this.
- A transactional id goes to the transaction coordinator (``broker.transactions``,
  ``kbroker.txn.coordinator``): the id's producer id with a bumped epoch, fencing the
  previous instance (its open transaction is aborted); v3+ retries of a lost answer get
  the same epoch again (KIP-360). ``transaction.timeout.ms`` above
  ``transaction.max.timeout.ms`` is ``INVALID_TRANSACTION_TIMEOUT``; an empty id is
  ``INVALID_REQUEST``, as in Kafka.
Not implemented: KIP-890 v6 (``enable2Pc``, KIP-939).

ACLs (``kbroker.authz``): an idempotent producer needs IDEMPOTENT_WRITE on the cluster or
WRITE on some topic (else CLUSTER_AUTHORIZATION_FAILED); a transactional one WRITE on its
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import IDEMPOTENT_WRITE, TOPIC, TRANSACTIONAL_ID, WRITE
from kbroker.api._txn_errors import fenced_error_for
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.InitProducerIdResponse


def producer_ids(broker):
    mgr = getattr(broker, "producer_ids", None)
    if mgr is None:
        from kbroker.metadata.producer_ids import ProducerIdManager
        mgr = broker.producer_ids = ProducerIdManager(broker.controller)
    return mgr


@api(22, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Response:
    broker = ctx.broker
    if request.transactional_id is None:
        if ctx.authorizer is not None and not ctx.authorize_cluster(IDEMPOTENT_WRITE) \
                and not ctx.authorize_any(WRITE, TOPIC):
            return Response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            producer_id=-1, producer_epoch=-1)
        pid = await producer_ids(broker).generate()
        return Response(throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=pid, producer_epoch=0)
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return Response(throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        producer_id=-1, producer_epoch=-1)
    if request.transaction_timeout_ms <= 0 or \
            request.transaction_timeout_ms > broker.config.get("transaction.max.timeout.ms"):
        return Response(error_code=ErrorCode.INVALID_TRANSACTION_TIMEOUT, producer_id=-1, producer_epoch=-1)
    coordinator = transactions(broker)
    if coordinator is None:
        return Response(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1, producer_epoch=-1)
    expected = (request.producer_id, request.producer_epoch) if ctx.version >= 3 else (-1, -1)
    err, pid, epoch = await coordinator.init_producer_id(
        request.transactional_id, request.transaction_timeout_ms, *expected)
    return Response(throttle_time_ms=0, error_code=fenced_error_for(22, ctx.version, err),
                    producer_id=pid, producer_epoch=epoch)
