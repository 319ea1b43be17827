"""Transaction version 2 (KIP-890 part 2) over raw frames to an in-process broker: partitions
added by Produce v12 and TxnOffsetCommit v5 (no AddPartitionsToTxn/AddOffsetsToTxn), EndTxn
v5's epoch per transaction and its retries, ``__transaction_state`` values of version 1
replayed after a restart, and the epoch overflow (a new producer id once the bump reaches
the last epoch). The TV1 path (Produce v11 only verifies) stays as it was."""
from __future__ import annotations

import trio

from kbroker.server import serve
from kbroker.txn import records as trec
from kbroker.txn.metadata import MAX_EPOCH, TxnState
from kbroker.txn.service import transactions
from kbroker.wire import messages, records as rb
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient
from tests.support.waiting import until
from tests.txn.test_coordinator import config, create, fetch, init, txn_batch

P = messages.ProduceRequest
T = messages.TxnOffsetCommitRequest
O = messages.OffsetFetchRequest


async def _loaded(answer):
    """``(code,)`` of an awaited error code once it is not COORDINATOR_LOAD_IN_PROGRESS (a
    one-element tuple: NONE is falsy), else None: a predicate for ``until``."""
    code = await answer
    return None if code == E.COORDINATOR_LOAD_IN_PROGRESS else (code,)


async def produce(c, tid, topic, part, data, version=12):
    r = await c.request("Produce", version, transactional_id=tid, acks=-1, timeout_ms=5000,
                        topic_data=[P.TopicProduceData(name=topic, partition_data=[
                            P.PartitionProduceData(index=part, records=data)])])
    return r.responses[0].partition_responses[0].error_code


async def end(c, tid, pid, epoch, commit):
    r = await c.request("EndTxn", 5, transactional_id=tid, producer_id=pid,
                        producer_epoch=epoch, committed=commit)
    return r.error_code, r.producer_id, r.producer_epoch


async def txn_offset_commit(c, tid, pid, epoch, group, offset):
    r = await c.request("TxnOffsetCommit", 5, transactional_id=tid, group_id=group,
                        producer_id=pid, producer_epoch=epoch, generation_id_or_member_epoch=-1, member_id="",
                        group_instance_id=None, topics=[T.TxnOffsetCommitRequestTopic(
                            name="t", partitions=[T.TxnOffsetCommitRequestPartition(
                                partition_index=0, committed_offset=offset,
                                committed_leader_epoch=-1, committed_metadata="")])])
    return r.topics[0].partitions[0].error_code


def last_value_version(broker, tid) -> tuple[int, trec.TxnLogValue]:
    """The version and value of the id's last ``__transaction_state`` record."""
    coord = broker.transactions
    log = broker.replicas.get_partition(trec.TRANSACTION_STATE_TOPIC, coord.partition_for(tid)).log
    found = None
    for header, data in log.batches():
        for r in rb.decode_records(data, 0, header):
            if trec.decode_key(r.key) == tid:
                found = r.value
    return int.from_bytes(found[:2], "big"), trec.decode_value(found)


async def test_implicit_adds_epoch_per_transaction_and_replay(tmp_path):
    cfg = config(tmp_path)
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        broker = server.broker
        assert broker.metadata.features.get("transaction.version") == 2
        c = await RawClient.connect(server)
        await create(c, "t", 2)
        err, pid, e = await init(c, "tx", version=5)
        assert (err, e) == (0, 0)
        # TV1 (Produce ≤ v11): the partition is only verified, so it is refused (v11 knows
        # TRANSACTION_ABORTABLE, the coordinator's answer; older versions get INVALID_TXN_STATE)
        assert await produce(c, "tx", "t", 1, txn_batch(pid, e, 0, b"no"), version=11) == \
            E.TRANSACTION_ABORTABLE
        assert await produce(c, "tx", "t", 1, txn_batch(pid, e, 0, b"no"), version=10) == \
            E.INVALID_TXN_STATE
        # TV2: Produce v12 and TxnOffsetCommit v5 add their partitions
        assert await produce(c, "tx", "t", 0, txn_batch(pid, e, 0, b"a", b"b")) == 0
        # a batch of the next epoch is the next transaction's: asked for at the coordinator
        # (which does not know that epoch) instead of joining the open one
        assert await produce(c, "tx", "t", 0, txn_batch(pid, e + 1, 0, b"next")) == \
            E.INVALID_PRODUCER_EPOCH
        assert (await c.request("FindCoordinator", 3, key="g", key_type=0)).error_code == 0
        # as a client: retried while the group's partition loads
        (code,) = await until(lambda: _loaded(txn_offset_commit(c, "tx", pid, e, "g", 42)),
                              what="a TxnOffsetCommit past the group's load", interval=0.05)
        assert code == 0
        assert await txn_offset_commit(c, "tx", pid, e + 1, "g", 43) == E.INVALID_PRODUCER_EPOCH
        meta = broker.transactions.txns["tx"]
        offsets_part = ("__consumer_offsets", broker.transactions.offsets_partition("g"))
        assert meta.state == TxnState.ONGOING and meta.client_transaction_version == 2
        assert meta.partitions == {("t", 0), offsets_part}
        # EndTxn v5: commit bumps the epoch; a retry gets the same answer
        assert await end(c, "tx", pid, e, True) == (0, pid, e + 1)
        assert await end(c, "tx", pid, e, True) == (0, pid, e + 1)
        p0 = await fetch(c, "t", 0, 1)
        assert p0.last_stable_offset == p0.high_watermark == 3          # 2 records + marker
        r = await c.request("OffsetFetch", 7, group_id="g", require_stable=True, topics=[
            O.OffsetFetchRequestTopic(name="t", partition_indexes=[0])])
        assert r.topics[0].partitions[0].committed_offset == 42
        version, value = last_value_version(broker, "tx")
        assert (version, value.status, value.producer_epoch, value.client_transaction_version) == \
            (1, int(TxnState.COMPLETE_COMMIT), e + 1, 2)
        # the next transaction at the new epoch, aborted
        assert await produce(c, "tx", "t", 0, txn_batch(pid, e + 1, 0, b"x")) == 0
        assert await end(c, "tx", pid, e + 1, False) == (0, pid, e + 2)
        p0 = await fetch(c, "t", 0, 1)
        assert [(a.producer_id, a.first_offset) for a in p0.aborted_transactions] == [(pid, 3)]
        # a late batch of the aborted transaction's epoch is fenced
        assert await produce(c, "tx", "t", 0, txn_batch(pid, e + 1, 1, b"late")) == \
            E.INVALID_PRODUCER_EPOCH
        await c.aclose()
        server.request_shutdown()
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        meta = server.broker.transactions.txns["tx"]
        assert (meta.state, meta.producer_epoch, meta.client_transaction_version) == \
            (TxnState.COMPLETE_ABORT, e + 2, 2)
        c = await RawClient.connect(server)
        # the retry of the abort is still recognised after the replay
        assert await end(c, "tx", pid, e + 1, False) == (0, pid, e + 2)
        assert await end(c, "tx", pid, e + 1, True) == (E.INVALID_TXN_STATE, -1, -1)
        await c.aclose()
        server.request_shutdown()


