"""acks=0 Produce over a raw socket: no answer on success; a failed partition closes the
connection (Kafka's handleProduceRequest), the client's only way to learn of the failure."""
from __future__ import annotations

from kbroker.wire import messages
from kbroker.wire import records as rec
from kbroker.wire.protocol import encode_request

from .raw import RawClient
from .test_metadata_raw import create

P = messages.ProduceRequest


def produce(topic: str, partition: int, records: bytes, acks: int = 0):
    return P(acks=acks, timeout_ms=1000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=partition, records=records)])])


def batch(*values, keys=None) -> bytes:
    keys = keys or [None] * len(values)
    return rec.build_batch([rec.SimpleRecord(k, v, (), 1_700_000_000_000)
                            for k, v in zip(keys, values)])


async def send_acks0(c: RawClient, body, version: int = 9) -> None:
    c.correlation_id += 1
    await c.send_raw(encode_request(0, version, c.correlation_id, "acks0-test", body))


async def end_offset(c: RawClient, topic: str, partition: int = 0) -> int:
    L = messages.ListOffsetsRequest
    resp = await c.request("ListOffsets", 7, replica_id=-1, isolation_level=0, topics=[
        L.ListOffsetsTopic(name=topic, partitions=[
            L.ListOffsetsPartition(partition_index=partition, timestamp=-1)])])
    return resp.topics[0].partitions[0].offset


async def test_acks0_success_gets_no_answer_and_keeps_the_connection(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "a0", 1)).error_code == 0
    await send_acks0(c, produce("a0", 0, batch(b"x", b"y")))
    await send_acks0(c, produce("a0", 0, batch(b"z")))
    # the next request's answer is the first frame: nothing was answered for acks=0
    assert await end_offset(c, "a0") == 3


async def test_acks0_failure_closes_the_connection(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "a0c", 1, configs=[
        messages.CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(
            name="cleanup.policy", value="compact")])).error_code == 0
    # a keyless record on a compacted topic: INVALID_RECORD, which the client cannot be told
    await send_acks0(c, produce("a0c", 0, batch(b"no key")))
    assert await c.is_closed()
    c2 = await RawClient.connect(broker_server)
    assert await end_offset(c2, "a0c") == 0
    # an unknown partition fails the same way; a good batch first is still appended
    await send_acks0(c2, produce("a0c", 0, batch(b"v", keys=[b"k"])))
    await send_acks0(c2, produce("a0c", 5, batch(b"v", keys=[b"k"])))
    assert await c2.is_closed()
    c3 = await RawClient.connect(broker_server)
    assert await end_offset(c3, "a0c") == 1


async def test_acks0_failure_after_pipelined_acks1_answers_them_first(broker_server):
    """Answers owed on the connection go out before it closes (order is kept)."""
    c = await RawClient.connect(broker_server)
    assert (await create(c, "a0p", 1)).error_code == 0
    c.correlation_id += 1
    first = c.correlation_id
    await c.send_raw(encode_request(0, 9, first, "acks0-test", produce("a0p", 0, batch(b"x"), 1)))
    await send_acks0(c, produce("a0p", 3, batch(b"x")))
    frame = await c.recv_frame()
    assert frame is not None and int.from_bytes(frame[:4], "big") == first
    assert await c.is_closed()
