"""What an idle client connection holds (issue 32, item 4; kbroker/server/buffers.py, idle.py).

Counted, not timed: idle connections after an ApiVersions answer hold no receive buffer
(the server pool's ``lent`` count) and park without a deadline of their own; the Python
memory traced per idle connection stays under a bound that the old per-connection 16 KiB
buffer alone exceeded; a partial frame holds one buffer until it completes; pipelined
produce requests that outgrow the small buffer, and a frame larger than the large one,
are still answered in order after buffers were given back; ``connections.max.idle.ms``
still closes a silent connection (through the server's sweep).
"""
from __future__ import annotations

import socket

import trio

from kbroker.server.buffers import LARGE, SMALL
from kbroker.wire import messages
from kbroker.wire.protocol import decode_response, encode_request

from .raw import RawClient
from .raw_socket import (answered as _answered_api_versions, api_versions_frame as _api_versions,
                         connect as _connect, encoded as _bytes, frames, produce_frame, traced_per,
                         until as _until)
from .test_metadata_raw import create


async def _frame(sock: socket.socket) -> bytes:
    """One response frame (without its size); a second one fails."""
    (frame,) = await frames(sock, 1)
    return frame


def _parked(server) -> bool:
    return all(c.waiting_since is not None for c in server._conns)


async def test_idle_connections_hold_no_receive_buffer(broker_server):
    pool = broker_server.receive_buffers
    socks = await _answered_api_versions(broker_server, 40)
    try:
        await _until(lambda: len(broker_server._conns) == 40 and _parked(broker_server))
        stats = pool.statistics()
        assert stats["lent"] == 0
        # answered one after another: the same small buffer served them all
        assert stats["allocated"] <= 2 and stats["free_large"] == 0
        # parked without a deadline of their own (the sweep of kbroker/server/idle.py)
        assert all(c._recv_scope is None for c in broker_server._conns)
    finally:
        for s in socks:
            s.close()


async def test_memory_traced_per_idle_connection_is_bounded(broker_server):
    """tracemalloc over 150 connections opened and answered: under 10 KiB each (about 4.5
    with the pool; the 16 KiB buffer each connection owned before exceeded it alone)."""
    warm = await _answered_api_versions(broker_server, 5)
    n = 150

    async def opened():
        socks = await _answered_api_versions(broker_server, n)
        await _until(lambda: len(broker_server._conns) == n + 5 and _parked(broker_server))
        return socks
    socks, per_connection = await traced_per(n, opened)
    try:
        assert per_connection < 10 * 1024, f"{per_connection:.0f} bytes per idle connection"
    finally:
        for s in warm + socks:
            s.close()


async def test_a_partial_frame_holds_one_buffer_until_it_is_complete(broker_server):
    pool = broker_server.receive_buffers
    sock = await _connect(broker_server)
    try:
        frame = _api_versions(7)
        sock.sendall(frame[:9])
        await _until(lambda: pool.lent == 1 and _parked(broker_server))
        sock.sendall(frame[9:])
        assert int.from_bytes((await _frame(sock))[:4], "big") == 7
        await _until(lambda: _parked(broker_server))
        assert pool.lent == 0
    finally:
        sock.close()


async def test_pipelined_produce_and_a_large_frame_after_buffers_were_given_back(broker_server):
    pool = broker_server.receive_buffers
    c = await RawClient.connect(broker_server)
    assert (await create(c, "idle-pipe", 1)).error_code == 0
    await c.aclose()
    sock = await _connect(broker_server)
    try:
        sock.sendall(_api_versions(1))
        await _frame(sock)
        await _until(lambda: pool.lent == 0 and _parked(broker_server))
        # 24 produce requests of ~3 KiB in one write: more than the small buffer holds,
        # so the connection moves to large buffers; answered in order, offsets in order
        pipelined = b"".join(produce_frame(100 + i, "idle-pipe", bytes([i]) * 3000) for i in range(24))
        assert len(pipelined) > SMALL
        sock.sendall(pipelined)
        answers = [decode_response(f, 0, 9) for f in await frames(sock, 24)]
        assert [corr for corr, _ in answers] == list(range(100, 124))
        offsets = [r.responses[0].partition_responses[0].base_offset for _, r in answers]
        assert offsets == list(range(24))
        assert all(r.responses[0].partition_responses[0].error_code == 0 for _, r in answers)
        await _until(lambda: pool.lent == 0 and _parked(broker_server))
        assert pool.statistics()["free_large"] >= 1     # the grown buffer came back
        # a frame larger than the large buffer is received into its own
        big = produce_frame(200, "idle-pipe", b"B" * (LARGE + 50_000))
        sock.sendall(big)
        corr, resp = decode_response(await _frame(sock), 0, 9)
        part = resp.responses[0].partition_responses[0]
        assert (corr, part.error_code, part.base_offset) == (200, 0, 24)
        await _until(lambda: pool.lent == 0 and _parked(broker_server))
        # and a small request after it, on the same connection
        sock.sendall(_api_versions(201))
        assert int.from_bytes((await _frame(sock))[:4], "big") == 201
        # every request of the test was read into one of two buffers, reused each time
        assert pool.allocated == 2
    finally:
        sock.close()


