"""A minimal raw-frame Kafka client over trio sockets (for protocol-level tests)."""
from __future__ import annotations

import struct

import trio

from kbroker.wire import messages
from kbroker.wire.protocol import decode_response, encode_request


class RawClient:
    def __init__(self, stream: trio.SocketStream):
        self.stream = stream
        self.correlation_id = 0
        self._buf = bytearray()

    @classmethod
    async def connect(cls, server_or_port) -> "RawClient":
        port = server_or_port if isinstance(server_or_port, int) else server_or_port.port
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def recv_frame(self) -> bytes | None:
        """The next response frame (without size), or None on EOF."""
        while True:
            if len(self._buf) >= 4:
                size = struct.unpack_from(">i", self._buf)[0]
                if len(self._buf) >= 4 + size:
                    frame = bytes(self._buf[4:4 + size])
                    del self._buf[:4 + size]
                    return frame
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self._buf += data

    async def request(self, name: str, version: int, client_id: str | None = "raw-test", **fields):
        cls = messages.get(name + "Request")
        body = cls(**fields)
        self.correlation_id += 1
        api_key = cls._message.api_key
        await self.send_raw(encode_request(api_key, version, self.correlation_id, client_id, body))
        frame = await self.recv_frame()
        assert frame is not None, f"connection closed instead of answering {name} v{version}"
        corr, resp = decode_response(frame, api_key, version)
        assert corr == self.correlation_id
        return resp

    async def is_closed(self, timeout: float = 5) -> bool:
        """True when the broker closes the connection (EOF) within ``timeout``."""
        with trio.move_on_after(timeout):
            try:
                while True:
                    data = await self.stream.receive_some(65536)
                    if not data:
                        return True
            except trio.BrokenResourceError:
                return True
        return False

    async def aclose(self) -> None:
        await self.stream.aclose()
