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
