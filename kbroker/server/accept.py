"""Taking a burst of connections from the listen backlog at once (issue 32).

``trio``'s ``SocketListener.accept`` yields to the scheduler after every connection: on a
busy node one accepted connection costs a whole round of every runnable task, and clients
arriving together (a consumer group of 500 members starting at once) overflow the listen
backlog (``socket.listen.backlog.size``, 50 as in Kafka). The kernel then drops their SYNs
and the clients retry after 1, 3, 7, 15 s: the last members joined 15 s late. Kafka's
acceptor thread takes every ready connection in a tight loop; so does this: after each
``accept`` the accept loop takes what else is waiting, up to ``LIMIT``, without waiting,
through a duplicate of the listening descriptor (non-blocking ``accept``; the streams are
ordinary ``trio.SocketStream``s).
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

    def drain(self) -> list:
        """The connections waiting now (at most ``LIMIT``), as trio streams."""
        out = []
        raw = self._raw
        while raw is not None and len(out) < LIMIT:
            try:
                conn, _ = raw.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break                    # EMFILE and friends: the awaited accept reports them
            out.append(trio.SocketStream(trio.socket.from_stdlib_socket(conn)))
        return out
