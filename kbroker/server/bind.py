"""Binding a listener's host the way Kafka does.

Kafka binds ``listeners`` host names through one ``InetSocketAddress``: a name resolves to a
single address (IPv4 first by the JVM's default). trio's ``open_tcp_listeners`` binds every
address a name resolves to and fails when any of them cannot be bound — ``localhost`` in a
container without IPv6 resolves to ``127.0.0.1`` and ``::1`` and the second bind fails
(``Cannot assign requested address``). Here a host name binds its first address that can be
bound; an empty host or a wildcard keeps trio's behaviour (every family).
"""
from __future__ import annotations

import socket

import trio

WILDCARDS = ("", "0.0.0.0", "::")


async def open_tcp_listeners(port: int, host: str | None, backlog: int | None = None) -> list:
    if not host or host in WILDCARDS:
        return await trio.open_tcp_listeners(port, host=host or None, backlog=backlog)
    infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    last: OSError | None = None
    for *_, addr in infos:
        try:
            return await trio.open_tcp_listeners(port, host=addr[0], backlog=backlog)
        except OSError as e:
            last = e
    raise last if last is not None else OSError(f"{host} resolves to no address")
