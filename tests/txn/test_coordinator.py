"""The transaction coordinator over the wire (raw frames to an in-process broker): the
protocol's error codes, KIP-360 retries, markers and LSO, transactional offsets, the admin
APIs, and replay of ``__transaction_state`` — including finishing a transaction the broker
stopped between PrepareCommit and CompleteCommit."""
from __future__ import annotations

import time

import trio

from kbroker.config.broker import BrokerConfig
from kbroker.server import serve
from kbroker.txn import records as trec
from kbroker.txn.metadata import TxnState
from kbroker.wire import messages, records as rb
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient

A = messages.AddPartitionsToTxnRequest
P = messages.ProduceRequest
F = messages.FetchRequest
T = messages.TxnOffsetCommitRequest


def config(tmp_path, extra=None):
    return BrokerConfig.from_dict({
        "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
        "transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
        **(extra or {})})


def now_ms():
    return time.time_ns() // 1_000_000


async def init(c, tid, version=4, pid=-1, epoch=-1, timeout=60000):
    r = await c.request("InitProducerId", version, transactional_id=tid,
                        transaction_timeout_ms=timeout, producer_id=pid, producer_epoch=epoch)
    return r.error_code, r.producer_id, r.producer_epoch


async def add(c, tid, pid, epoch, topic, parts, version=3):
    r = await c.request("AddPartitionsToTxn", version, v3_and_below_transactional_id=tid,
                        v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                        v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=parts)])
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


async def end(c, tid, pid, epoch, commit):
    r = await c.request("EndTxn", 3, transactional_id=tid, producer_id=pid,
                        producer_epoch=epoch, committed=commit)
    return r.error_code


async def produce(c, topic, part, data):
    r = await c.request("Produce", 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=part, records=data)])])
    pr = r.responses[0].partition_responses[0]
    return pr.error_code, pr.base_offset


async def fetch(c, topic, part, isolation):
    r = await c.request("Fetch", 11, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                        isolation_level=isolation, session_id=0, session_epoch=-1, topics=[
        F.FetchTopic(topic=topic, partitions=[F.FetchPartition(
            partition=part, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1,
            log_start_offset=-1, last_fetched_epoch=-1)])], rack_id="")
    return r.responses[0].partitions[0]


def txn_batch(pid, epoch, seq, *values):
    return rb.build_batch([(None, v, (), now_ms()) for v in values], producer_id=pid,
                          producer_epoch=epoch, base_sequence=seq, is_transactional=True)


async def create(c, topic, parts):
    r = await c.request("CreateTopics", 5, timeout_ms=5000, validate_only=False, topics=[
        messages.CreateTopicsRequest.CreatableTopic(name=topic, num_partitions=parts,
                                                    replication_factor=1, assignments=[],
                                                    configs=[])])
    assert r.topics[0].error_code == 0


