"""kbroker.server.send.send_parts_raw: a response's parts on a non-blocking socket, bytes
gathered into ``sendmsg`` and file regions by ``os.sendfile``, except small regions, which
go inline in the same ``sendmsg`` as the bytes around them (one system call per small
fetch answer)."""
import os
import socket

import trio

from kbroker.log.region import FileRegion
from kbroker.server.send import INLINE_REGION, send_parts_raw


class CountingSocket(socket.socket):
    """A real socket that counts its ``sendmsg`` calls."""

    sendmsg_calls = 0

    def sendmsg(self, *args, **kwargs):
        self.sendmsg_calls += 1
        return super().sendmsg(*args, **kwargs)


def _pair():
    a, b = socket.socketpair()
    sender = CountingSocket(a.family, a.type, fileno=a.detach())
    sender.setblocking(False)
    return sender, b


def _region(tmp_path, payload: bytes, offset: int = 7) -> tuple[FileRegion, object]:
    path = tmp_path / "segment.log"
    path.write_bytes(b"x" * offset + payload + b"tail")
    f = open(path, "rb")
    return FileRegion(f.fileno(), offset, len(payload), 0), f


def _receive(sock, n: int) -> bytes:
    got = bytearray()
    while len(got) < n:
        chunk = sock.recv(n - len(got))
        assert chunk, "closed early"
        got += chunk
    return bytes(got)


async def test_a_small_region_goes_in_one_sendmsg_with_the_bytes_around_it(tmp_path):
    payload = os.urandom(1024)
    region, f = _region(tmp_path, payload)
    sender, receiver = _pair()
    try:
        await send_parts_raw(sender, [b"head", region, b"trailer"])
        assert sender.sendmsg_calls == 1
        assert _receive(receiver, 4 + 1024 + 7) == b"head" + payload + b"trailer"
    finally:
        f.close()
        sender.close()
        receiver.close()


async def test_a_large_region_keeps_sendfile(tmp_path):
    payload = os.urandom(INLINE_REGION + 1)
    region, f = _region(tmp_path, payload)
    sender, receiver = _pair()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_parts_raw, sender, [b"head", region, b"trailer"])
            got = await trio.to_thread.run_sync(_receive, receiver, 4 + len(payload) + 7)
        assert got == b"head" + payload + b"trailer"
        # the bytes before and after the region: one sendmsg each, the region by sendfile
        assert sender.sendmsg_calls == 2
    finally:
        f.close()
        sender.close()
        receiver.close()
