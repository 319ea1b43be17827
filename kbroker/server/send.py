"""Writing a response's parts to a socket: bytes with ``send_all``, file regions with
``os.sendfile`` (zero copy), waiting for writability on ``EAGAIN``.

Falls back to copying the region's bytes through Python when the stream has no raw
socket (tests with in-memory streams) or ``os.sendfile`` is not usable for the pair of
descriptors. A failure or cancellation part-way leaves a half-written frame, so callers
must close the connection on any exception from ``send_parts``.
"""
from __future__ import annotations

import errno
import os

import trio

_HAVE_SENDFILE = hasattr(os, "sendfile")
_COALESCE = 64 * 1024


async def send_parts(stream, parts) -> None:
    pending = bytearray()
    for part in parts:
        if isinstance(part, (bytes, bytearray, memoryview)):
            pending += part
            if len(pending) >= _COALESCE:
                await stream.send_all(pending)
                pending = bytearray()
            continue
        if pending:
            await stream.send_all(pending)
            pending = bytearray()
        await _send_region(stream, part)
    if pending:
        await stream.send_all(pending)


async def _send_region(stream, region) -> None:
    sock = getattr(stream, "socket", None)
    fd = getattr(region, "fd", None)
    if fd is None:
        fd = getattr(region, "file", None)
        if fd is not None and not isinstance(fd, int):
            fd = fd.fileno()
    if not _HAVE_SENDFILE or sock is None or fd is None:
        await stream.send_all(region.read_bytes())
        return
    out_fd = sock.fileno()
    sent = 0
    length = region.length
    while sent < length:
        try:
            n = os.sendfile(out_fd, fd, region.position + sent, length - sent)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        except OSError as e:
            if e.errno in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP) and sent == 0:
                await stream.send_all(region.read_bytes())
                return
            raise
        if n == 0:
            raise trio.BrokenResourceError(f"file region shrank: {sent} of {length} bytes sent")
        sent += n
        await trio.lowlevel.checkpoint_if_cancelled()
