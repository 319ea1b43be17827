"""Taking a burst of connections from the listen backlog at once (issue 32).

``trio``'s ``SocketListener.accept`` yields to the scheduler after every connection: on a
busy node one accepted connection costs a whole round of every runnable task, and clients
arriving together (a consumer group of 500 members starting at once) overflow the listen
backlog (``socket.listen.backlog.size``, 50 as in Kafka). The kernel then drops their SYNs
and the clients retry after 1, 3, 7, 15 s: the last members joined 15 s late. Kafka's
acceptor thread takes every ready connection in a tight loop; so does this: after each
awaited ``accept`` the accept loop takes what else is waiting, one at a time and each after
its ``max.connections`` check, up to ``LIMIT`` before it yields again, through a duplicate of
the listening descriptor (non-blocking ``accept``; the streams are ordinary
``trio.SocketStream``s).
"""
from __future__ import annotations

import os
import socket

import trio

LIMIT = 256


class AcceptBurst:
    """Non-blocking accepts on a duplicate of a listener's socket; a context manager that
    closes the duplicate (so the port is not held open after the listener closes)."""

    def __init__(self, listener):
        self._raw: socket.socket | None = None
        self._left = LIMIT
        sock = getattr(listener, "socket", None)
        try:
            fd = os.dup(sock.fileno())
        except (AttributeError, OSError, TypeError):
            return                       # not a socket listener: accept one at a time
        self._raw = socket.socket(sock.family, sock.type, fileno=fd)
        self._raw.setblocking(False)

    def __enter__(self) -> "AcceptBurst":
        return self

    def __exit__(self, *exc) -> None:
        if self._raw is not None:
            self._raw.close()
            self._raw = None

    def refill(self) -> None:
        """After an awaited accept (a yield): up to ``LIMIT`` more may be taken at once."""
        self._left = LIMIT

    def take(self):
        """A connection waiting now, as a trio stream, or None (none waiting, this burst's
        ``LIMIT`` reached, or an error the next awaited ``accept`` will report)."""
        raw = self._raw
        if raw is None or self._left <= 0:
            return None
        try:
            conn, _ = raw.accept()
        except OSError:                  # BlockingIOError: nothing waiting
            return None
        self._left -= 1
        return trio.SocketStream(trio.socket.from_stdlib_socket(conn))

    def drain(self) -> list:
        """Every connection waiting now, within this burst's ``LIMIT``."""
        out = []
        while (stream := self.take()) is not None:
            out.append(stream)
        return out
