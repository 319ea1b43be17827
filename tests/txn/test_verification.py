"""Transaction verification (KIP-890 part 1) on one in-process broker: Produce requests
that name their transactional id are verified with the coordinator before the append
(here the coordinator is local, asked in memory; tests/cluster/test_cluster_txn.py covers a
remote one over AddPartitionsToTxn v4), the verification guard refuses a batch whose
verification an abort marker overtook, and the switch turns it all off."""
from __future__ import annotations

import trio

from kbroker.config.broker import BrokerConfig
from kbroker.server import serve
from kbroker.txn.verification import produce_error
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient
from tests.txn.test_coordinator import add, create, end, init, txn_batch

P = messages.ProduceRequest


def config(tmp_path, **extra):
    return BrokerConfig.from_dict({
        "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
        "transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
        **extra})


async def produce(c, tid, topic, part, data):
    r = await c.request("Produce", 9, transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=part, records=data)])])
    return r.responses[0].partition_responses[0].error_code


def test_kafka_translations_of_coordinator_errors():
    assert produce_error(E.PRODUCER_FENCED) == E.INVALID_PRODUCER_EPOCH
    for code in (E.CONCURRENT_TRANSACTIONS, E.NETWORK_EXCEPTION, E.COORDINATOR_LOAD_IN_PROGRESS,
                 E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR):
        assert produce_error(code) == E.NOT_ENOUGH_REPLICAS
    assert produce_error(E.INVALID_TXN_STATE) == E.INVALID_TXN_STATE
    assert produce_error(E.NONE) == E.NONE


async def test_produce_with_a_transactional_id_is_verified(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        await create(c, "t", 2)
        err, pid, epoch = await init(c, "tx")
        assert err == 0
        verifier = server.broker.transactions.verifier
        # not in a transaction; an unknown producer id; a fenced (newer) epoch
        assert await produce(c, "tx", "t", 0, txn_batch(pid, epoch, 0, b"x")) == E.INVALID_TXN_STATE
        assert await produce(c, "tx", "t", 0, txn_batch(pid + 7, 0, 0, b"x")) == \
            E.INVALID_PRODUCER_ID_MAPPING
        assert await produce(c, "tx", "t", 0, txn_batch(pid, epoch + 1, 0, b"x")) == \
            E.INVALID_PRODUCER_EPOCH
        assert await add(c, "tx", pid, epoch, "t", [0]) == {("t", 0): 0}
        assert await produce(c, "tx", "t", 0, txn_batch(pid, epoch, 0, b"a")) == 0
        assert await produce(c, "tx", "t", 1, txn_batch(pid, epoch, 0, b"b")) == E.INVALID_TXN_STATE
        # the open transaction on t-0 is the proof now: no further question
        asked = verifier.stats["verifications"]
        assert await produce(c, "tx", "t", 0, txn_batch(pid, epoch, 1, b"a2")) == 0
        assert verifier.stats["verifications"] == asked
        assert await end(c, "tx", pid, epoch, True) == 0
        # after the marker a late batch is refused (it would open a hanging transaction)
        assert await produce(c, "tx", "t", 0, txn_batch(pid, epoch, 2, b"late")) == E.INVALID_TXN_STATE
        assert verifier.statistics()["pending_verdicts"] == 0
        await c.aclose()
        server.request_shutdown()


async def test_a_marker_written_during_verification_spends_the_guard(tmp_path):
    """The ABA race of KIP-890: the coordinator says yes, an abort marker reaches the
    partition before the batch, and the batch must not be appended after it."""
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        err, pid, epoch = await init(c, "tx")
        assert await add(c, "tx", pid, epoch, "t", [0]) == {("t", 0): 0}
        broker = server.broker
        verifier = broker.transactions.verifier
        batch = txn_batch(pid, epoch, 0, b"racing")
        request = [P.TopicProduceData(name="t", partition_data=[P.PartitionProduceData(index=0, records=batch)])]
        await verifier.wait_verified("tx", request)      # the coordinator's answer: yes
        ps = broker.replicas.get_partition("t", 0).log.producer_state
        assert ps.verification_guard(pid) is not None
        # meanwhile the transaction is aborted and its marker lands on the partition
        broker.replicas.write_txn_marker("t", 0, producer_id=pid, producer_epoch=epoch,
                                         commit=False, coordinator_epoch=0)
        assert ps.verification_guard(pid) is None
        from kbroker.replica import ReplicaError
        try:
            broker.replicas.append("t", 0, batch, required_acks=1)
        except ReplicaError as exc:
            assert exc.error_code == E.INVALID_TXN_STATE
        else:
            raise AssertionError("a batch whose verification an abort overtook was appended")
        assert broker.replicas.get_partition("t", 0).log.log_end_offset == 1   # the marker only
        await c.aclose()
        server.request_shutdown()


async def test_verification_disabled_accepts_unverified_batches(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(
            tmp_path, **{"transaction.partition.verification.enable": "false"}))
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        err, pid, epoch = await init(c, "tx")
        assert await produce(c, "tx", "t", 0, txn_batch(pid, epoch, 0, b"x")) == 0
        assert server.broker.transactions.verifier.stats["verifications"] == 0
        await c.aclose()
        server.request_shutdown()
