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


async def _accepted_buffers(listeners) -> tuple[int, int]:
    """(SO_SNDBUF, SO_RCVBUF) of a connection accepted by the first of ``listeners``."""
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listeners[0].accept()
    try:
        return (server.socket.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                server.socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
    finally:
        await client.aclose()
        await server.aclose()


async def test_socket_send_buffer_bytes_is_every_accepted_connections_send_buffer():
    # Kafka's Acceptor sets socket.send.buffer.bytes on each socket it accepts (-1: left alone)
    got = {}
    for asked in (65_536, -1):
        listeners = await open_tcp_listeners(0, "127.0.0.1", send_buffer=asked)
        try:
            got[asked], _ = await _accepted_buffers(listeners)
        finally:
            for l in listeners:
                await l.aclose()
    plain = await trio.open_tcp_listeners(0, host="127.0.0.1")
    try:
        system, _ = await _accepted_buffers(plain)
    finally:
        for l in plain:
            await l.aclose()
    assert got[65_536] in (65_536, 131_072)     # Linux reports twice what it was asked
    assert got[-1] == system


async def test_the_controller_listener_takes_the_socket_settings_of_the_client_listeners(tmp_path, nursery):
    """Kafka's controller SocketServer uses the same acceptor, hence the same
    socket.send/receive.buffer.bytes and backlog, as the client listeners."""
    from types import SimpleNamespace

    from kbroker.config.broker import BrokerConfig, Listener
    from kbroker.controller_server import ControllerPlane
    from kbroker.server.controller_listener import ControllerServer

    cfg = BrokerConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                                  "socket.send.buffer.bytes": "49152",
                                  "socket.receive.buffer.bytes": "40960"})
    plane = ControllerPlane(SimpleNamespace(config=cfg), SimpleNamespace(cluster_id="c"), None)
    server = await nursery.start(ControllerServer(plane, [Listener("CONTROLLER", "127.0.0.1", 0)]).run)
    client = await trio.open_tcp_stream("127.0.0.1", server.bound[0][2])
    try:
        with trio.fail_after(10):
            # the accepted side, once its task took the socket fast path
            while not server._conns or next(iter(server._conns))._raw is None:
                await trio.sleep(0.01)
        (conn,) = server._conns
        sock = conn._raw
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) in (49_152, 98_304)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) in (40_960, 81_920)
    finally:
        await client.aclose()
