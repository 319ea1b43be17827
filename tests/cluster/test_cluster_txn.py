"""Transactions across a real three-process cluster (three combined nodes on loopback).

A transaction's partitions are led by all three brokers and its coordinator (the leader of
the id's ``__transaction_state`` partition) is one of them, so the markers of the other
partitions travel as WriteTxnMarkers from the coordinator to their leaders, and the offsets
of ``send_offsets_to_transaction`` go to the group coordinator, another broker again. The
tests, in order on one cluster:

1. commit: a read_committed consumer sees every record on every node and the group's
   offsets; abort: it sees none of them (read_uncommitted does); requests for the id on a
   broker that does not coordinate it answer NOT_COORDINATOR;
2. a partition leader is SIGKILLed before the commit: EndTxn is answered once PrepareCommit
   is stored, the transaction waits in PrepareCommit while the marker cannot be delivered;
   the coordinator is SIGKILLed too and restarted (it reloads the id in PrepareCommit), then
   the leader comes back and the transaction completes with all its records visible.
3. (another cluster, ``__transaction_state`` and the data with replication factor 3) the
   coordinator is SIGKILLed while the transaction is open: the new leader of the id's
   partition loads it and the producer commits through it.
4. verification across brokers (KIP-890 part 1): a leader that is not the coordinator asks
   it with AddPartitionsToTxn v4 ``verify_only`` before a producer's first transactional
   batch; a partition not added to the transaction is TRANSACTION_ABORTABLE for the
   coordinator and refused with INVALID_TXN_STATE at Produce v9 (v11+: the code itself),
   before and after the transaction, and an added one is accepted.
5. transaction version 2 across brokers (KIP-890 part 2): Produce v12 on leaders that are
   not the coordinator adds their partitions (AddPartitionsToTxn v5 from the leader),
   TxnOffsetCommit v5 adds the group's offsets partition from the group coordinator,
   EndTxn v5 answers the bumped epoch and the markers (WriteTxnMarkers v2) carry it to
   every leader; read_committed then sees the records and the group its offset.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kbroker.wire import messages as w
from kbroker.wire import records as rb
from kbroker.wire.error_codes import ErrorCode as E

from tests.clients_txn.helpers import read_all

from .support import Cluster, call, metadata, wait_for

EXTRA = {
    "transaction.state.log.num.partitions": "6",
    "offsets.topic.num.partitions": "6",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}
GROUP, TRANSACTION = 0, 1


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("txn-cluster"), extra=EXTRA)
    c.start_all()
    try:
        yield c
    finally:
        for n in c.nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                n.kill()


# ---------------------------------------------------------------------------- raw helpers

def find_coordinator(port: int, key: str, key_type: int) -> int:
    """The coordinator's node id (-1 while there is none)."""
    r = call(port, 10, 3, w.FindCoordinatorRequest(key=key, key_type=key_type))
    return r.node_id if r.error_code == E.NONE else -1


def coordinator(cluster, key: str, key_type: int) -> int:
    """The coordinator every live node names (created on first lookup)."""
    def same():
        ids = {find_coordinator(n.port, key, key_type) for n in cluster.alive()}
        return ids.pop() if len(ids) == 1 and -1 not in ids else None
    return wait_for(same, timeout=60, what=f"one coordinator for {key!r}")


def leaders(port: int, topic: str) -> dict[int, int]:
    for t in metadata(port).topics:
        if t.name == topic:
            return {p.partition_index: p.leader_id for p in t.partitions}
    return {}


def create_topic(cluster, name: str, partitions: int) -> dict[int, int]:
    C = w.CreateTopicsRequest
    port = cluster.alive()[0].port
    r = call(port, 19, 5, C(timeout_ms=10000, validate_only=False, topics=[
        C.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                         assignments=[], configs=[])]), timeout=20)
    assert r.topics[0].error_code in (E.NONE, E.TOPIC_ALREADY_EXISTS), r
    def led_everywhere():
        views = [leaders(n.port, name) for n in cluster.alive()]
        ok = all(v == views[0] and len(v) == partitions and -1 not in v.values() for v in views)
        return views[0] if ok else None
    return wait_for(led_everywhere, what=f"{name} led on every node")


def describe_txn(port: int, tid: str):
    r = call(port, 65, 0, w.DescribeTransactionsRequest(transactional_ids=[tid]))
    s = r.transaction_states[0]
    return s.error_code, s.transaction_state


