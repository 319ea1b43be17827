"""AddPartitionsToTxn (key 24), v0–v5: add partitions to a producer's transaction (KIP-98).

- v0–v3 come from transactional clients: one transaction, per-partition errors. As in
  Kafka, a partition the metadata does not know is UNKNOWN_TOPIC_OR_PARTITION and then
  every other one OPERATION_NOT_ATTEMPTED; otherwise every partition gets the
  coordinator's answer (``kbroker.txn.coordinator``).
- v4+ (KIP-890 part 1) are broker-to-broker and batched: several transactions, and
  ``verify_only`` asks whether partitions are already in the ongoing transaction
  (INVALID_TXN_STATE when not; PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING,
  CONCURRENT_TRANSACTIONS in Prepare*) without adding them -- what a partition leader asks
  before a producer's first transactional batch (:mod:`kbroker.txn.verification`).
- v5 (KIP-890 part 2) with ``verify_only`` false is a partition leader (or group
  coordinator) adding a transaction version 2 producer's partition on its behalf: the
  partitions are added as for a client and the transaction is marked as a TV2 one.
Not implemented: authorization (cluster action for v4+).

ACLs (``kbroker.authz``): v0–v3 (clients) need WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED, the
others OPERATION_NOT_ATTEMPTED); v4+ (brokers) CLUSTER_ACTION on the cluster.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import CLUSTER_ACTION, TRANSACTIONAL_ID, WRITE
from kbroker.api._txn_errors import fenced_error_for
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.AddPartitionsToTxnResponse


def _topic_results(errors: dict[tuple[str, int], int], topics) -> list:
    out = []
    for t in topics:
        out.append(Resp.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
            Resp.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=errors[(t.name, p)])
            for p in t.partitions]))
    return out


def _unknown(broker, partitions) -> set:
    topics = broker.metadata.topics
    return {(t, p) for t, p in partitions if t not in topics or p not in topics[t].partitions}


def _refused(ctx, tid, topics) -> dict | None:
    """Kafka's checks: WRITE on the transactional id, then on every topic."""
    partitions = [(t.name, p) for t in topics for p in t.partitions]
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, tid):
        return {tp: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in partitions}
    denied = denied_topics(ctx, WRITE, (t.name for t in topics))
    if denied:
        return {tp: (E.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied else E.OPERATION_NOT_ATTEMPTED)
                for tp in partitions}
    return None


async def _add(broker, tid, pid, epoch, topics, verify_only=False, client_tv=None) -> dict:
    partitions = [(t.name, p) for t in topics for p in t.partitions]
    coordinator = transactions(broker)
    if coordinator is None:
        return {tp: E.COORDINATOR_NOT_AVAILABLE for tp in partitions}
    if verify_only:
        return coordinator.verify_partitions(tid, pid, epoch, partitions)
    unknown = _unknown(broker, partitions)
    if unknown:
        return {tp: (E.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else E.OPERATION_NOT_ATTEMPTED)
                for tp in partitions}
    err = await coordinator.add_partitions(tid, pid, epoch, partitions, client_tv=client_tv)
    return {tp: err for tp in partitions}


@api(24, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Resp:
    broker = ctx.broker
    if ctx.version <= 3:
        errors = _refused(ctx, request.v3_and_below_transactional_id, request.v3_and_below_topics) or \
            await _add(broker, request.v3_and_below_transactional_id,
                       request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
                       request.v3_and_below_topics)
        errors = {tp: fenced_error_for(24, ctx.version, e) for tp, e in errors.items()}
        return Resp(throttle_time_ms=0,
                    results_by_topic_v3_and_below=_topic_results(errors, request.v3_and_below_topics))
    if not ctx.authorize_cluster(CLUSTER_ACTION):      # v4+: brokers verifying (KIP-890)
        return Resp(throttle_time_ms=0, error_code=E.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=[])
    results = []
    for txn in request.transactions:
        errors = await _add(broker, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                            txn.topics, verify_only=txn.verify_only,
                            client_tv=2 if ctx.version >= 5 else None)
        results.append(Resp.AddPartitionsToTxnResult(transactional_id=txn.transactional_id,
                                                     topic_results=_topic_results(errors, txn.topics)))
    return Resp(throttle_time_ms=0, error_code=E.NONE, results_by_transaction=results)
