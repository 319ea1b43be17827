"""Wiring of the transaction coordinator into a broker: made on first use (issue 32, start-up).

A node that leads no partition of ``__transaction_state`` and has had no transactional
request has nothing for the coordinator to do: no transactional id to time out or expire,
no marker to deliver, nothing to load. ``Broker.start`` makes it (and awaits the load of
its partitions, as before) only when the image says this node leads one of them
(:func:`start_transactions`); otherwise the coordinator's modules (state, records, markers,
verification, expiry) are not imported, and it is made by the first of:

- a transactional request: the API handlers (InitProducerId with a transactional id,
  AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, WriteTxnMarkers,
  DescribeTransactions, ListTransactions) and a Produce naming a transactional id (whose
  batches the coordinator's verifier checks first, KIP-890) get it from :func:`transactions`;
- an image that makes this node the leader of a ``__transaction_state`` partition
  (:func:`on_image`, from ``Broker._apply_image``), which then loads it as before;
- a transactional batch reaching the append without a verification (a Produce without a
  transactional id): the replica manager's ``txn_verifier`` hook installed meanwhile makes
  the coordinator and asks its verifier, so such a batch is judged exactly as when the
  coordinator exists (refused unless verification is off or this node knows the producer).

Until then ``broker.transactions`` is None; ``Broker.shutdown`` closes it only if made. The
coordinator's timers (timed-out transactions, transactional-id expiration) start with it:
before, there is no transactional id for them to look at. Pure wiring: no I/O of its own.
"""
from __future__ import annotations

from kbroker.wire.error_codes import ErrorCode

TOPIC = "__transaction_state"      # as kbroker.txn.records names it (imported with the coordinator)


def leads_a_partition(image, node_id: int) -> bool:
    """This node leads a partition of ``__transaction_state`` in ``image``."""
    topic = image.topics.get(TOPIC) if image is not None else None
    return topic is not None and any(pi.leader == node_id for pi in topic.partitions.values())


async def start_transactions(broker, nursery) -> None:
    """``Broker.start``'s step: make the coordinator and load its partitions now if this node
    leads one; else install the append's hook that makes it on first use."""
    if leads_a_partition(broker.metadata, broker.node_id):
        await _make(broker).start(nursery)
    else:
        broker.replicas.txn_verifier = lambda *batch: _verify_unverified(broker, *batch)


def transactions(broker):
    """The broker's ``TransactionCoordinator``, made (and started in the broker's nursery) if
    it has none yet; None before ``Broker.start`` reached its coordinators (as it was then)."""
    coordinator = broker.transactions
    if coordinator is None and broker.started:
        coordinator = _make(broker)
        coordinator.begin(broker._nursery)
    return coordinator


def on_image(broker, image) -> None:
    """Every published image: the coordinator follows it (loads and unloads partitions); one
    not made yet is made when the image makes this node the leader of one of its partitions
    (before ``Broker.start``'s step, that step looks at the image itself)."""
    coordinator = broker.transactions
    if coordinator is None:
        if not broker.started or not leads_a_partition(image, broker.node_id):
            return
        coordinator = transactions(broker)
    coordinator.on_image(image)


def _make(broker):
    from .coordinator import TransactionCoordinator
    broker.transactions = TransactionCoordinator(broker)
    return broker.transactions


def _verify_unverified(broker, producer_id: int, producer_epoch: int, topic: str,
                       partition: int) -> int:
    """The replica manager's ``txn_verifier`` until the coordinator is made: a producer's first
    transactional batch on a partition is judged by the coordinator's verifier, made now
    (which then installs its own hook)."""
    coordinator = transactions(broker)
    if coordinator is None:
        return ErrorCode.INVALID_TXN_STATE       # as with no hook: refused
    return coordinator.verifier.check(producer_id, producer_epoch, topic, partition)