def wait_state(port: int, tid: str, state: str, timeout: float = 60.0) -> None:
    wait_for(lambda: describe_txn(port, tid) == (E.NONE, state), timeout=timeout,
             what=f"{tid} in {state}")


def pick_tid(cluster, prefix: str, avoid: set[int]) -> tuple[str, int]:
    """A transactional id whose coordinator is not one of ``avoid``."""
    for i in range(200):
        tid = f"{prefix}-{i}"
        node = coordinator(cluster, tid, TRANSACTION)
        if node not in avoid:
            return tid, node
    raise AssertionError(f"no transactional id coordinated outside {avoid}")


def txn_producer(bootstrap: str, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5,
                  "transaction.timeout.ms": 120000})
    p.init_transactions(60)
    return p


def read(bootstrap: str, topic: str, partitions, *, isolation: str, expect: int,
         timeout: float = 60.0) -> list[bytes]:
    return read_all(bootstrap, topic, partitions, isolation=isolation, expect=expect,
                    timeout=timeout)


def committed(bootstrap: str, group: str, tp: TopicPartition) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([tp], timeout=20)[0].offset
    finally:
        c.close()


# ---------------------------------------------------------------------------- tests

def test_commit_and_abort_across_three_brokers(txn_cluster):
    cluster = txn_cluster
    topic_leaders = create_topic(cluster, "spread", 3)
    assert set(topic_leaders.values()) == {1, 2, 3}, "partitions led by every broker"
    group = "spread-group"
    group_node = coordinator(cluster, group, GROUP)
    tid, txn_node = pick_tid(cluster, "spread-tx", avoid={group_node})
    assert txn_node != group_node
    remote = {p for p, leader in topic_leaders.items() if leader != txn_node}
    assert len(remote) == 2, "two of the partitions are led by other brokers than the coordinator"
    # only the coordinator answers for the id
    for n in cluster.alive():
        err, _ = describe_txn(n.port, tid)
        assert err == (E.TRANSACTIONAL_ID_NOT_FOUND if n.node_id == txn_node else E.NOT_COORDINATOR)
        if n.node_id != txn_node:
            r = call(n.port, 22, 4, w.InitProducerIdRequest(
                transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
            assert r.error_code == E.NOT_COORDINATOR

    boot = cluster.bootstrap()
    p = txn_producer(boot, tid)
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False})
    try:
        p.begin_transaction()
        for i in range(30):
            p.produce("spread", b"c-%d" % i, partition=i % 3)
        p.send_offsets_to_transaction([TopicPartition("spread", 0, 11)], c.consumer_group_metadata(), 30)
        p.commit_transaction(60)
        wait_state(cluster.nodes[txn_node].port, tid, "CompleteCommit")
        got = read(boot, "spread", range(3), isolation="read_committed", expect=30)
        assert sorted(got) == sorted(b"c-%d" % i for i in range(30))
        assert committed(boot, group, TopicPartition("spread", 0)) == 11

        p.begin_transaction()
        for i in range(15):
            p.produce("spread", b"a-%d" % i, partition=i % 3)
        p.send_offsets_to_transaction([TopicPartition("spread", 0, 22)], c.consumer_group_metadata(), 30)
        p.flush(30)
        p.abort_transaction(60)
        wait_state(cluster.nodes[txn_node].port, tid, "CompleteAbort")
        p.begin_transaction()
        for i in range(3):
            p.produce("spread", b"c2-%d" % i, partition=i)
        p.commit_transaction(60)
    finally:
        c.close()
    wait_state(cluster.nodes[txn_node].port, tid, "CompleteCommit")
    got = read(boot, "spread", range(3), isolation="read_committed", expect=33)
    assert sorted(got) == sorted([b"c-%d" % i for i in range(30)] + [b"c2-%d" % i for i in range(3)])
    everything = read(boot, "spread", range(3), isolation="read_uncommitted", expect=48)
    assert sorted(everything) == sorted([b"c-%d" % i for i in range(30)] + [b"a-%d" % i for i in range(15)]
                                        + [b"c2-%d" % i for i in range(3)])
    assert committed(boot, group, TopicPartition("spread", 0)) == 11, "aborted offsets dropped"


