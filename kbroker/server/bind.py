"""Binding a listener's host the way Kafka does.

Kafka binds ``listeners`` host names through one ``InetSocketAddress``: a name resolves to a
single address (IPv4 first by the JVM's default). trio's ``open_tcp_listeners`` binds every
address a name resolves to and fails when any of them cannot be bound — ``localhost`` in a
container without IPv6 resolves to ``127.0.0.1`` and ``::1`` and the second bind fails
(``Cannot assign requested address``). Here a host name binds its first address that can be
bound; an empty host or a wildcard keeps trio's behaviour (every family).

``socket.receive.buffer.bytes`` (102,400 by default, -1: the system's default) is set on the
listening sockets, as Kafka sets it on its server socket channel: accepted connections
inherit it. Left to Linux's autotuning (up to ``net.ipv4.tcp_rmem``'s maximum, 32 MiB
here), a connection's receive queue can hold tens of thousands of small pipelined produce
requests that a busy broker has not read yet: a linger.ms=0 producer never feels
back-pressure, keeps sending one record per request, and the latency of every record grows
with the queue (issue 32: p50 about 1 s at 10,000 records/s). With Kafka's bound the
producer's socket fills, records wait in the client and leave in larger requests.

``socket.send.buffer.bytes`` (102,400, -1: the system's default) is each accepted
connection's ``SO_SNDBUF``, as Kafka's ``Acceptor`` sets it on every socket it accepts. It is
set here on the listening socket, which Linux copies to the sockets it accepts: the same
value on every connection without a system call per accept. Both buffers and
``socket.listen.backlog.size`` apply to every listener Kafka's acceptors serve, the
controller listeners included (``kbroker/server/controller_listener.py``).
"""
from __future__ import annotations

import socket

import trio

WILDCARDS = ("", "0.0.0.0", "::")


async def open_tcp_listeners(port: int, host: str | None, backlog: int | None = None,
                             receive_buffer: int = -1, send_buffer: int = -1) -> list:
    """trio ``SocketListener``s for ``host:port``; ``receive_buffer`` > 0 sets their (and so
    their connections') ``SO_RCVBUF``, ``send_buffer`` > 0 their ``SO_SNDBUF``."""
    listeners = await _open(port, host, backlog)
    for option, size in ((socket.SO_RCVBUF, receive_buffer), (socket.SO_SNDBUF, send_buffer)):
        if size is not None and size > 0:
            for listener in listeners:
                listener.socket.setsockopt(socket.SOL_SOCKET, option, size)
    return listeners


def buffer_settings(config) -> dict:
    """The keyword arguments of :func:`open_tcp_listeners` a node's config asks for: Kafka's
    ``socket.listen.backlog.size``, ``socket.receive.buffer.bytes`` and
    ``socket.send.buffer.bytes``, the same for every listener."""
    return {"backlog": config.get("socket.listen.backlog.size"),
            "receive_buffer": config.get("socket.receive.buffer.bytes"),
            "send_buffer": config.get("socket.send.buffer.bytes")}


async def _open(port: int, host: str | None, backlog: int | None) -> list:
    if not host or host in WILDCARDS:
        return await trio.open_tcp_listeners(port, host=host or None, backlog=backlog)
    # an ASCII name as bytes: given text, the socket module's getaddrinfo runs it through the
    # "idna" codec first, and importing that codec (with stringprep) was ~1 M instructions of
    # every start; for ASCII the codec gives the same bytes (trio handles other names)
    infos = await trio.socket.getaddrinfo(_ascii(host), port, type=socket.SOCK_STREAM)
    last: OSError | None = None
    for *_, addr in infos:
        try:
            return await trio.open_tcp_listeners(port, host=_ascii(addr[0]), backlog=backlog)
        except OSError as e:
            last = e
    raise last if last is not None else OSError(f"{host} resolves to no address")


def _ascii(host: str) -> str | bytes:
    return host.encode("ascii") if host.isascii() else host
