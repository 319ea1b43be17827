"""Network links the tests control: a TCP forwarder per directed link between two nodes.

``Link(target_port)`` listens on a free loopback port and forwards every connection to
``target_port``; ``cut()`` drops the connections it carries and refuses new ones (accepted,
then closed at once, as a broken network path looks to a client that retries), ``heal()``
lets traffic through again. One thread per link plus two per connection; ``close()`` stops
them. A node sees another node through the link's ``port`` (its own view of the voters),
so cutting both directions between one node and the rest partitions it.
"""
from __future__ import annotations

import socket
import threading


class Link:
    def __init__(self, target_port: int, host: str = "127.0.0.1"):
        self.target = (host, target_port)
        self.server = socket.create_server((host, 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.blocked = False
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        self.blocked = True
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            _close(c)

    def heal(self) -> None:
        self.blocked = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self.server)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            if self.blocked:
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=2)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            src.settimeout(None)
            while True:
                data = src.recv(65536)
                if not data or self.blocked:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src)
            _close(dst)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
