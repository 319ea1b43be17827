"""Idle client connections without a task of their own (issue 32, item 4: RSS per connection).

A plaintext connection parked on the socket fast path (``Connection.waiting_since`` set:
nothing of a frame received, nothing owed) still costs its trio task: the task, its
coroutine frames from ``_run_connection`` down to trio's ``wait_readable`` (eight of
them), the epoll waiter and its abort closure — about 3.5 of the ~4.6 KiB an idle
connection cost, where Kafka's was ~3 KiB at 10,000 connections. So a connection parked
for ``kbroker.connections.dormant.after.ms`` (250 ms; 0: never) gives its task up:
:meth:`Dormancy.sweep` ends its wait (``trio.lowlevel.notify_closing``, which also takes
the socket out of trio's epoll set), the task returns without closing anything, and the
socket goes into this server's own epoll set (level-triggered). One task
(:meth:`Dormancy.watch`) waits on that set's descriptor; when a dormant socket becomes
readable (a request, or the peer's close) it is taken out of the set and the connection
gets a new task in the connections nursery, which goes on as from its first read (the
loop's state at a park is its initial state: no buffer, nothing owed). A dormant
connection keeps its ``Connection`` (slotted) and the stdlib socket: ~0.7 KiB.

Rules kept:
- Only connections that have been silent for ``after_s`` are moved: a client sending
  several requests a second keeps its task, and its latency is not touched (a
  dormant connection's next request costs one more scheduling round and a task start).
- A connection holding part of a frame keeps its task (the loop waits again when the
  sweep's notice finds bytes in its buffer): the bytes live in that task's buffer.
- TLS connections keep their task (their TLS object may hold decrypted bytes).
- A dormant connection stays in the server's connection set with its ``waiting_since``:
  ``connections.max.idle.ms`` (kbroker/server/idle.py) and shutdown find it there and
  :meth:`wake` it to close, through the same task path as any other connection (close
  hooks, quotas, the connection count).
- Nothing is moved while the server drains; the sweep does not yield while it walks
  the connections (none starts or stops waiting under it).
"""
from __future__ import annotations

import select

import trio

_EVENTS = select.EPOLLIN | select.EPOLLRDHUP
_MAX_EVENTS = 256


class Dormancy:
    """The dormant connections of one server (fd → connection) and their epoll set.
    ``spawn(conn)`` starts a connection's task in the server's connections nursery."""

    def __init__(self, spawn, after_s: float):
        self._spawn = spawn
        self.after_s = after_s
        self._epoll = select.epoll()
        self._by_fd: dict[int, object] = {}
        # connections with a task that may give it up (plaintext, on the socket fast
        # path): what a sweep looks at, so it costs nothing per dormant connection
        self.awake: set = set()
        self.noticed = 0    # waits a sweep ended (a connection holding part of a frame
                            # keeps its task and waits again)
        self.moved = 0      # connections that gave their task up
        self.woken = 0      # connections given a task again

    def __len__(self) -> int:
        return len(self._by_fd)

    def close(self) -> None:
        self._epoll.close()

    def statistics(self) -> dict:
        return {"dormant": len(self._by_fd), "awake": len(self.awake), "noticed": self.noticed,
                "moved": self.moved, "woken": self.woken}

    # ------------------------------------------------------------------ moving in
    def sweep(self, now: float, draining: bool = False) -> int:
        """End the waits of the awake connections parked since ``now - after_s`` or
        earlier; their tasks then return and :meth:`adopt` them. Returns how many."""
        if draining:
            return 0
        oldest = now - self.after_s
        n = 0
        for conn in self.awake:
            since = conn.waiting_since
            if since is not None and since <= oldest and not conn.dormant:
                conn.dormant = True
                conn.asleep_since = since
                trio.lowlevel.notify_closing(conn.raw_socket())
                n += 1
        self.noticed += n
        return n

    def adopt(self, conn) -> None:
        """A connection whose task ended for dormancy: its socket joins the epoll set."""
        fd = conn.raw_socket().fileno()
        self._epoll.register(fd, _EVENTS)
        self._by_fd[fd] = conn
        self.awake.discard(conn)
        conn.waiting_since = conn.asleep_since     # for connections.max.idle.ms
        self.moved += 1

    # ------------------------------------------------------------------ waking
    def wake(self, conn, *, expired: bool = False) -> None:
        """Give a dormant connection its task again (``expired``: to close it, for
        ``connections.max.idle.ms`` or shutdown)."""
        fd = conn.raw_socket().fileno()
        if self._by_fd.pop(fd, None) is None:
            return
        self._epoll.unregister(fd)
        conn.dormant = False
        conn.expired = expired
        if not expired:
            conn.waiting_since = None
        self.woken += 1
        self.awake.add(conn)
        self._spawn(conn)

    async def watch(self) -> None:
        """Forever: wake the dormant connections whose sockets became readable."""
        epoll = self._epoll
        by_fd = self._by_fd
        while True:
            await trio.lowlevel.wait_readable(epoll.fileno())
            for fd, _ in epoll.poll(0, _MAX_EVENTS):
                conn = by_fd.get(fd)
                if conn is not None:
                    self.wake(conn)
                else:           # not ours any more (cannot happen; never spin on it)
                    try:
                        epoll.unregister(fd)
                    except OSError:
                        pass

    def closed(self, conn) -> None:
        """A connection closed (its task's end)."""
        self.awake.discard(conn)

    async def run_sweeps(self, server) -> None:
        """Forever, every half ``after_s``: :meth:`sweep` the awake connections."""
        while True:
            await trio.sleep(self.after_s / 2)
            self.sweep(trio.current_time(), server.draining)
