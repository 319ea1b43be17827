"""Writing a response's parts to a socket: bytes with ``send_all``, file regions with
``os.sendfile`` (zero copy), waiting for writability on ``EAGAIN``.

``send_parts_raw`` is the connection fast path on a plain (non-blocking) stdlib socket:
consecutive byte parts go out in one ``sendmsg`` (scatter/gather, no joining copy); regions
go with ``os.sendfile``. It only waits when the socket is full. A region of at most
``INLINE_REGION`` bytes is read (``os.pread``, from the page cache) and goes in the same
``sendmsg`` as the bytes around it: a fetch answer of one small batch is then one system
call and one TCP segment instead of three (sendmsg, sendfile, sendmsg for the tagged
fields after the records), and the consumer wakes once for it (issue 32: a linger.ms=0
producer makes every fetch answer one record). Larger regions keep zero copy. (``MSG_MORE`` before a
region was tried: the kernel then held the fetch response's tail for its 200 ms cork
timeout, and consumers slowed to a few MB/s.)

Falls back to copying the region's bytes through Python when the stream has no raw
socket (TLS streams and in-memory test streams: read and sent in 256 KiB chunks) or
``os.sendfile`` is not usable for the pair of descriptors. A failure or cancellation part-way leaves a half-written frame, so callers
must close the connection on any exception from ``send_parts``.
"""
from __future__ import annotations

import errno
import os

import trio

_HAVE_SENDFILE = hasattr(os, "sendfile")
_COALESCE = 64 * 1024
_IOV_MAX = 512
INLINE_REGION = 16 * 1024
_BYTES = (bytes, bytearray, memoryview)


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
    if fd is not None and sock is None:
        # a stream without a socket (TLS): the region goes through it in bounded chunks
        await _send_region_chunked(stream, fd, region)
        return
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


_CHUNK = 256 * 1024


async def _send_region_chunked(stream, fd: int, region) -> None:
    """Read a file region in ``_CHUNK`` pieces and send each through ``stream`` (TLS
    encrypts in user space, so zero copy cannot apply; bounded memory per connection)."""
    sent, length = 0, region.length
    while sent < length:
        chunk = os.pread(fd, min(_CHUNK, length - sent), region.position + sent)
        if not chunk:
            raise trio.BrokenResourceError(f"file region shrank: {sent} of {length} bytes sent")
        await stream.send_all(chunk)
        sent += len(chunk)


async def send_parts_raw(sock, parts) -> None:
    """Write ``parts`` (bytes-like and file regions) to a non-blocking stdlib socket."""
    n = len(parts)
    if n > 1:
        parts = _inline_small_regions(parts)
    elif n == 1 and isinstance(parts[0], _BYTES):
        await _sendmsg_all(sock, parts)
        return
    i = 0
    while i < n:
        part = parts[i]
        if not isinstance(part, _BYTES):
            await _sendfile_raw(sock, part)
            i += 1
            continue
        j = i
        while j < n and j - i < _IOV_MAX and isinstance(parts[j], _BYTES):
            j += 1
        await _sendmsg_all(sock, parts[i:j])
        i = j


def _inline_small_regions(parts: list) -> list:
    """``parts`` with every region of at most ``INLINE_REGION`` bytes replaced by its bytes
    (a short read, e.g. a file cut meanwhile, keeps the region: sendfile reports it)."""
    out = None
    for i, part in enumerate(parts):
        if isinstance(part, _BYTES):
            continue
        length = getattr(part, "length", None)
        fd = getattr(part, "fd", None)
        if length is None or length > INLINE_REGION or not isinstance(fd, int):
            continue
        data = os.pread(fd, length, part.position)
        if len(data) != length:
            continue
        if out is None:
            out = list(parts)
        out[i] = data
    return parts if out is None else out


def inlined(parts: list) -> tuple[list, bool]:
    """``parts`` with their small regions inlined, and whether they are all bytes-like now
    (False when a larger file region stays among them: it goes with ``sendfile``)."""
    if len(parts) > 1:
        parts = _inline_small_regions(parts)
    return parts, all(isinstance(part, _BYTES) for part in parts)


def send_now(sock, buffers: list) -> list:
    """Write ``buffers`` to the non-blocking ``sock`` until all went or the socket is full:
    what is left, as memoryviews (empty when all went). Needs no event loop: the answer
    writer's thread calls it too (kbroker/server/writer.py)."""
    views = [memoryview(b) for b in buffers]
    while views:
        try:
            sent = sock.sendmsg(views if len(views) <= _IOV_MAX else views[:_IOV_MAX])
        except BlockingIOError:
            return views
        while sent:
            first = views[0]
            if sent >= len(first):
                sent -= len(first)
                views.pop(0)
            else:
                views[0] = first[sent:]
                sent = 0
        while views and not len(views[0]):
            views.pop(0)
    return views


async def _sendmsg_all(sock, buffers: list) -> None:
    while buffers := send_now(sock, buffers):
        await trio.lowlevel.wait_writable(sock)


async def _sendfile_raw(sock, region) -> None:
    fd = getattr(region, "fd", None)
    if fd is None:
        fd = getattr(region, "file", None)
        if fd is not None and not isinstance(fd, int):
            fd = fd.fileno()
    if not _HAVE_SENDFILE or fd is None:
        await _sendmsg_all(sock, [region.read_bytes()])
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
                await _sendmsg_all(sock, [region.read_bytes()])
                return
            raise
        if n == 0:
            raise trio.BrokenResourceError(f"file region shrank: {sent} of {length} bytes sent")
        sent += n
