"""One raw request frame to a broker and its raw answer, on a blocking socket: for tests of
what a broker says (or whether it closes) before a client library would get that far."""
from __future__ import annotations

import socket


def exchange(addr: str, frame: bytes, timeout: float = 10) -> bytes:
    """Send ``frame`` to ``host:port``; the first whole answer frame (with its size), or what
    arrived before the broker closed the connection (b"" when it closed at once)."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(frame)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
            if len(data) >= 4 and len(data) - 4 >= int.from_bytes(data[:4], "big"):
                return data
