"""Many Kafka-protocol connections from one process, without a client library per connection.

The scale rows need thousands of connections, group members and idempotent producers at
once; a librdkafka instance per member would bring four threads each and measure the
client more than the broker. Here every connection is a non-blocking socket driven by one
`selectors` loop; requests are encoded and answers decoded with kbroker's wire codec
(`kbroker.wire.protocol`), which is only the client side here: the broker under test is
either kbroker or Kafka. Each answer is handed to the callback given with its request.
A connection the broker's side resets or closes raises ConnectionError out of the loop,
unless the connection has an `on_error` callback (a client that reconnects, as the group
row's members do): then it is closed and the callback gets the error.
"""
from __future__ import annotations

import selectors
import socket
import struct
import time
from typing import Callable

from kbroker.wire.protocol import decode_response, encode_request

CLIENT_ID = "kbroker-bench-scale"


class Conn:
    """One connection: requests in order, answers matched by correlation id."""

    def __init__(self, loop: "Loop", host: str, port: int):
        self.loop = loop
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.connect_ex((host, port))
        self.out = bytearray()
        self.inbuf = bytearray()
        self.pending: dict[int, tuple[int, int, Callable]] = {}
        self.next_id = 1
        self.closed = False
        self.on_error: Callable[[Exception], None] | None = None
        loop.sel.register(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, self)

    def request(self, api_key: int, version: int, body, callback: Callable) -> None:
        cid = self.next_id
        self.next_id += 1
        self.pending[cid] = (api_key, version, callback)
        self.out += encode_request(api_key, version, cid, CLIENT_ID, body)
        self._want_write(True)

    def _want_write(self, on: bool) -> None:
        if not self.closed:
            self.loop.sel.modify(self.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0), self)

    def on_event(self, mask: int) -> None:
        if self.on_error is None:
            return self._on_event(mask)
        try:
            self._on_event(mask)
        except ConnectionError as exc:      # reset, broken pipe, closed by the broker
            self.close()
            self.on_error(exc)

    def _on_event(self, mask: int) -> None:
        if mask & selectors.EVENT_WRITE and self.out:
            try:
                n = self.sock.send(self.out)
            except (BlockingIOError, InterruptedError):
                n = 0
            del self.out[:n]
        if not self.out:
            self._want_write(False)
        if mask & selectors.EVENT_READ:
            try:
                data = self.sock.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                self.close()
                raise ConnectionError("the broker closed a connection")
            self.inbuf += data
            while len(self.inbuf) >= 4:
                (size,) = struct.unpack_from(">i", self.inbuf, 0)
                if len(self.inbuf) < 4 + size:
                    break
                frame = bytes(self.inbuf[4:4 + size])
                del self.inbuf[:4 + size]
                (cid,) = struct.unpack_from(">i", frame, 0)
                api_key, version, callback = self.pending.pop(cid)
                callback(decode_response(frame, api_key, version)[1])

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.loop.sel.unregister(self.sock)
            self.sock.close()


class Loop:
    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.timers: list[tuple[float, Callable]] = []

    def connect(self, host: str, port: int) -> Conn:
        return Conn(self, host, port)

    def later(self, delay: float, fn: Callable) -> None:
        self.timers.append((time.monotonic() + delay, fn))

    def run_until(self, done: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f"not done after {timeout:.0f} s")
            due = [t for t in self.timers if t[0] <= now]
            if due:
                self.timers = [t for t in self.timers if t[0] > now]
                for _, fn in due:
                    fn()
                continue
            wait = min([t[0] for t in self.timers] + [now + 0.05]) - now
            for key, mask in self.sel.select(max(0.0, wait)):
                key.data.on_event(mask)

    def close(self) -> None:
        for key in list(self.sel.get_map().values()):
            key.data.close()
        self.sel.close()
