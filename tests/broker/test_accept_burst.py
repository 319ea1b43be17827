"""The accept loop takes every waiting connection at once (kbroker/server/accept.py).

Clients that arrive together must not wait for one scheduler round each: past the listen
backlog the kernel drops their SYNs and they retry seconds later (issue 32's group of 500).
Counted on a real listening socket: one awaited accept, then the burst takes the rest.
"""
from __future__ import annotations

import socket

import trio

from kbroker.server.accept import AcceptBurst


async def test_one_accept_then_the_whole_backlog_without_waiting():
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1", backlog=64)
    port = listener.socket.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(12)]
    try:
        with AcceptBurst(listener) as burst:
            first = await listener.accept()
            rest = burst.drain()
            assert len(rest) == 11
            assert burst.drain() == []              # nothing left: no wait, no error
            # the streams are ordinary trio streams on the clients' connections
            streams = {s.socket.getpeername()[1]: s for s in [first, *rest]}
            assert set(streams) == {c.getsockname()[1] for c in clients}
            clients[5].sendall(b"ping")
            assert await streams[clients[5].getsockname()[1]].receive_some(4) == b"ping"
            for s in [first, *rest]:
                await s.aclose()
        # the duplicate descriptor is closed with the burst; the listener still accepts
        late = socket.create_connection(("127.0.0.1", port))
        (await listener.accept()).socket.close()
        late.close()
    finally:
        for c in clients:
            c.close()
        await listener.aclose()
