"""Transactional-id expiration on a real three-process cluster: the coordinator does not hold
its lock while the expiry tombstones replicate.

``__transaction_state`` has one partition on all three nodes (every id is on it), and one
follower is stopped (SIGSTOP; nobody fences it or shrinks the ISR while the test looks: the
session and lag limits are long). The coordinator's wall clock is then stepped past
``transactional.id.expiration.ms`` (libfaketime, ``tests/support/fake_clock.py``), so the id
``old`` expires: its tombstone is appended and waits for the stopped follower. Meanwhile, as
Kafka's ``TransactionStateManager`` (the ids being removed marked ``prepareDead``, the write
made without the coordinator's lock), the coordinator answers a request of another id at
once, answers CONCURRENT_TRANSACTIONS for ``old`` itself and still describes it; once the
follower runs again the tombstone is replicated and ``old`` is gone.
"""
from __future__ import annotations

import os
import signal

from kbroker.wire import messages as w
from kbroker.wire.error_codes import ErrorCode as E
from tests.support.fake_clock import FakeClock

from .support import Cluster, call, list_offsets, replica_log_end, wait_for, wait_for_isr
from .test_cluster_txn import TRANSACTION, add_partitions, coordinator, create_topic, describe_txn

STATE = "__transaction_state"
EXPIRATION_MS = 600_000
EXTRA = {
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transactional.id.expiration.ms": str(EXPIRATION_MS),
    "transaction.remove.expired.transaction.cleanup.interval.ms": "200",
    # the stopped follower stays registered and in the ISR while the test looks
    "broker.session.timeout.ms": "120000",
    "replica.lag.time.max.ms": "120000",
}


def init(port: int, tid: str, timeout_ms: int = 60_000):
    return call(port, 22, 4, w.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=-1, producer_epoch=-1))


def test_a_request_is_served_while_expiry_tombstones_replicate(tmp_path):
    assert FakeClock.available(), "libfaketime is missing: `make faketime` installs it"
    c = Cluster(tmp_path / "cluster", extra=EXTRA)
    clocks = {i: FakeClock(tmp_path / f"clock-{i}") for i in c.nodes}
    for i, n in c.nodes.items():
        n.env.update(clocks[i].env())
    c.start_all()
    try:
        create_topic(c, "t", 1)
        node = coordinator(c, "live", TRANSACTION)
        assert coordinator(c, "old", TRANSACTION) == node       # one partition: one coordinator
        wait_for_isr(c, STATE)
        port = c.nodes[node].port
        assert init(port, "old").error_code == E.NONE
        # "live" has an open transaction (never expires; its timeout outlasts the clock step)
        r = init(port, "live", timeout_ms=900_000)
        assert r.error_code == E.NONE
        pid, epoch = r.producer_id, r.producer_epoch
        assert add_partitions(port, "live", pid, epoch, "t", [0]) == {0: E.NONE}
        follower = next(i for i in c.nodes if i != node)
        stopped = c.nodes[follower].proc.pid
        os.kill(stopped, signal.SIGSTOP)
        try:
            clocks[node].jump(EXPIRATION_MS / 1000 + 60)
            wait_for(lambda: replica_log_end(c, node, STATE, 0) > list_offsets(port, STATE, 0)[1],
                     timeout=60, what="the tombstone appended and waiting for the stopped follower")
            # served at once, not behind the tombstone's replication (no write is needed:
            # the partition is already in the transaction)
            assert add_partitions(port, "live", pid, epoch, "t", [0]) == {0: E.NONE}
            # the id being removed: Kafka's answer while its tombstone is pending
            assert init(port, "old").error_code == E.CONCURRENT_TRANSACTIONS
            assert describe_txn(port, "old") == (E.NONE, "Empty")
            assert replica_log_end(c, node, STATE, 0) > list_offsets(port, STATE, 0)[1]
        finally:
            os.kill(stopped, signal.SIGCONT)
        wait_for(lambda: describe_txn(port, "old")[0] == E.TRANSACTIONAL_ID_NOT_FOUND, timeout=60,
                 what="old forgotten once its tombstone is replicated")
        assert describe_txn(port, "live") == (E.NONE, "Ongoing")
    finally:
        c.shutdown()