async def test_connections_max_idle_ms_closes_a_silent_connection(make_config, nursery):
    from kbroker.server import serve
    server = await nursery.start(serve, make_config(connections_max_idle_ms=300))
    try:
        quiet = await RawClient.connect(server)
        assert (await quiet.request("ApiVersions", 3, client_software_name="t",
                                    client_software_version="1")).error_code == 0
        assert await quiet.is_closed(timeout=10)
        await _until(lambda: not server._conns)
        fresh = await RawClient.connect(server)       # the listener goes on serving
        assert (await fresh.request("ApiVersions", 3, client_software_name="t",
                                    client_software_version="1")).error_code == 0
        await fresh.aclose()
    finally:
        server.request_shutdown()
        with trio.fail_after(10):
            await server.wait_stopped()


async def test_idle_tls_connections_hold_no_buffer_and_fetch_through_a_borrowed_one(
        make_config, nursery, tmp_path):
    """TLS listeners take the same path: after a handshake, an ApiVersions and a fetch
    (its file region encrypted through a buffer borrowed for the send), the connections
    hold no buffer, and their ciphertext reads share the server's one scratch buffer."""
    import ssl
    import subprocess

    from kbroker.server import serve
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "key.pem", "-out", "cert.pem"],
                   cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "full.pem").write_text((tmp_path / "key.pem").read_text()
                                       + (tmp_path / "cert.pem").read_text())
    server = await nursery.start(serve, make_config(**{
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(tmp_path / "full.pem")}))
    try:
        c = await RawClient.connect(server)
        assert (await create(c, "idle-tls", 1)).error_code == 0
        await c.aclose()
        ctx = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
        port = server.bound[1].port
        streams = []
        for i in range(6):
            tcp = await trio.open_tcp_stream("127.0.0.1", port)
            s = trio.SSLStream(tcp, ctx, server_hostname="127.0.0.1")
            await s.send_all(_api_versions(i))
            streams.append(s)
        for i, s in enumerate(streams):
            client = RawClient(s)
            assert int.from_bytes((await client.recv_frame())[:4], "big") == i
        await streams[0].send_all(produce_frame(50, "idle-tls", b"v" * 5000))
        client = RawClient(streams[0])
        assert decode_response(await client.recv_frame(), 0, 9)[1].responses[0] \
            .partition_responses[0].error_code == 0
        F = messages.FetchRequest
        fetch = F(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
            F.FetchTopic(topic="idle-tls", partitions=[F.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
        await streams[0].send_all(_bytes(encode_request(1, 12, 51, "idle-test", fetch)))
        _, answer = decode_response(await client.recv_frame(), 1, 12)
        records = answer.responses[0].partitions[0].records
        assert b"v" * 5000 in bytes(records)
        pool = server.receive_buffers
        await _until(lambda: len(server._conns) == 6 and _parked(server))
        assert pool.lent == 0
        assert pool.statistics()["free_large"] == 1     # the fetch's encryption chunk, back
        assert all(conn._tls._cview is pool.cipher_view() for conn in server._conns)
        for s in streams:
            await s.aclose()
    finally:
        server.request_shutdown()
        with trio.fail_after(10):
            await server.wait_stopped()