def test_markers_wait_for_a_dead_leader_and_a_restarted_coordinator_finishes(txn_cluster):
    cluster = txn_cluster
    topic_leaders = create_topic(cluster, "survive", 3)
    assert set(topic_leaders.values()) == {1, 2, 3}
    tid, txn_node = pick_tid(cluster, "survive-tx", avoid=set())
    dead_leader = next(leader for leader in topic_leaders.values() if leader != txn_node)
    dead_part = next(p for p, leader in topic_leaders.items() if leader == dead_leader)
    others = [p for p in topic_leaders if p != dead_part]
    boot = cluster.bootstrap()
    p = txn_producer(boot, tid)
    p.begin_transaction()
    for i in range(12):
        p.produce("survive", b"k-%d" % i, partition=i % 3)
    p.flush(30)
    cluster.nodes[dead_leader].kill()
    # EndTxn is answered once PrepareCommit is stored; the dead leader's marker waits
    p.commit_transaction(60)
    coord_port = cluster.nodes[txn_node].port
    assert describe_txn(coord_port, tid) == (E.NONE, "PrepareCommit")
    # the live leaders got their markers: their records are committed already
    live_boot = cluster.bootstrap()
    got = read(live_boot, "survive", others, isolation="read_committed", expect=8)
    assert sorted(got) == sorted(b"k-%d" % i for i in range(12) if i % 3 != dead_part)
    time.sleep(1.0)     # retries against a dead leader do not complete the transaction
    assert describe_txn(coord_port, tid) == (E.NONE, "PrepareCommit")
    p.flush(5)
    del p

    # the coordinator crashes too; back, it reloads the id in PrepareCommit and resumes
    cluster.nodes[txn_node].kill()
    cluster.nodes[txn_node].start()
    wait_for(lambda: describe_txn(coord_port, tid) == (E.NONE, "PrepareCommit"), timeout=60,
             what="the restarted coordinator with the transaction in PrepareCommit")
    cluster.nodes[dead_leader].start()
    wait_state(coord_port, tid, "CompleteCommit", timeout=90)
    boot = cluster.bootstrap()
    got = read(boot, "survive", range(3), isolation="read_committed", expect=12)
    assert sorted(got) == sorted(b"k-%d" % i for i in range(12))
    # the id goes on: a new producer instance commits another transaction across the nodes
    p2 = txn_producer(boot, tid)
    p2.begin_transaction()
    for i in range(3):
        p2.produce("survive", b"n-%d" % i, partition=i)
    p2.commit_transaction(60)
    wait_state(coord_port, tid, "CompleteCommit")
    got = read(boot, "survive", range(3), isolation="read_committed", expect=15)
    assert sorted(got) == sorted([b"k-%d" % i for i in range(12)] + [b"n-%d" % i for i in range(3)])


# ---------------------------------------------------------------------------- replicated

@pytest.fixture(scope="module")
def replicated_cluster(tmp_path_factory):
    extra = dict(EXTRA, **{"transaction.state.log.replication.factor": "3",
                           "offsets.topic.replication.factor": "3"})
    c = Cluster(tmp_path_factory.mktemp("txn-cluster-rf3"), extra=extra)
    c.start_all()
    try:
        yield c
    finally:
        for n in c.nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                n.kill()


def create_replicated_topic(cluster, name: str, partitions: int) -> dict[int, int]:
    C = w.CreateTopicsRequest
    r = call(cluster.alive()[0].port, 19, 5, C(timeout_ms=10000, validate_only=False, topics=[
        C.CreatableTopic(name=name, num_partitions=partitions, replication_factor=3,
                         assignments=[], configs=[])]), timeout=20)
    assert r.topics[0].error_code in (E.NONE, E.TOPIC_ALREADY_EXISTS), r
    def led_everywhere():
        views = [leaders(n.port, name) for n in cluster.alive()]
        ok = all(v == views[0] and len(v) == partitions and -1 not in v.values() for v in views)
        return views[0] if ok else None
    return wait_for(led_everywhere, what=f"{name} led on every node")


def test_coordinator_killed_mid_transaction_moves_and_commits(replicated_cluster):
    """``__transaction_state`` and the data replicated on all three: SIGKILL the coordinator
    while the transaction is open; its partition's new leader loads the id (Ongoing, with
    the partitions) and the producer commits through it."""
    cluster = replicated_cluster
    topic_leaders = create_replicated_topic(cluster, "moving", 3)
    assert set(topic_leaders.values()) == {1, 2, 3}
    tid, old = pick_tid(cluster, "moving-tx", avoid=set())
    boot = cluster.bootstrap()
    p = txn_producer(boot, tid)
    p.begin_transaction()
    for i in range(12):
        p.produce("moving", b"m-%d" % i, partition=i % 3)
    p.flush(30)
    cluster.nodes[old].kill()
    new = wait_for(lambda: (lambda n: n if n not in (-1, old) else None)(
        find_coordinator(cluster.alive()[0].port, tid, TRANSACTION)), timeout=60,
        what="the transactional id's coordinator moved")
    assert new != old
    wait_for(lambda: describe_txn(cluster.nodes[new].port, tid) == (E.NONE, "Ongoing"),
             timeout=60, what="the new coordinator loaded the open transaction")
    p.commit_transaction(90)
    wait_state(cluster.nodes[new].port, tid, "CompleteCommit", timeout=90)
    got = read(cluster.bootstrap(), "moving", range(3), isolation="read_committed", expect=12)
    assert sorted(got) == sorted(b"m-%d" % i for i in range(12))


