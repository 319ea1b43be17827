"""A tap on one path between two nodes: a TCP forwarder that counts the Kafka requests passing
through it by API key, so a test sees which requests a node sends to the address its
configuration names for a peer -- and, by their absence, which it sends somewhere else (a
follower's Fetch going to the endpoint its leader announced, KIP-853).

    tap = Tap(("127.0.0.1", controller_port))    # listens on a free loopback port
    ... name ("127.0.0.1", tap.port) in the other node's controller.quorum.voters ...
    tap.count(1)                                  # Fetch requests forwarded so far

It observes: every byte goes through unchanged, in order; a connection closed on one side is
closed on the other; ``reset()`` closes what it carries, as a network hiccup would. One thread
accepts, two more per connection; ``close()`` stops accepting and closes what it carries. A
request is counted before it is forwarded, and ``reset()`` returns once the threads of the
connections it closed have ended, so no request that went through before it is counted after
it. (Cutting traffic is ``tests/support/netns.py``'s job.)
"""
from __future__ import annotations

import collections
import socket
import struct
import threading

MAX_FRAME = 64 * 1024 * 1024


class Tap:
    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1"):
        self.upstream = upstream
        self.server = socket.create_server((host, 0))
        self.port = self.server.getsockname()[1]
        self._counts: collections.Counter = collections.Counter()
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def count(self, api_key: int) -> int:
        """Requests with ``api_key`` forwarded so far."""
        with self._lock:
            return self._counts[api_key]

    def counts(self) -> dict[int, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        """Close the connections it carries (it keeps accepting new ones): callers connect
        again, and choose again where to. Returns once their threads are done: a request read
        before the reset is counted by then, not later."""
        with self._lock:
            socks, self._socks = self._socks, set()
            threads, self._threads = self._threads, set()
        for s in socks:
            _close(s)
        for t in threads:
            t.join(60)
            assert not t.is_alive(), "a tap connection's thread outlived its closed sockets"

    def close(self) -> None:
        self._closed = True
        _close(self.server)
        self.reset()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            threads = (threading.Thread(target=self._requests, args=(client, upstream), daemon=True),
                       threading.Thread(target=self._copy, args=(upstream, client), daemon=True))
            with self._lock:
                if self._closed:
                    _close(client)
                    _close(upstream)
                    return
                self._socks |= {client, upstream}
                self._threads = {t for t in self._threads if t.is_alive()} | set(threads)
                for t in threads:      # started under the lock: reset() joins only started ones
                    t.start()

    def _requests(self, src: socket.socket, dst: socket.socket) -> None:
        """Frame by frame (size, then api key first in the header), counted, then forwarded."""
        try:
            while True:
                head = _read(src, 4)
                if head is None:
                    break
                size = struct.unpack(">i", head)[0]
                if not 2 <= size <= MAX_FRAME:
                    break
                frame = _read(src, size)
                if frame is None:
                    break
                with self._lock:
                    self._counts[struct.unpack_from(">h", frame)[0]] += 1
                dst.sendall(head + frame)
        except OSError:
            pass
        finally:
            self._drop(src, dst)

    def _copy(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(src, dst)

    def _drop(self, *socks: socket.socket) -> None:
        with self._lock:
            self._socks -= set(socks)
        for s in socks:
            _close(s)


def _read(s: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        got = s.recv(n - len(buf))
        if not got:
            return None
        buf += got
    return bytes(buf)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
