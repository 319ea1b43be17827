"""KIP-588 over the wire: a fenced transactional producer gets PRODUCER_FENCED (90) only at
the versions that know it, INVALID_PRODUCER_EPOCH (47) below (EndTxn, AddPartitionsToTxn,
AddOffsetsToTxn below v2, InitProducerId below v4) and at every TxnOffsetCommit version,
as Kafka answers (compat_tests/test_fencing_codes.py checks the same against Kafka)."""
from __future__ import annotations

import trio

from kbroker.api._txn_errors import fenced_error_for
from kbroker.server import serve
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient
from tests.txn.test_coordinator import add, config, create, init

T = messages.TxnOffsetCommitRequest
FENCED, OLD = int(E.PRODUCER_FENCED), int(E.INVALID_PRODUCER_EPOCH)


def test_mapping_table():
    for key, first in ((22, 4), (24, 2), (25, 2), (26, 2)):
        assert fenced_error_for(key, first - 1, FENCED) == OLD
        assert fenced_error_for(key, first, FENCED) == FENCED
        assert fenced_error_for(key, 0, int(E.CONCURRENT_TRANSACTIONS)) == E.CONCURRENT_TRANSACTIONS
    assert {fenced_error_for(28, v, FENCED) for v in range(5)} == {OLD}
    assert fenced_error_for(28, 3, int(E.NONE)) == E.NONE


async def _txn_offset_commit(c, version, tid, pid, epoch):
    r = await c.request("TxnOffsetCommit", version, transactional_id=tid, group_id="g",
                        producer_id=pid, producer_epoch=epoch, generation_id_or_member_epoch=-1, member_id="",
                        group_instance_id=None, topics=[T.TxnOffsetCommitRequestTopic(
                            name="t", partitions=[T.TxnOffsetCommitRequestPartition(
                                partition_index=0, committed_offset=7,
                                committed_leader_epoch=-1, committed_metadata="")])])
    return r.topics[0].partitions[0].error_code


async def test_fenced_instance_sees_the_code_its_version_knows(tmp_path):
    async with trio.open_nursery() as n:
        server = await n.start(serve, config(tmp_path))
        c = await RawClient.connect(server)
        await create(c, "t", 1)
        assert (await c.request("FindCoordinator", 3, key="g", key_type=0)).error_code == 0
        err, pid, stale = await init(c, "tx", version=1)
        assert err == 0
        err, pid2, current = await init(c, "tx", version=1)   # fences epoch `stale`
        assert err == 0 and pid2 == pid and current == stale + 1
        r = await c.request("AddOffsetsToTxn", 3, transactional_id="tx", producer_id=pid,
                            producer_epoch=current, group_id="g")
        assert r.error_code == 0

        for v in range(0, 5):
            r = await c.request("EndTxn", v, transactional_id="tx", producer_id=pid,
                                producer_epoch=stale, committed=True)
            assert r.error_code == (OLD if v < 2 else FENCED), v
            r = await c.request("AddOffsetsToTxn", v, transactional_id="tx", producer_id=pid,
                                producer_epoch=stale, group_id="g")
            assert r.error_code == (OLD if v < 2 else FENCED), v
            assert await _txn_offset_commit(c, v, "tx", pid, stale) == OLD, v
        for v in range(0, 4):
            assert await add(c, "tx", pid, stale, "t", [0], version=v) == \
                {("t", 0): OLD if v < 2 else FENCED}, v
        for v in (3, 4, 5):
            err, _, _ = await init(c, "tx", version=v, pid=pid + 99, epoch=stale)
            assert err == (OLD if v < 4 else FENCED), v
        # the current instance is not affected: its offsets commit goes through
        assert await _txn_offset_commit(c, 3, "tx", pid, current) == 0
        await c.aclose()
        server.request_shutdown()