# ---------------------------------------------------------------------------- verification

def txn_batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    return rb.build_batch([(None, v, (), int(time.time() * 1000)) for v in values],
                          producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                          is_transactional=True)


def produce_raw(port: int, tid, topic: str, partition: int, data: bytes, version: int = 9) -> int:
    """The partition's answer; retried while it is NOT_ENOUGH_REPLICAS, the retriable error
    a leader answers while it cannot reach the coordinator (as a producer retries)."""
    P = w.ProduceRequest
    deadline = time.monotonic() + 30
    while True:
        r = call(port, 0, version, P(transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
            P.TopicProduceData(name=topic, partition_data=[
                P.PartitionProduceData(index=partition, records=data)])]), timeout=20)
        pr = r.responses[0].partition_responses[0]
        if pr.error_code != E.NOT_ENOUGH_REPLICAS or time.monotonic() > deadline:
            return pr.error_code
        time.sleep(0.2)


def add_partitions(port: int, tid: str, pid: int, epoch: int, topic: str, parts: list[int]) -> dict:
    A = w.AddPartitionsToTxnRequest
    r = call(port, 24, 3, A(v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                            v3_and_below_producer_epoch=epoch,
                            v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=parts)]))
    return {p.partition_index: p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def verify_only(port: int, tid: str, pid: int, epoch: int, topic: str, parts: list[int]) -> dict:
    A = w.AddPartitionsToTxnRequest
    r = call(port, 24, 4, A(transactions=[A.AddPartitionsToTxnTransaction(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, verify_only=True,
        topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=parts)])]))
    assert r.error_code == E.NONE
    [txn] = r.results_by_transaction
    return {p.partition_index: p.partition_error_code
            for t in txn.topic_results for p in t.results_by_partition}


