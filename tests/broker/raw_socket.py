"""Helpers for tests that talk to a broker over a plain non-blocking stdlib socket (what the
server's fast path sees: pipelined frames written at once, answers read as they come)."""
from __future__ import annotations

import gc
import socket
import tracemalloc

import trio

from kbroker.wire import messages
from kbroker.wire import records as rec
from kbroker.wire.protocol import encode_request

P = messages.ProduceRequest


def encoded(parts) -> bytes:
    """An encoded request (bytes, or the parts ``encode_request`` returns) as one bytes."""
    return parts if isinstance(parts, (bytes, bytearray)) else b"".join(bytes(p) for p in parts)


def produce_frame(correlation_id: int, topic: str, value: bytes, client_id: str = "raw-test") -> bytes:
    """A Produce v9 request (acks=1) of one record to partition 0 of ``topic``."""
    batch = rec.build_batch([rec.SimpleRecord(None, value, (), 1_700_000_000_000)])
    body = P(acks=1, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])])
    return encoded(encode_request(0, 9, correlation_id, client_id, body))


def fetch_frame(correlation_id: int, topic: str, offset: int, client_id: str = "raw-test",
                max_wait_ms: int = 20_000) -> bytes:
    """A consumer's Fetch v12 of partition 0 of ``topic`` from ``offset`` (min_bytes 1: it
    parks at the log end for up to ``max_wait_ms``)."""
    F = messages.FetchRequest
    body = F(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=50 << 20,
             isolation_level=0, session_id=0, session_epoch=-1, topics=[F.FetchTopic(
                 topic=topic, partitions=[F.FetchPartition(
                     partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
                     current_leader_epoch=-1, log_start_offset=-1)])])
    return encoded(encode_request(1, 12, correlation_id, client_id, body))


def read_frame(sock: socket.socket) -> bytes:
    """One response frame (without its size) from a blocking socket."""
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = sock.recv(1 << 20)
        assert chunk, "the broker closed the connection"
        data += chunk
    return data[4:]


def api_versions_frame(correlation_id: int, client_id: str = "raw-test") -> bytes:
    """An ApiVersions v3 request."""
    return encoded(encode_request(18, 3, correlation_id, client_id, messages.ApiVersionsRequest(
        client_software_name="t", client_software_version="1")))


async def connect(server) -> socket.socket:
    """A non-blocking plain socket connected to ``server``'s port."""
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.setblocking(False)
    return sock


async def answered(server, n: int, first: int = 0) -> list[socket.socket]:
    """``n`` connections, each answered one ApiVersions (correlation ids from ``first``)."""
    socks = []
    for i in range(n):
        sock = await connect(server)
        sock.sendall(api_versions_frame(first + i))
        (frame,) = await frames(sock, 1)
        assert int.from_bytes(frame[:4], "big") == first + i
        socks.append(sock)
    return socks


async def traced_per(n: int, make):
    """``await make()``'s result, and the Python memory (tracemalloc, after collecting) it
    left allocated, divided by ``n``."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = await make()
        gc.collect()
        return result, (tracemalloc.get_traced_memory()[0] - before) / n
    finally:
        tracemalloc.stop()


async def frames(sock: socket.socket, n: int) -> list[bytes]:
    """Exactly ``n`` response frames (without their sizes); more bytes than that fail."""
    data = b""
    out: list[bytes] = []
    while len(out) < n:
        await trio.lowlevel.wait_readable(sock)
        chunk = sock.recv(1 << 20)
        assert chunk, "the broker closed the connection"
        data += chunk
        while len(data) >= 4 and len(data) >= 4 + int.from_bytes(data[:4], "big"):
            size = int.from_bytes(data[:4], "big")
            out.append(data[4:4 + size])
            data = data[4 + size:]
    assert not data and len(out) == n, "more answers than requests"
    return out


async def until(condition, timeout: float = 10) -> None:
    """Wait (polling the broker in the same trio run) until ``condition()`` holds."""
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(0.01)
