"""Transactional requests of two ids on a real three-process cluster: the coordinator
excludes per id (Kafka's ``pendingState``), not one coordinator-wide lock across the
replication of each ``__transaction_state`` write.

``__transaction_state`` has one partition on all three nodes (both ids are on it) and one
follower is stopped (SIGSTOP; the session and lag limits are long, so nobody fences it or
shrinks the ISR while the test looks), so every append there waits for it. A's EndTxn
(PrepareCommit) is appended and waits; meanwhile a request of B that needs no write is
answered at once, A's own requests answer CONCURRENT_TRANSACTIONS, and B's EndTxn is
appended too -- it was queued behind A's replication under the old lock -- so both wait in
the same replication round. Once the follower runs again both EndTxn answer NONE, both
transactions complete, and read_committed consumers see exactly their records.
"""
from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor

from kbroker.wire import messages as w
from kbroker.wire.error_codes import ErrorCode as E

from .support import Cluster, call, list_offsets, replica_log_end, wait_for, wait_for_isr
from .test_cluster_txn import (TRANSACTION, add_partitions, coordinator, create_topic, describe_txn,
                               produce_raw, read, txn_batch, wait_state)
from .test_txn_expiry import init

STATE = "__transaction_state"
EXTRA = {
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    # no timeout pass while the test looks (its writes would wait for the follower too)
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "3600000",
    # the stopped follower stays registered and in the ISR while the test looks
    "broker.session.timeout.ms": "120000",
    "replica.lag.time.max.ms": "120000",
}


def end_txn(port: int, tid: str, pid: int, epoch: int, commit: bool = True) -> int:
    r = call(port, 26, 3, w.EndTxnRequest(transactional_id=tid, producer_id=pid,
                                          producer_epoch=epoch, committed=commit), timeout=90)
    return r.error_code


def test_two_ids_commit_in_one_replication_round(tmp_path):
    c = Cluster(tmp_path / "cluster", extra=EXTRA)
    c.start_all()
    pool = ThreadPoolExecutor(2)
    try:
        node = coordinator(c, "a", TRANSACTION)
        assert coordinator(c, "b", TRANSACTION) == node        # one partition: one coordinator
        wait_for_isr(c, STATE)
        follower = next(i for i in c.nodes if i != node)
        # one partition per id led by a node that keeps running (replication factor 1: the
        # data and its markers do not wait for the stopped follower)
        led = create_topic(c, "t", 6)
        live = [p for p, leader in sorted(led.items()) if leader != follower]
        assert len(live) >= 2, led
        port = c.nodes[node].port
        txns = {}
        for tid, part in (("a", live[0]), ("b", live[1])):
            r = init(port, tid)
            assert r.error_code == E.NONE
            pid, epoch = r.producer_id, r.producer_epoch
            assert add_partitions(port, tid, pid, epoch, "t", [part]) == {part: E.NONE}
            values = [f"{tid}-{i}".encode() for i in range(3)]
            assert produce_raw(c.nodes[led[part]].port, tid, "t", part,
                               txn_batch(pid, epoch, 0, *values)) == E.NONE
            txns[tid] = (pid, epoch, part, values)
        (pa, ea, part_a, _), (pb, eb, part_b, _) = txns["a"], txns["b"]
        stored = list_offsets(port, STATE, 0)[1]
        assert replica_log_end(c, node, STATE, 0) == stored

        stopped = c.nodes[follower].proc.pid
        os.kill(stopped, signal.SIGSTOP)
        try:
            end_a = pool.submit(end_txn, port, "a", pa, ea)
            wait_for(lambda: replica_log_end(c, node, STATE, 0) == stored + 1, timeout=60,
                     what="A's PrepareCommit appended and waiting for the stopped follower")
            # B is served while A's write replicates (no write needed: already added)
            assert add_partitions(port, "b", pb, eb, "t", [part_b]) == {part_b: E.NONE}
            # A's transition is pending: Kafka's answer
            assert add_partitions(port, "a", pa, ea, "t", [part_a]) == {part_a: E.CONCURRENT_TRANSACTIONS}
            assert end_txn(port, "a", pa, ea) == E.CONCURRENT_TRANSACTIONS
            assert describe_txn(port, "a") == (E.NONE, "Ongoing")     # not stored yet
            # B's EndTxn is written while A's still waits: both in the same round
            end_b = pool.submit(end_txn, port, "b", pb, eb)
            wait_for(lambda: replica_log_end(c, node, STATE, 0) == stored + 2, timeout=60,
                     what="B's PrepareCommit appended while A's waits")
            assert not end_a.done() and not end_b.done()
            assert list_offsets(port, STATE, 0)[1] == stored
        finally:
            os.kill(stopped, signal.SIGCONT)
        assert end_a.result(timeout=90) == E.NONE
        assert end_b.result(timeout=90) == E.NONE
        wait_state(port, "a", "CompleteCommit")
        wait_state(port, "b", "CompleteCommit")
        expected = sorted(txns["a"][3] + txns["b"][3])
        bootstrap = c.bootstrap()
        got = read(bootstrap, "t", [part_a, part_b], isolation="read_committed", expect=len(expected))
        assert sorted(got) == expected
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        c.shutdown()
