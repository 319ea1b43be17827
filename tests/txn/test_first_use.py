"""The transaction coordinator made on first use (``kbroker/txn/service.py``), on one
in-process broker that leads no partition of ``__transaction_state`` when it starts: the
first image that makes it the leader of one makes the coordinator and loads it, and a
transactional batch that reaches the append unverified (its Produce names no transactional
id) before any transactional request is judged as on a node whose coordinator exists.
A whole transaction of a real client after ready, and the restart that loads the state, are
in tests/broker/test_startup_imports.py."""
from __future__ import annotations

import trio

from kbroker.server import serve
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient
from tests.support.waiting import until
from tests.txn.test_coordinator import create, init, txn_batch
from tests.txn.test_verification import config, produce


async def test_an_image_making_this_node_a_transaction_state_leader_makes_and_loads_it(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        broker = server.broker
        assert broker.transactions is None and broker.started        # nothing to load
        c = await RawClient.connect(server)
        # FindCoordinator creates __transaction_state; its image makes the coordinator
        r = await c.request("FindCoordinator", 3, key="tx", key_type=1)
        assert (r.error_code, r.node_id) == (0, broker.node_id)
        await until(lambda: broker.transactions is not None
                    and broker.transactions.loaded == {0, 1, 2},
                    "the coordinator made and its three partitions loaded")
        coordinator = broker.transactions
        err, _, epoch = await init(c, "tx")
        assert (err, epoch) == (0, 0)
        assert broker.transactions is coordinator                     # made once
        assert broker.replicas.txn_verifier == coordinator.verifier.check
        await c.aclose()
        server.request_shutdown()


async def test_an_unverified_transactional_batch_before_any_transactional_request(tmp_path):
    """The append's hook makes the coordinator and asks its verifier: refused with
    ``transaction.partition.verification.enable`` (no coordinator knows the producer),
    admitted without it -- as on a node whose coordinator was made at start."""
    for enabled, expected in (("true", E.INVALID_TXN_STATE), ("false", E.NONE)):
        async with trio.open_nursery() as n:
            server = await n.start(serve, config(
                tmp_path / enabled, **{"transaction.partition.verification.enable": enabled}))
            c = await RawClient.connect(server)
            await create(c, "t", 1)
            assert server.broker.transactions is None
            assert await produce(c, None, "t", 0, txn_batch(1000, 0, 0, b"x")) == expected
            assert server.broker.transactions is not None
            await c.aclose()
            server.request_shutdown()