async def test_protocol_errors_markers_lso_and_admin(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        await create(c, "t", 2)
        assert (await init(c, ""))[0] == E.INVALID_REQUEST
        assert (await init(c, "tx", timeout=10**9))[0] == E.INVALID_TRANSACTION_TIMEOUT
        err, pid, epoch = await init(c, "tx")
        assert (err, epoch) == (0, 0)
        # KIP-360: a bump names the current epoch; its retry gets the same answer again
        assert await init(c, "tx", pid=pid, epoch=0) == (0, pid, 1)
        assert await init(c, "tx", pid=pid, epoch=0) == (0, pid, 1)
        assert (await init(c, "tx", pid=pid + 99, epoch=0))[0] == E.PRODUCER_FENCED
        epoch = 1
        # transactional data without AddPartitionsToTxn is refused (verification)
        assert (await produce(c, "t", 0, txn_batch(pid, epoch, 0, b"x")))[0] == E.INVALID_TXN_STATE
        assert await add(c, "tx", pid + 1, epoch, "t", [0]) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
        assert await add(c, "tx", pid, epoch - 1, "t", [0]) == {("t", 0): E.PRODUCER_FENCED}
        assert await add(c, "tx", pid, epoch, "nope", [0]) == {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        assert await end(c, "tx", pid, epoch, True) == E.INVALID_TXN_STATE      # Empty
        assert await add(c, "tx", pid, epoch, "t", [0, 1]) == {("t", 0): 0, ("t", 1): 0}
        assert await produce(c, "t", 0, txn_batch(pid, epoch, 0, b"a", b"b")) == (0, 0)
        assert await produce(c, "t", 1, txn_batch(pid, epoch, 0, b"c")) == (0, 0)
        p0 = await fetch(c, "t", 0, 1)
        assert (p0.high_watermark, p0.last_stable_offset) == (2, 0)
        # the admin view of the open transaction
        r = await c.request("ListTransactions", 1, state_filters=["Ongoing", "Bogus"],
                            producer_id_filters=[], duration_filter=-1)
        assert r.unknown_state_filters == ["Bogus"]
        assert [(s.transactional_id, s.producer_id, s.transaction_state)
                for s in r.transaction_states] == [("tx", pid, "Ongoing")]
        r = await c.request("DescribeTransactions", 0, transactional_ids=["tx", "unknown"])
        s0, s1 = r.transaction_states
        assert (s0.error_code, s0.transaction_state, s0.producer_epoch) == (0, "Ongoing", epoch)
        assert [(t.topic, sorted(t.partitions)) for t in s0.topics] == [("t", [0, 1])]
        assert s1.error_code == E.TRANSACTIONAL_ID_NOT_FOUND
        D = messages.DescribeProducersRequest
        r = await c.request("DescribeProducers", 0, topics=[D.TopicRequest(name="t", partition_indexes=[0, 9])])
        ok, missing = r.topics[0].partitions
        [st] = ok.active_producers
        assert (st.producer_id, st.producer_epoch, st.last_sequence, st.current_txn_start_offset) == \
            (pid, epoch, 1, 0)
        assert missing.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        # abort: markers on both partitions, aborted list for read_committed
        assert await end(c, "tx", pid, epoch, False) == 0
        assert await end(c, "tx", pid, epoch, False) == 0          # a retry answers NONE
        assert await end(c, "tx", pid, epoch, True) == E.INVALID_TXN_STATE
        p0 = await fetch(c, "t", 0, 1)
        assert (p0.high_watermark, p0.last_stable_offset) == (3, 3)
        assert [(a.producer_id, a.first_offset) for a in p0.aborted_transactions] == [(pid, 0)]
        assert (await fetch(c, "t", 0, 0)).aborted_transactions is None
        # a late write of the aborted transaction is refused
        assert (await produce(c, "t", 0, txn_batch(pid, epoch, 2, b"late")))[0] == E.INVALID_TXN_STATE
        await c.aclose()
        server.request_shutdown()


async def test_txn_offsets_replay_and_prepare_recovery(tmp_path):
    cfg = config(tmp_path)
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        broker = server.broker
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        _, pid, epoch = await init(c, "tx")
        r = await c.request("FindCoordinator", 3, key="g", key_type=0)
        assert r.error_code == 0
        r = await c.request("AddOffsetsToTxn", 3, transactional_id="tx", producer_id=pid,
                            producer_epoch=epoch, group_id="g")
        assert r.error_code == 0
        r = await c.request("TxnOffsetCommit", 3, transactional_id="tx", group_id="g",
                            producer_id=pid, producer_epoch=epoch, generation_id_or_member_epoch=-1, member_id="",
                            group_instance_id=None, topics=[T.TxnOffsetCommitRequestTopic(
                                name="t", partitions=[T.TxnOffsetCommitRequestPartition(
                                    partition_index=0, committed_offset=42,
                                    committed_leader_epoch=-1, committed_metadata="m")])])
        assert r.topics[0].partitions[0].error_code == 0
        O = messages.OffsetFetchRequest
        fetch_req = dict(group_id="g", topics=[O.OffsetFetchRequestTopic(name="t", partition_indexes=[0])],
                         require_stable=True)
        r = await c.request("OffsetFetch", 7, **fetch_req)
        assert r.topics[0].partitions[0].error_code == E.UNSTABLE_OFFSET_COMMIT
        assert await add(c, "tx", pid, epoch, "t", [0]) == {("t", 0): 0}
        assert (await produce(c, "t", 0, txn_batch(pid, epoch, 0, b"v")))[0] == 0
        # Simulate a crash after PrepareCommit: write the Prepare record ourselves and
        # stop without markers; the next start must finish the commit.
        coord = broker.transactions
        meta = coord.txns["tx"]
        prepare = meta.copy(state=TxnState.PREPARE_COMMIT)
        assert await coord._write(prepare) == 0
        await c.aclose()
        server.request_shutdown()
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        broker = server.broker
        meta = broker.transactions.txns["tx"]
        assert meta.state == TxnState.COMPLETE_COMMIT and meta.producer_id == pid
        c = await RawClient.connect(server)
        p0 = await fetch(c, "t", 0, 1)
        assert p0.last_stable_offset == p0.high_watermark == 2      # data + commit marker
        r = await c.request("OffsetFetch", 7, **fetch_req)
        assert (r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].committed_offset) == (0, 42)
        # epochs survive the restart: the next InitProducerId bumps
        assert await init(c, "tx") == (0, pid, epoch + 1)
        await c.aclose()
        server.request_shutdown()


async def test_timeout_aborts_and_fences(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        _, pid, epoch = await init(c, "slow", timeout=200)
        assert await add(c, "slow", pid, epoch, "t", [0]) == {("t", 0): 0}
        assert (await produce(c, "t", 0, txn_batch(pid, epoch, 0, b"v")))[0] == 0
        with trio.fail_after(10):
            while (await fetch(c, "t", 0, 1)).last_stable_offset == 0:
                await trio.sleep(0.05)
        meta = server.broker.transactions.txns["slow"]
        assert meta.state == TxnState.COMPLETE_ABORT and meta.producer_epoch == epoch + 1
        assert await end(c, "slow", pid, epoch, True) == E.PRODUCER_FENCED
        assert (await produce(c, "t", 0, txn_batch(pid, epoch, 1, b"w")))[0] == E.INVALID_PRODUCER_EPOCH
        await c.aclose()
        server.request_shutdown()



async def test_a_request_that_waited_for_the_coordinator_checks_it_again(tmp_path):
    """Requests queue for the coordinator while another's ``__transaction_state`` write is
    in flight. When the id's partition is unloaded meanwhile (leadership moved away, or a
    new leader epoch), each answers as Kafka's coordinator would when it handles it --
    here COORDINATOR_LOAD_IN_PROGRESS, since this node still leads the partition and
    reloads it -- not from the state it forgot: no INVALID_PRODUCER_ID_MAPPING (which
    librdkafka takes as a reason to abort and bump its epoch) and no InitProducerId that
    writes a new producer id over the id's. Reloaded, the same transaction commits."""
    # no timeout pass: only the three requests below wait for the coordinator
    cfg = config(tmp_path, {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "3600000"})
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        _, pid, epoch = await init(c, "tx")
        assert await add(c, "tx", pid, epoch, "t", [0]) == {("t", 0): 0}
        assert (await produce(c, "t", 0, txn_batch(pid, epoch, 0, b"v")))[0] == 0
        coord = server.broker.transactions
        got = {}

        async def call(name, fn):
            got[name] = await fn()

        with trio.fail_after(30):
            async with coord._lock:        # as another request's write in flight holds it
                n.start_soon(call, "end", lambda: coord.end_txn("tx", pid, epoch, True))
                n.start_soon(call, "add", lambda: coord.add_partitions("tx", pid, epoch, [("t", 0)]))
                n.start_soon(call, "init", lambda: coord.init_producer_id("tx", 60000, pid, epoch))
                while coord._lock.statistics().tasks_waiting < 3:
                    await trio.sleep(0.01)
                coord._unload(coord.partition_for("tx"))   # what such an image does
            while len(got) < 3:
                await trio.sleep(0.01)
        load = E.COORDINATOR_LOAD_IN_PROGRESS
        assert got == {"end": (load, -1, -1), "add": load, "init": (load, -1, -1)}
        # the next request reloads the partition: the producer and its transaction are intact
        assert await end(c, "tx", pid, epoch, True) == 0
        meta = coord.txns["tx"]
        assert (meta.producer_id, meta.producer_epoch, meta.state) == \
            (pid, epoch, TxnState.COMPLETE_COMMIT)
        p0 = await fetch(c, "t", 0, 1)
        assert p0.last_stable_offset == p0.high_watermark == 2      # data + commit marker
        await c.aclose()
        server.request_shutdown()


def test_transaction_log_records_round_trip():
    v = trec.TxnLogValue(7, 3, 60000, int(TxnState.ONGOING), (("a", 0), ("a", 2), ("b", 1)), 10, 5)
    assert trec.decode_value(trec.encode_value(v)) == v
    assert trec.decode_key(trec.encode_key("tx-1")) == "tx-1"
    assert trec.decode_value(None) is None
    empty = v._replace(status=int(TxnState.EMPTY), partitions=())
    assert trec.decode_value(trec.encode_value(empty)) == empty
    assert 0 <= trec.partition_for("tx-1", 50) < 50
