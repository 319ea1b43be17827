"""Producer-id and transactional-id expiration on an in-process broker, over the wire.

Short ``producer.id.expiration.ms`` / ``transactional.id.expiration.ms`` and check
intervals; every wait is on the answer changing. What expires (an idle idempotent producer,
transactional ids in Empty and CompleteCommit), what is kept (a producer with an open
transaction, an Ongoing id), what the APIs answer afterwards, and that a restart brings
nothing back: the producer state's snapshot and the ``__transaction_state`` tombstones.
"""
from __future__ import annotations

import trio

from kbroker.log.replay import data_records
from kbroker.metrics import render
from kbroker.server import serve
from kbroker.txn import records as trec
from kbroker.txn.service import transactions
from kbroker.wire import messages, records as rb
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient
from tests.support.waiting import until
from tests.txn.test_coordinator import add, config, create, end, init, now_ms, produce, txn_batch

D = messages.DescribeProducersRequest
FAST_TXN_EXPIRY = {"transactional.id.expiration.ms": "1000",
                   "transaction.remove.expired.transaction.cleanup.interval.ms": "50"}
FAST_PRODUCER_EXPIRY = {"producer.id.expiration.ms": "1000",
                        "producer.id.expiration.check.interval.ms": "50"}


def idem_batch(pid, epoch, seq, *values):
    return rb.build_batch([(None, v, (), now_ms()) for v in values], producer_id=pid,
                          producer_epoch=epoch, base_sequence=seq)


async def producers(c, topic, part=0) -> dict[int, tuple]:
    r = await c.request("DescribeProducers", 0, topics=[D.TopicRequest(name=topic, partition_indexes=[part])])
    p = r.topics[0].partitions[0]
    assert p.error_code == 0
    return {s.producer_id: (s.producer_epoch, s.last_sequence, s.current_txn_start_offset)
            for s in p.active_producers}


async def describe(c, *tids) -> dict[str, tuple]:
    r = await c.request("DescribeTransactions", 0, transactional_ids=list(tids))
    return {s.transactional_id: (s.error_code, s.transaction_state, s.producer_id)
            for s in r.transaction_states}


async def listed(c) -> list[str]:
    r = await c.request("ListTransactions", 1, state_filters=[], producer_id_filters=[],
                        duration_filter=-1)
    return sorted(s.transactional_id for s in r.transaction_states)


