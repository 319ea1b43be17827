"""Receive buffers lent to connections only while they hold bytes (issue 32, item 4).

An idle client connection — one waiting for its next request with nothing of a frame
received — holds no receive buffer: a connection takes one from its server's
:class:`BufferPool` when it is about to read (the socket is readable, or a TLS object
holds bytes) and gives it back as soon as no partial frame is left in it, before it
handles the frames it took out (a long-polling fetch holds none either). Before, each
connection owned a zero-filled buffer from its first byte to its close (16 KiB, 256 KiB
after a read filled it), about 16 of the ~23 KiB an idle connection cost.

Rules kept:
- Two sizes, as before: a connection starts on ``SMALL`` buffers and moves to ``LARGE``
  ones for good after a read filled a small one (a busy client's pipelined requests), so
  a client that stalls in the middle of a small frame pins 16 KiB, not 256.
- Bounded: each size keeps at most ``keep`` free buffers (what a few busy connections
  use at once); a buffer given back to a full free list is dropped. Buffers lent out are
  not bounded here: one per connection with a partial frame, as before the pool.
- A buffer is handed out with whatever bytes the last borrower left in it: a borrower
  reads only what it received itself.
- Not thread-safe, and need not be: one pool per server, used from its trio thread only.

Also the scratch buffer TLS connections read ciphertext into (``kbroker/server/tls.py``):
the ciphertext is copied into the TLS object in the same synchronous step, so one buffer
per pool serves every TLS connection (it was 64 KiB per connection).
"""
from __future__ import annotations

SMALL = 16 * 1024
LARGE = 256 * 1024
CIPHER_READ = 64 * 1024     # ciphertext read from a socket per system call


class BufferPool:
    """Free lists of receive buffers (``bytearray`` with a ``memoryview`` over it) of the
    two sizes, plus one TLS ciphertext scratch buffer; ``statistics()`` counts them."""

    def __init__(self, keep_small: int = 64, keep_large: int = 16):
        self._free: dict[int, list] = {SMALL: [], LARGE: []}
        self._keep = {SMALL: keep_small, LARGE: keep_large}
        self.lent = 0          # buffers out with connections now
        self.allocated = 0     # buffers made (a reused one is not counted again)
        self.dropped = 0       # given back to a full free list
        self._cipher: memoryview | None = None

    def take(self, size: int) -> tuple[bytearray, memoryview]:
        """A buffer of ``size`` bytes (``SMALL`` or ``LARGE``) and a view over it."""
        free = self._free[size]
        self.lent += 1
        if free:
            return free.pop()
        self.allocated += 1
        buf = bytearray(size)
        return buf, memoryview(buf)

    def give(self, buf: bytearray, view: memoryview) -> None:
        """Back from a connection; its holder keeps no reference to either."""
        self.lent -= 1
        free = self._free.get(len(buf))
        if free is None or len(free) >= self._keep[len(buf)]:
            self.dropped += 1
            return
        free.append((buf, view))

    def cipher_view(self) -> memoryview:
        """The TLS read scratch buffer (``CIPHER_READ`` bytes), made on first use: valid
        only until the caller next yields to the scheduler."""
        if self._cipher is None:
            self._cipher = memoryview(bytearray(CIPHER_READ))
        return self._cipher

    def statistics(self) -> dict:
        return {"lent": self.lent, "allocated": self.allocated, "dropped": self.dropped,
                "free_small": len(self._free[SMALL]), "free_large": len(self._free[LARGE])}


def pool_of(server) -> BufferPool:
    """The server's pool (``server.receive_buffers``), made on first use (the client and
    controller listeners' servers, and any object a test passes as one)."""
    pool = getattr(server, "receive_buffers", None)
    if pool is None:
        pool = BufferPool()
        try:
            server.receive_buffers = pool
        except AttributeError:
            pass
    return pool