def test_leaders_verify_with_a_remote_coordinator(txn_cluster):
    cluster = txn_cluster
    topic_leaders = create_topic(cluster, "verified", 3)
    assert set(topic_leaders.values()) == {1, 2, 3}
    tid, txn_node = pick_tid(cluster, "verify-tx", avoid=set())
    coord_port = cluster.nodes[txn_node].port
    remote = sorted(p for p, leader in topic_leaders.items() if leader != txn_node)
    assert len(remote) == 2
    added, stray = remote
    added_port = cluster.nodes[topic_leaders[added]].port
    stray_port = cluster.nodes[topic_leaders[stray]].port

    r = call(coord_port, 22, 4, w.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
    assert r.error_code == E.NONE
    pid, epoch = r.producer_id, r.producer_epoch

    # no transaction yet (Empty): a raw transactional batch on a remote leader is refused
    assert produce_raw(stray_port, tid, "verified", stray, txn_batch(pid, epoch, 0, b"x")) \
        == E.INVALID_TXN_STATE
    assert add_partitions(coord_port, tid, pid, epoch, "verified", [added]) == {added: E.NONE}
    # the coordinator's side of the question, as a leader asks it
    assert verify_only(coord_port, tid, pid, epoch, "verified", [added, stray]) == \
        {added: E.NONE, stray: E.TRANSACTION_ABORTABLE}
    assert verify_only(coord_port, tid, pid, epoch + 1, "verified", [added]) == \
        {added: E.PRODUCER_FENCED}
    other = next(n for n in cluster.alive() if n.node_id != txn_node)
    assert verify_only(other.port, tid, pid, epoch, "verified", [added]) == {added: E.NOT_COORDINATOR}

    # the partition added to the transaction is accepted by its (remote) leader ...
    assert produce_raw(added_port, tid, "verified", added, txn_batch(pid, epoch, 0, b"in")) == E.NONE
    assert produce_raw(added_port, tid, "verified", added, txn_batch(pid, epoch, 1, b"in2")) == E.NONE
    # ... one that was not is refused, and nothing was written there
    assert produce_raw(stray_port, tid, "verified", stray, txn_batch(pid, epoch, 0, b"stray")) \
        == E.INVALID_TXN_STATE
    assert produce_raw(stray_port, tid, "verified", stray, txn_batch(pid, epoch, 0, b"stray"),
                       version=11) == E.TRANSACTION_ABORTABLE
    # a newer epoch than the coordinator's: the coordinator answers PRODUCER_FENCED, which
    # reaches the producer as INVALID_PRODUCER_EPOCH (Kafka's translation)
    assert produce_raw(stray_port, tid, "verified", stray, txn_batch(pid, epoch + 1, 0, b"new")) \
        == E.INVALID_PRODUCER_EPOCH
    r = call(coord_port, 26, 3, w.EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                producer_epoch=epoch, committed=True))
    assert r.error_code == E.NONE
    wait_state(coord_port, tid, "CompleteCommit")
    # CompleteCommit: every marker is written, the transaction is over on that partition
    # too; a late batch would open a hanging transaction, so it is refused
    assert produce_raw(added_port, tid, "verified", added, txn_batch(pid, epoch, 2, b"late")) \
        == E.INVALID_TXN_STATE
    boot = cluster.bootstrap()
    got = read(boot, "verified", range(3), isolation="read_committed", expect=2)
    assert sorted(got) == [b"in", b"in2"]
    everything = read(boot, "verified", range(3), isolation="read_uncommitted", expect=2)
    assert sorted(everything) == [b"in", b"in2"], "neither stray nor late data was stored"

    # the normal client flow across the nodes still commits with verification on
    p = txn_producer(boot, tid)
    p.begin_transaction()
    for i in range(9):
        p.produce("verified", b"v-%d" % i, partition=i % 3)
    p.commit_transaction(60)
    wait_state(coord_port, tid, "CompleteCommit")
    got = read(boot, "verified", range(3), isolation="read_committed", expect=11)
    assert sorted(got) == sorted([b"in", b"in2"] + [b"v-%d" % i for i in range(9)])


def test_transaction_version_2_across_brokers(txn_cluster):
    cluster = txn_cluster
    topic_leaders = create_topic(cluster, "tv2", 3)
    tid, txn_node = pick_tid(cluster, "tv2-tx", avoid=set())
    group = "tv2-group"
    group_node = coordinator(cluster, group, GROUP)
    coord_port = cluster.nodes[txn_node].port
    r = call(coord_port, 22, 5, w.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
    assert r.error_code == E.NONE
    pid, epoch = r.producer_id, r.producer_epoch
    for p, leader in sorted(topic_leaders.items()):      # no AddPartitionsToTxn
        assert produce_raw(cluster.nodes[leader].port, tid, "tv2", p,
                           txn_batch(pid, epoch, 0, b"tv2-%d" % p), version=12) == E.NONE
    T = w.TxnOffsetCommitRequest
    r = call(cluster.nodes[group_node].port, 28, 5, T(
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch,
        generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[T.TxnOffsetCommitRequestTopic(name="tv2", partitions=[
            T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=7,
                                              committed_leader_epoch=-1, committed_metadata="")])]))
    assert r.topics[0].partitions[0].error_code == E.NONE
    s = call(coord_port, 65, 0, w.DescribeTransactionsRequest(transactional_ids=[tid])).transaction_states[0]
    assert {(t.topic, p) for t in s.topics for p in t.partitions} >= {("tv2", 0), ("tv2", 1), ("tv2", 2)}
    assert "__consumer_offsets" in {t.topic for t in s.topics}
    r = call(coord_port, 26, 5, w.EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                producer_epoch=epoch, committed=True))
    assert (r.error_code, r.producer_id, r.producer_epoch) == (E.NONE, pid, epoch + 1)
    wait_state(coord_port, tid, "CompleteCommit")
    boot = cluster.bootstrap()
    got = read(boot, "tv2", range(3), isolation="read_committed", expect=3)
    assert sorted(got) == [b"tv2-0", b"tv2-1", b"tv2-2"]
    assert committed(boot, group, TopicPartition("tv2", 0)) == 7
    # the markers carried the new epoch: a batch of the old one is fenced on every leader
    for p, leader in sorted(topic_leaders.items()):
        assert produce_raw(cluster.nodes[leader].port, tid, "tv2", p,
                           txn_batch(pid, epoch, 1, b"late"), version=12) == E.INVALID_PRODUCER_EPOCH