async def test_idle_producers_expire_open_transactions_stay_and_a_restart_keeps_it_so(tmp_path):
    cfg = config(tmp_path, FAST_PRODUCER_EXPIRY)
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        # a transactional producer first (its last batch is the older one), then an
        # idempotent one: when the idempotent one is gone, the open transaction was
        # looked at in the same pass of the same partition and kept
        _, tpid, tepoch = await init(c, "open")
        assert await add(c, "open", tpid, tepoch, "t", [0]) == {("t", 0): 0}
        assert (await produce(c, "t", 0, txn_batch(tpid, tepoch, 0, b"t0")))[0] == 0
        r = await c.request("InitProducerId", 4, transactional_id=None, transaction_timeout_ms=60000,
                            producer_id=-1, producer_epoch=-1)
        pid = r.producer_id
        assert (await produce(c, "t", 0, idem_batch(pid, 0, 0, b"a", b"b", b"c"))) == (0, 1)
        assert set(await producers(c, "t")) == {tpid, pid}
        assert "\nkafka_server_replicamanager_produceridcount 2\n" in await render(server)

        async def idem_gone():
            return pid not in await producers(c, "t")
        await until(idem_gone, "the idle idempotent producer expired")
        assert await producers(c, "t") == {tpid: (tepoch, 0, 0)}
        expiry = server.broker.logs.producer_expiry
        assert expiry.stats["producers_expired"] >= 1
        assert "\nkafka_server_replicamanager_produceridcount 1\n" in await render(server)
        # only the partition that has producers is watched (the internal topics have none)
        assert {(lg.topic, lg.partition) for lg in expiry.logs} == {("t", 0)}
        await c.aclose()
        server.request_shutdown()

    # the default expiration now (a day): what comes back is what the snapshot holds
    cfg = config(tmp_path)
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        c = await RawClient.connect(server)
        assert await producers(c, "t") == {tpid: (tepoch, 0, 0)}
        # the forgotten producer writes again: unknown here, so any sequence is accepted
        # (KIP-360), and it is known again from that batch on
        assert (await produce(c, "t", 0, idem_batch(pid, 0, 3, b"d"))) == (0, 4)
        assert (await producers(c, "t"))[pid] == (0, 3, -1)
        assert (await produce(c, "t", 0, idem_batch(pid, 0, 9, b"gap")))[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert await end(c, "open", tpid, tepoch, True) == 0
        await c.aclose()
        server.request_shutdown()


async def test_transactional_ids_expire_with_tombstones_that_a_reload_replays(tmp_path):
    cfg = config(tmp_path, FAST_TXN_EXPIRY)
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        coord = transactions(server.broker)   # before its first request
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        # an Ongoing transaction first: it is older than the ids that expire, and stays
        _, opid, oepoch = await init(c, "open")
        assert await add(c, "open", opid, oepoch, "t", [0]) == {("t", 0): 0}
        _, pid, epoch = await init(c, "done")
        assert await add(c, "done", pid, epoch, "t", [0]) == {("t", 0): 0}
        assert (await produce(c, "t", 0, txn_batch(pid, epoch, 0, b"x")))[0] == 0
        assert await end(c, "done", pid, epoch, True) == 0
        _, epid, _ = await init(c, "empty")

        async def both_gone():
            d = await describe(c, "done", "empty")
            return all(v[0] == E.TRANSACTIONAL_ID_NOT_FOUND for v in d.values())
        await until(both_gone, "the completed and empty ids expired")
        assert (await describe(c, "open"))["open"] == (0, "Ongoing", opid)
        assert await listed(c) == ["open"]
        assert coord.stats["expired_ids"] == 2
        # the old producer id no longer maps to the id
        assert await add(c, "done", pid, epoch, "t", [0]) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
        assert await end(c, "empty", epid, 0, False) == E.INVALID_PRODUCER_ID_MAPPING
        # the tombstones are in __transaction_state
        dead = set()
        for p in {coord.partition_for("done"), coord.partition_for("empty")}:
            part = server.broker.replicas.get_partition(trec.TRANSACTION_STATE_TOPIC, p)
            dead |= {trec.decode_key(r.key) for r in data_records(part.log, "txn") if r.value is None}
        assert dead == {"done", "empty"}
        await c.aclose()
        server.request_shutdown()

    # a restart with the default expiration replays the tombstones: nothing comes back
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        d = await describe(c, "done", "empty", "open")
        assert d["done"][0] == d["empty"][0] == E.TRANSACTIONAL_ID_NOT_FOUND
        assert d["open"] == (0, "Ongoing", opid)
        # a new InitProducerId, even one naming the old producer (KIP-360), starts afresh
        err, new_pid, new_epoch = await init(c, "done", pid=pid, epoch=epoch)
        assert (err, new_epoch) == (0, 0) and new_pid not in (pid, opid, epid)
        assert await add(c, "done", pid, epoch, "t", [0]) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
        await c.aclose()
        server.request_shutdown()


async def test_a_dynamic_cluster_wide_expiration_applies_at_the_next_check(tmp_path):
    IAC = messages.IncrementalAlterConfigsRequest
    cfg = config(tmp_path, {"producer.id.expiration.check.interval.ms": "50"})
    async with trio.open_nursery() as n:
        server = await n.start(serve, cfg)
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        r = await c.request("InitProducerId", 4, transactional_id=None, transaction_timeout_ms=60000,
                            producer_id=-1, producer_epoch=-1)
        pid = r.producer_id
        assert (await produce(c, "t", 0, idem_batch(pid, 0, 0, b"a")))[0] == 0
        assert server.broker.logs.producer_expiry.expiration_ms == 86_400_000
        r = await c.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[
            IAC.AlterConfigsResource(resource_type=4, resource_name="", configs=[
                IAC.AlterableConfig(name="producer.id.expiration.ms", config_operation=0,
                                    value="200")])])
        assert r.responses[0].error_code == 0

        async def gone():
            return pid not in await producers(c, "t")
        await until(gone, "the producer expired under the dynamic value")
        assert server.broker.logs.producer_expiry.expiration_ms == 200
        await c.aclose()
        server.request_shutdown()
