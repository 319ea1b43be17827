"""Idempotent produce at the wire level against a real kbroker process: a retried batch is
stored once and answered with its first offsets — also after a graceful restart and after
SIGKILL — and sequence gaps / stale epochs are refused with Kafka's error codes."""
from __future__ import annotations

import time

import trio

from kbroker.wire import messages, records as rb
from kbroker.wire.error_codes import ErrorCode
from tests.broker.raw import RawClient
from tests.clients.conftest import create_topic
from tests.support.broker_proc import BrokerProcess

P = messages.ProduceRequest
F = messages.FetchRequest


def batch(pid, epoch, seq, values, *, txn=False):
    # current timestamps: producers idle for producer.id.expiration.ms are forgotten
    now = time.time_ns() // 1_000_000
    return rb.build_batch([(None, v, (), now) for v in values],
                          producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                          is_transactional=txn)


async def produce(client, topic, records, version=9):
    resp = await client.request("Produce", version, acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=0, records=records)])])
    pr = resp.responses[0].partition_responses[0]
    return pr.error_code, pr.base_offset


async def fetch_values(client, topic) -> list[bytes]:
    resp = await client.request("Fetch", 11, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                isolation_level=0, session_id=0, session_epoch=-1, topics=[
        F.FetchTopic(topic=topic, partitions=[F.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1,
            log_start_offset=-1, last_fetched_epoch=-1)])], rack_id="")
    data = resp.responses[0].partitions[0].records
    data = bytes(data) if data else b""
    return [r.value for pos, h in rb.iter_batches(data) if not h.is_control
            for r in rb.decode_records(data, pos, h)]


async def connect(proc) -> RawClient:
    return await RawClient.connect(proc.port)


async def test_duplicate_retries_are_stored_once_across_restart_and_sigkill(tmp_path):
    proc = BrokerProcess(tmp_path / "data")
    proc.start()
    try:
        topic = "idem"
        await trio.to_thread.run_sync(create_topic, proc.bootstrap, topic)
        c = await connect(proc)
        init = await c.request("InitProducerId", 4, transactional_id=None,
                               transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        assert init.error_code == 0 and init.producer_epoch == 0
        pid = init.producer_id
        b0 = batch(pid, 0, 0, [b"a", b"b", b"c"])
        b1 = batch(pid, 0, 3, [b"d"])
        assert await produce(c, topic, b0) == (0, 0)
        assert await produce(c, topic, b0) == (0, 0)           # retry: first offsets again
        assert await produce(c, topic, b1) == (0, 3)
        assert await produce(c, topic, b1) == (0, 3)
        code, _ = await produce(c, topic, batch(pid, 0, 9, [b"gap"]))
        assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        code, _ = await produce(c, topic, batch(pid, 0, 2, [b"x"]))   # not a cached range
        assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        # a different producer is independent; a bumped epoch starts at 0 again
        assert (await produce(c, topic, batch(pid + 1, 0, 0, [b"other"])))[0] == 0
        await c.aclose()

        proc.restart()                                          # graceful: snapshot at LEO
        c = await connect(proc)
        assert await produce(c, topic, b1) == (0, 3)
        assert await produce(c, topic, batch(pid, 0, 4, [b"e"])) == (0, 5)
        await c.aclose()

        proc.restart(crash=True)                                # SIGKILL: replay from snapshot
        c = await connect(proc)
        assert await produce(c, topic, batch(pid, 0, 4, [b"e"])) == (0, 5)
        assert await produce(c, topic, b1) == (0, 3)            # still among the last five
        code, _ = await produce(c, topic, batch(pid, 0, 7, [b"gap"]))
        assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert await produce(c, topic, batch(pid, 1, 0, [b"f"])) == (0, 6)   # new epoch
        code, _ = await produce(c, topic, batch(pid, 0, 5, [b"stale"]))
        assert code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert await fetch_values(c, topic) == [b"a", b"b", b"c", b"d", b"other", b"e", b"f"]
        # clients may not write transaction markers
        marker = rb.build_control_batch(commit=True, producer_id=pid, producer_epoch=1,
                                        timestamp=time.time_ns() // 1_000_000)
        code, _ = await produce(c, topic, marker)
        assert code == ErrorCode.INVALID_RECORD
        await c.aclose()
    finally:
        proc.stop()
