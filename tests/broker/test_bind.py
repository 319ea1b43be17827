"""kbroker.server.bind: a listener's host name binds one address (its first that binds), as
Kafka's single InetSocketAddress does; an empty host binds the wildcard."""
import socket

import trio

from kbroker.server.bind import open_tcp_listeners


async def test_a_host_name_binds_its_first_address_only():
    first = socket.getaddrinfo("localhost", 0, type=socket.SOCK_STREAM)[0][4][0]
    listeners = await open_tcp_listeners(0, "localhost")
    try:
        assert len(listeners) == 1
        host, port = listeners[0].socket.getsockname()[:2]
        assert host == first
        stream = await trio.open_tcp_stream(host, port)
        await stream.aclose()
    finally:
        for l in listeners:
            await l.aclose()


async def test_an_empty_host_binds_the_wildcard():
    listeners = await open_tcp_listeners(0, "")
    try:
        assert {l.socket.getsockname()[0] for l in listeners} <= {"0.0.0.0", "::"}
    finally:
        for l in listeners:
            await l.aclose()


async def _accepted_rcvbuf(receive_buffer: int) -> tuple[int, int]:
    """(SO_RCVBUF of a connection accepted by such a listener, of a plain new socket)."""
    listeners = await open_tcp_listeners(0, "127.0.0.1", receive_buffer=receive_buffer)
    try:
        port = listeners[0].socket.getsockname()[1]
        client = await trio.open_tcp_stream("127.0.0.1", port)
        server = await listeners[0].accept()
        got = server.socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        plain = socket.socket()
        default = plain.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        plain.close()
        await client.aclose()
        await server.aclose()
        return got, default
    finally:
        for l in listeners:
            await l.aclose()


async def test_socket_receive_buffer_bytes_bounds_accepted_connections():
    # Kafka's socket.receive.buffer.bytes (102,400) on the server socket: connections inherit
    # it (Linux reports twice the value asked for, its bookkeeping included)
    got, default = await _accepted_rcvbuf(102_400)
    assert got in (102_400, 204_800)
    # -1: the system's default (and its autotuning) is left alone
    got, default = await _accepted_rcvbuf(-1)
    assert got == default
