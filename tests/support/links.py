"""Network links the tests control: a TCP forwarder per link toward one node's listener.

``Link(target_port)`` listens on a free loopback port and forwards every connection to
``target_port``; ``cut()`` drops the connections it carries and refuses new ones (accepted,
then closed at once, as a broken network path looks to a client that retries), ``heal()``
lets traffic through again. One thread per link plus up to three per connection; ``close()`` stops
them. A node sees another node through the link's ``port`` (its own view of the voters),
so cutting both directions between one node and the rest partitions it.

A link shared by several callers (one advertised inter-broker endpoint that every other
node connects to) can tell them apart: ``classify`` maps the first bytes of a connection
(a Kafka request: size, api key, version, correlation id, client id) to a source, e.g.
the node id in a replica fetcher's client id, and ``cut(source)`` / ``heal(source)`` then
block that source only -- the one-way cut "node i cannot reach node j" (connections i
opens toward j fail; j's own connections toward i still work).
"""
from __future__ import annotations

import socket
import struct
import threading
import time


def kafka_client_id(head: bytes) -> str | None:
    """The client id of the first Kafka request in ``head`` (None if not there yet)."""
    if len(head) < 14:
        return None
    n = struct.unpack_from(">h", head, 12)[0]
    if n < 0:
        return ""
    if len(head) < 14 + n:
        return None
    return head[14:14 + n].decode("utf-8", "replace")


class Link:
    def __init__(self, target_port: int, host: str = "127.0.0.1", classify=None):
        self.target = (host, target_port)
        self.server = socket.create_server((host, 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.blocked = False
        self.blocked_sources: set = set()
        self.classify = classify
        self._conns: list[tuple[object, socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self, source=None) -> None:
        """Cut the whole link, or only the connections of ``source`` (with ``classify``)."""
        with self._lock:
            if source is None:
                self.blocked = True
                drop, self._conns = self._conns, []
            else:
                self.blocked_sources.add(source)
                drop = [c for c in self._conns if c[0] == source]
                self._conns = [c for c in self._conns if c[0] != source]
        for _, a, b in drop:
            _close(a)
            _close(b)

    def heal(self, source=None) -> None:
        with self._lock:
            if source is None:
                self.blocked = False
                self.blocked_sources.clear()
            else:
                self.blocked_sources.discard(source)

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self.server)

    def _is_blocked(self, source) -> bool:
        return self.blocked or (source is not None and source in self.blocked_sources)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._open, args=(client,), daemon=True).start()

    def _open(self, client: socket.socket) -> None:
        if self.blocked:
            _close(client)
            return
        head, source = b"", None
        if self.classify is not None:
            # peek at the first request to learn who is calling (bounded wait and size)
            client.settimeout(5)
            try:
                while len(head) < 4096:
                    got = client.recv(4096 - len(head))
                    if not got:
                        break
                    head += got
                    cid = kafka_client_id(head)
                    if cid is not None:
                        source = self.classify(cid)
                        break
            except OSError:
                _close(client)
                return
        if self._is_blocked(source):
            _close(client)
            return
        try:
            upstream = socket.create_connection(self.target, timeout=2)
            if head:
                upstream.sendall(head)
        except OSError:
            _close(client)
            return
        with self._lock:
            if self._is_blocked(source):
                _close(client)
                _close(upstream)
                return
            entry = (source, client, upstream)
            self._conns.append(entry)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(a, b, source, entry), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, source, entry) -> None:
        try:
            src.settimeout(None)
            while True:
                data = src.recv(65536)
                if not data or self._is_blocked(source):
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src)
            _close(dst)
            with self._lock:
                if entry in self._conns:
                    self._conns.remove(entry)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