async def test_epoch_overflow_moves_to_a_new_producer_id(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        coord = transactions(server.broker)   # before its first request
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        _, pid, _ = await init(c, "tx", version=5)
        # fast-forward the id to two epochs before the last one (as many transactions would)
        e = MAX_EPOCH - 2
        assert await coord._write(coord.txns["tx"].copy(producer_epoch=e)) == 0
        assert await produce(c, "tx", "t", 0, txn_batch(pid, e, 0, b"a")) == 0
        assert await end(c, "tx", pid, e, True) == (0, pid, e + 1)      # 32766: exhausted
        assert await produce(c, "tx", "t", 0, txn_batch(pid, e + 1, 0, b"b")) == 0
        err, pid2, e2 = await end(c, "tx", pid, e + 1, True)
        assert (err, e2) == (0, 0) and pid2 != pid
        meta = coord.txns["tx"]
        assert (meta.producer_id, meta.producer_epoch, meta.previous_producer_id) == (pid2, 0, pid)
        # the retry of that EndTxn names the old id at the last usable epoch
        assert await end(c, "tx", pid, e + 1, True) == (0, pid2, 0)
        assert await end(c, "tx", pid, e, True) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)
        assert await produce(c, "tx", "t", 0, txn_batch(pid2, 0, 0, b"c")) == 0
        assert await end(c, "tx", pid2, 0, True) == (0, pid2, 1)
        p0 = await fetch(c, "t", 0, 1)
        assert p0.last_stable_offset == p0.high_watermark == 6 and not p0.aborted_transactions
        assert await init(c, "tx", version=5, pid=pid2, epoch=1) == (0, pid2, 2)
        await c.aclose()
        server.request_shutdown()


async def test_txn_offset_commit_v6_names_topics_by_id(tmp_path):
    """KIP-1319: TxnOffsetCommit v6 names topics by id; an unknown id is answered
    UNKNOWN_TOPIC_ID (first), a known one is committed and answered under its id."""
    import uuid
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        tid = server.broker.metadata.topics["t"].topic_id
        stranger = uuid.uuid4()
        err, pid, e = await init(c, "tx", version=5)
        assert (await c.request("FindCoordinator", 3, key="g", key_type=0)).error_code == 0

        def topic(topic_id, offset):
            return T.TxnOffsetCommitRequestTopic(topic_id=topic_id, partitions=[
                T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                  committed_leader_epoch=-1, committed_metadata="m")])
        async def commit():
            r = await c.request("TxnOffsetCommit", 6, transactional_id="tx", group_id="g",
                                producer_id=pid, producer_epoch=e, generation_id_or_member_epoch=-1,
                                member_id="", group_instance_id=None,
                                topics=[topic(tid, 7), topic(stranger, 8)])
            return r if r.topics[-1].partitions[0].error_code != E.COORDINATOR_LOAD_IN_PROGRESS else None
        r = await until(commit, what="a TxnOffsetCommit past the group's load", interval=0.05)
        assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions])
                for t in r.topics] == [(stranger, [(0, E.UNKNOWN_TOPIC_ID)]), (tid, [(0, 0)])]
        assert await end(c, "tx", pid, e, True) == (0, pid, e + 1)
        r = await c.request("OffsetFetch", 7, group_id="g", require_stable=True, topics=[
            O.OffsetFetchRequestTopic(name="t", partition_indexes=[0])])
        assert (r.topics[0].partitions[0].committed_offset,
                r.topics[0].partitions[0].metadata) == (7, "m")
        await c.aclose()
        server.request_shutdown()
