"""Producer-id and transactional-id expiration on both brokers, with hand-built requests.

One broker per target for the module, with short expirations (``producer.id.expiration.ms``
and ``transactional.id.expiration.ms`` 3 s, both checks every 200 ms; Kafka's defaults
are a day, a week, 10 min and 1 h). Every wait is for the answer to change, never a sleep.
What both brokers answer once the time has passed:

- a transactional id in CompleteCommit or Empty is gone: DescribeTransactions says
  TRANSACTIONAL_ID_NOT_FOUND, ListTransactions leaves it out, AddPartitionsToTxn and EndTxn
  with its old producer id get INVALID_PRODUCER_ID_MAPPING, and InitProducerId (even one
  naming the old producer id and epoch, KIP-360) hands out a new producer id at epoch 0;
  an Ongoing id stays, with its producer id;
- DescribeProducers on a partition no longer lists an idle idempotent producer, but still
  lists the producer whose transaction is open there; the forgotten producer may write again
  at the sequence it had reached (an unknown producer's first sequence is accepted, KIP-360)
  and is listed again from that batch on.
"""
from __future__ import annotations

import itertools
import time

import pytest

from compat_tests.differential.common import Connection, _until_ok
from compat_tests.helpers import create_topic, wait_until
from kbroker.wire import messages as M
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire import records as rb

CLIENT = "hand-built"

EXPIRY_BROKER = {
    "producer.id.expiration.ms": "3000",
    "producer.id.expiration.check.interval.ms": "200",
    "transactional.id.expiration.ms": "3000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "200",
}
_ids = itertools.count()


@pytest.fixture(scope="module")
def expiry_broker(target, broker_pool):
    broker = broker_pool.start_new(target, EXPIRY_BROKER)
    yield broker
    broker.stop(timeout=20)


@pytest.fixture
def conn(expiry_broker):
    host, port = expiry_broker.bootstrap_servers.rsplit(":", 1)
    c = Connection((host, int(port)), timeout=30)
    yield c
    c.close()


def _name(what: str) -> str:
    return f"expiry-{what}-{next(_ids)}-{int(time.time() * 1000) % 100000}"


def _init(conn, tid, pid=-1, epoch=-1):
    """InitProducerId v4 (KIP-360's producer id and epoch), retried while the coordinator loads."""
    if tid is not None:
        _until_ok(lambda: conn.request(10, 4, M.FindCoordinatorRequest(
            key_type=1, coordinator_keys=[tid])).coordinators[0])
    r = _until_ok(lambda: conn.request(22, 4, M.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60000, producer_id=pid, producer_epoch=epoch)))
    return r.error_code, r.producer_id, r.producer_epoch


def _add(conn, tid, pid, epoch, topic):
    a = M.AddPartitionsToTxnRequest
    r = conn.request(24, 3, a(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[a.AddPartitionsToTxnTopic(name=topic, partitions=[0])]))
    return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


def _end(conn, tid, pid, epoch, commit):
    return conn.request(26, 3, M.EndTxnRequest(transactional_id=tid, producer_id=pid,
                                               producer_epoch=epoch, committed=commit)).error_code


def _produce(conn, topic, pid, epoch, seq, values, *, tid=None):
    batch = rb.build_batch([(None, v, (), int(time.time() * 1000)) for v in values],
                           producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                           is_transactional=tid is not None)
    P = M.ProduceRequest
    r = conn.request(0, 9, P(transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])]))
    pr = r.responses[0].partition_responses[0]
    return pr.error_code, pr.base_offset


def _describe(conn, *tids) -> dict:
    r = conn.request(65, 0, M.DescribeTransactionsRequest(transactional_ids=list(tids)))
    return {s.transactional_id: (s.error_code, s.transaction_state, s.producer_id)
            for s in r.transaction_states}


def _listed(conn, tids) -> set:
    r = conn.request(66, 0, M.ListTransactionsRequest(state_filters=[], producer_id_filters=[]))
    return {s.transactional_id for s in r.transaction_states} & set(tids)


def _producers(conn, topic) -> dict:
    D = M.DescribeProducersRequest
    r = conn.request(61, 0, D(topics=[D.TopicRequest(name=topic, partition_indexes=[0])]))
    p = r.topics[0].partitions[0]
    assert p.error_code == 0, p
    return {s.producer_id: (s.producer_epoch, s.last_sequence, s.current_txn_start_offset)
            for s in p.active_producers}


def test_transactional_ids_expire_unless_a_transaction_is_open(expiry_broker, conn):
    topic = _name("txn")
    create_topic(expiry_broker.bootstrap_servers, topic)
    open_id, done_id, empty_id = _name("open"), _name("done"), _name("empty")
    # the Ongoing id first: its last update is older than the others'
    err, opid, oepoch = _init(conn, open_id)
    assert err == 0
    assert _add(conn, open_id, opid, oepoch, topic) == 0
    err, pid, epoch = _init(conn, done_id)
    assert err == 0
    assert _add(conn, done_id, pid, epoch, topic) == 0
    assert _produce(conn, topic, pid, epoch, 0, [b"x"], tid=done_id)[0] == 0
    assert _end(conn, done_id, pid, epoch, True) == 0
    err, epid, eepoch = _init(conn, empty_id)
    assert err == 0
    assert _listed(conn, [open_id, done_id, empty_id]) == {open_id, done_id, empty_id}

    def expired():
        d = _describe(conn, done_id, empty_id)
        return all(v[0] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND for v in d.values())
    wait_until(expired, timeout=60, interval=0.2, what="the committed and the empty id expired")
    assert _describe(conn, open_id)[open_id] == (0, "Ongoing", opid)
    assert _listed(conn, [open_id, done_id, empty_id]) == {open_id}
    assert _add(conn, done_id, pid, epoch, topic) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert _end(conn, empty_id, epid, eepoch, False) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    err, new_pid, new_epoch = _init(conn, done_id, pid, epoch)
    assert (err, new_epoch) == (0, 0) and new_pid not in (pid, opid, epid)
    assert _end(conn, open_id, opid, oepoch, False) == 0


def test_idle_producers_leave_describe_producers_open_transactions_stay(expiry_broker, conn):
    topic = _name("producers")
    create_topic(expiry_broker.bootstrap_servers, topic)
    tid = _name("tx")
    err, tpid, tepoch = _init(conn, tid)
    assert err == 0
    assert _add(conn, tid, tpid, tepoch, topic) == 0
    assert _produce(conn, topic, tpid, tepoch, 0, [b"t"], tid=tid) == (0, 0)
    err, pid, _ = _init(conn, None)
    assert err == 0
    assert _produce(conn, topic, pid, 0, 0, [b"a", b"b", b"c"]) == (0, 1)
    assert set(_producers(conn, topic)) == {tpid, pid}
    wait_until(lambda: pid not in _producers(conn, topic), timeout=60, interval=0.2,
               what="the idle idempotent producer left DescribeProducers")
    # the same pass looked at the transactional producer, whose batch is older: kept
    assert _producers(conn, topic) == {tpid: (tepoch, 0, 0)}
    assert _produce(conn, topic, pid, 0, 3, [b"d"]) == (0, 4)
    assert _producers(conn, topic)[pid] == (0, 3, -1)
    assert _end(conn, tid, tpid, tepoch, False) == 0
