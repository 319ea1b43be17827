"""Bad peers get their connection closed; the broker keeps serving everyone else."""
import os
import random
import struct

import pytest
import trio

from kbroker.wire import messages
from kbroker.wire.protocol import encode_request

from .raw import RawClient


async def assert_healthy(server):
    c = await RawClient.connect(server)
    resp = await c.request("Metadata", 1, topics=None)
    assert resp.brokers[0].node_id == 1
    await c.aclose()


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize("payload", [
    b"",                                                    # empty frame
    b"\x00\x03",                                            # shorter than a header
    struct.pack(">hhi", 3, 1, 5) + b"\x00\x10ab",           # client id overruns the frame
    struct.pack(">hhih", 3, 9, 5, -1) + b"\x05",            # truncated flexible body
    struct.pack(">hhih", 3, 1, 5, -1) + b"\x00\x00\x00\x09",  # array count beyond the frame
    struct.pack(">hhih", 999, 0, 5, -1),                    # unknown API key
    struct.pack(">hhih", 3, 14, 5, -1),                     # Metadata above the advertised max
    struct.pack(">hhih", 19, 0, 5, -1) + b"\x00" * 12,       # CreateTopics below Kafka 4's floor
])
async def test_bad_request_closes_connection(broker_server, payload):
    c = await RawClient.connect(broker_server)
    await c.send_raw(frame(payload))
    assert await c.is_closed()
    await assert_healthy(broker_server)


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_produce_below_v3_closes_connection(broker_server, version):
    """Kafka 4 advertises Produce v0 (KAFKA-18659, for old librdkafka) but has no definition
    of v0-v2 any more (KIP-896): such a request closes the connection, nothing is written."""
    c = await RawClient.connect(broker_server)
    await c.request("CreateTopics", 7, topics=[messages.CreateTopicsRequest.CreatableTopic(
        name="old-produce", num_partitions=1, replication_factor=1)], timeout_ms=5000)
    message = struct.pack(">qiibbi", 0, 14, 0, 0, 0, -1) + struct.pack(">i", 1) + b"a"
    body = (struct.pack(">hi", 1, 5000) + struct.pack(">ih", 1, 11) + b"old-produce"
            + struct.pack(">ii", 1, 0) + struct.pack(">i", len(message)) + message)
    await c.send_raw(frame(struct.pack(">hhih", 0, version, 7, -1) + body))
    assert await c.is_closed()
    c = await RawClient.connect(broker_server)
    resp = await c.request("ListOffsets", 7, replica_id=-1, topics=[
        messages.ListOffsetsRequest.ListOffsetsTopic(name="old-produce", partitions=[
            messages.ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    assert resp.topics[0].partitions[0].offset == 0      # nothing was appended
    await c.aclose()


@pytest.mark.parametrize("size", [-1, -(2 ** 31), 104_857_601, 2 ** 31 - 1])
async def test_size_prefix_out_of_range(broker_server, size):
    c = await RawClient.connect(broker_server)
    await c.send_raw(struct.pack(">i", size) + b"abc")
    assert await c.is_closed()
    await assert_healthy(broker_server)


async def test_random_bytes(broker_server):
    rng = random.Random(1234)
    for _ in range(30):
        c = await RawClient.connect(broker_server)
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        if rng.random() < 0.5:
            junk = frame(junk)
        await c.send_raw(junk)
        await c.stream.send_eof()
        assert await c.is_closed()
    await assert_healthy(broker_server)


async def test_truncated_requests_at_every_split(broker_server):
    full = encode_request(3, 9, 1, "t", messages.MetadataRequest(topics=None))
    for cut in range(4, len(full)):
        payload = full[4:cut]
        c = await RawClient.connect(broker_server)
        await c.send_raw(frame(payload))   # a whole frame whose content is cut short
        assert await c.is_closed(), cut
    await assert_healthy(broker_server)


async def test_pipelined_requests_answered_in_order(broker_server):
    c = await RawClient.connect(broker_server)
    data = b"".join(encode_request(3 if i % 2 else 18, 1, 100 + i, "p",
                                   messages.MetadataRequest(topics=None) if i % 2
                                   else messages.ApiVersionsRequest())
                    for i in range(20))
    await c.send_raw(data)
    for i in range(20):
        reply = await c.recv_frame()
        assert struct.unpack_from(">i", reply)[0] == 100 + i


async def test_many_half_open_connections_while_a_client_works(broker_server):
    socks = []
    for i in range(200):
        s = await trio.open_tcp_stream("127.0.0.1", broker_server.port)
        if i % 3 == 0:
            await s.send_all(struct.pack(">i", 1000) + b"partial")   # frame never completed
        elif i % 3 == 1:
            await s.send_all(b"\x00\x00")                            # half a size prefix
        socks.append(s)
    good = await RawClient.connect(broker_server)
    for _ in range(20):
        resp = await good.request("Metadata", 12, topics=None)
        assert resp.brokers
    for s in socks:
        await s.aclose()
    await assert_healthy(broker_server)


async def test_client_disconnect_mid_request(broker_server):
    for _ in range(20):
        c = await RawClient.connect(broker_server)
        full = encode_request(3, 12, 1, "t", messages.MetadataRequest(topics=None))
        await c.send_raw(full[: len(full) // 2])
        await c.aclose()
    await assert_healthy(broker_server)


async def test_handler_exception_closes_only_that_connection(broker_server, monkeypatch):
    from kbroker.api import REGISTRY
    spec = REGISTRY[60]

    async def broken(ctx, request):
        raise RuntimeError("boom")

    monkeypatch.setitem(REGISTRY, 60, spec.__class__(spec.api_key, spec.name, spec.min_version,
                                                     spec.max_version, spec.served_from, broken))
    c = await RawClient.connect(broker_server)
    await c.send_raw(encode_request(60, 0, 1, "t", messages.DescribeClusterRequest()))
    assert await c.is_closed()
    await assert_healthy(broker_server)


async def test_graceful_shutdown_writes_clean_marker(make_config, nursery, tmp_path):
    from kbroker.server import serve
    server = await nursery.start(serve, make_config())
    c = await RawClient.connect(server)
    await c.request("CreateTopics", 7, topics=[messages.CreateTopicsRequest.CreatableTopic(
        name="t", num_partitions=1, replication_factor=1)])
    idle = await RawClient.connect(server)
    server.request_shutdown()
    with trio.fail_after(10):
        await server.wait_stopped()
    assert await idle.is_closed()
    assert os.path.exists(tmp_path / "data" / ".kafka_cleanshutdown")
    assert os.path.exists(tmp_path / "data" / "meta.properties")


def _held_describe_cluster(monkeypatch) -> tuple[trio.Event, trio.Event]:
    """DescribeCluster handled only once ``release`` is set; ``started`` is set when the
    handler has the request (it is in flight)."""
    from kbroker.api import REGISTRY
    spec = REGISTRY[60]
    started, release = trio.Event(), trio.Event()

    async def held(ctx, request):
        started.set()
        await release.wait()
        return await spec.handler(ctx, request)

    monkeypatch.setitem(REGISTRY, 60, spec.__class__(spec.api_key, spec.name, spec.min_version,
                                                     spec.max_version, spec.served_from, held))
    return started, release


async def test_shutdown_lets_in_flight_request_finish(make_config, nursery, monkeypatch):
    from kbroker.server import serve
    started, release = _held_describe_cluster(monkeypatch)
    server = await nursery.start(serve, make_config())
    c = await RawClient.connect(server)
    await c.send_raw(encode_request(60, 0, 9, "t", messages.DescribeClusterRequest()))
    with trio.fail_after(10):
        await started.wait()
    server.request_shutdown()
    release.set()                # it finishes after the shutdown began
    reply = await c.recv_frame()
    assert reply is not None and struct.unpack_from(">i", reply)[0] == 9
    assert await c.is_closed()
    with trio.fail_after(5):
        await server.wait_stopped()


async def test_shutdown_deadline_cancels_stuck_request(make_config, nursery, monkeypatch, tmp_path):
    from kbroker.server import serve
    started, _ = _held_describe_cluster(monkeypatch)          # never released
    server = await nursery.start(lambda task_status: serve(make_config(), shutdown_timeout=0.3,
                                                           task_status=task_status))
    c = await RawClient.connect(server)
    await c.send_raw(encode_request(60, 0, 9, "t", messages.DescribeClusterRequest()))
    with trio.fail_after(10):
        await started.wait()
    server.request_shutdown()
    with trio.fail_after(5):
        await server.wait_stopped()
    assert await c.is_closed()
    assert os.path.exists(tmp_path / "data" / ".kafka_cleanshutdown")
