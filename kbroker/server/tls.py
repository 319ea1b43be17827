"""TLS on the connection's socket fast path: the stdlib's ``SSLObject`` over memory BIOs.

A TLS listener's connection (SSL, SASL_SSL) runs the same read loop as a plaintext one
(``Connection._loop_socket``: one reusable receive buffer, frames received straight into
their own buffers, pipelined produce answers written together); :class:`TlsSocket` stands
in for the raw socket there. It looks like a non-blocking socket to that loop —
``recv_into`` fills the caller's buffer with plaintext or raises ``BlockingIOError`` when
neither the TLS object nor the socket has anything, ``fileno`` is the socket's for
``wait_readable`` — and ``send_parts`` encrypts a response's parts and writes them.

Why not ``trio.SSLStream``: the profile of a TLS produce load (``benchmarks/README.md``,
"TLS produce") showed the broker spending ~13× its plaintext CPU per byte, most of it not
in OpenSSL: one ``receive_some`` await per TLS record (≤ 16 KiB) with its cancel scopes and
locks, 16 KiB reads of ciphertext, and ``FrameDecoder`` copying every record into a
growing buffer and out again. Here one call decrypts every record already received into
the caller's buffer (ciphertext read 64 KiB per system call, plaintext written in place by
the ``read(n, buffer)`` of the C object under ``SSLObject``, one TLS record per call), and a
response's small parts become one TLS record instead of one each.

Rules kept: the handshake runs under the caller's deadline and a failure raises
``ssl.SSLError``/``OSError`` for one log line; a peer's TCP close (with or without
``close_notify``) reads as end of stream (0), a corrupt record raises :class:`TlsError`
(the connection closes with one log line); memory per connection is bounded and
an idle one holds no buffer of its own: ciphertext is read into the server's one scratch
buffer (``BufferPool.cipher_view``, kbroker/server/buffers.py; it was 64 KiB per
connection) and copied into the TLS object in the same synchronous step, a file region is
encrypted in 256 KiB chunks through a buffer borrowed from the pool for the length of
that region, ciphertext is written out at least every 256 KiB. A failed or cancelled ``send_parts`` leaves a half-written
frame: the caller closes the connection, as for plaintext. Zero copy (``os.sendfile``)
cannot apply to encrypted bytes and stays on the plaintext listeners.
"""
from __future__ import annotations

import os
import ssl

import trio

from .buffers import LARGE, BufferPool

_COALESCE = 16 * 1024       # small response parts gathered into one TLS record up to this
_FLUSH = 256 * 1024         # ciphertext queued before it is written out
_CHUNK = LARGE              # file region bytes encrypted per step (a pool buffer)


class TlsError(trio.BrokenResourceError):
    """The peer sent something TLS refuses (a corrupt record, a bad alert): close."""


def _region_fd(region) -> int | None:
    fd = getattr(region, "fd", None)
    if fd is None:
        fd = getattr(region, "file", None)
        if fd is not None and not isinstance(fd, int):
            fd = fd.fileno()
    return fd


class TlsSocket:
    """Server side of one TLS connection on a non-blocking stdlib socket ``sock``; buffers
    come from ``pool`` (the server's)."""

    def __init__(self, sock, context: ssl.SSLContext, pool: BufferPool | None = None):
        self.sock = sock
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self.obj = context.wrap_bio(self._in, self._out, server_side=True)
        # the C object's read (``SSLObject.read`` is a Python wrapper around it: one frame
        # more per TLS record, and a record is one call; librdkafka's are ~2.2 KB)
        self._read = getattr(self.obj, "_sslobj", self.obj).read
        self._pool = pool if pool is not None else BufferPool(0, 0)
        self._cview = self._pool.cipher_view()   # shared: used only between two yields
        self._unsent = b""       # ciphertext a non-blocking write could not take
        self._eof = False        # the peer closed its side of the TCP connection

    def fileno(self) -> int:
        return self.sock.fileno()

    def getpeercert(self, binary_form: bool = False):
        return self.obj.getpeercert(binary_form)

    # ------------------------------------------------------------------ reading
    def _fill(self) -> int:
        """One non-blocking read of ciphertext into the TLS object; raises
        ``BlockingIOError`` when the socket has nothing. 0: the peer closed."""
        if self._eof:
            return 0
        n = self.sock.recv_into(self._cview)
        if n:
            self._in.write(self._cview[:n])
        else:
            self._eof = True
            self._in.write_eof()
        return n

    def recv_into(self, view) -> int:
        """Plaintext into ``view``: everything already received, up to its size; 0 at the
        end of the stream; ``BlockingIOError`` when nothing is there yet."""
        read = self._read
        want = len(view)
        got = 0
        while got < want:
            try:
                n = read(want - got, view[got:] if got else view)
            except ssl.SSLWantReadError:
                if self._out.pending:
                    self._send_nowait()
                try:
                    if self._fill():
                        continue
                except BlockingIOError:
                    if got:
                        break
                    raise
                # the peer closed: what is decrypted so far first, then end of stream
                # (OpenSSL then reports EOF; a second "want read" after it ends it too)
                if got or self._in.eof:
                    break
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            except ssl.SSLError as e:
                raise TlsError(f"TLS error: {e}") from e
            if not n:
                break
            got += n
        return got

    # ------------------------------------------------------------------ handshake
    async def do_handshake(self) -> None:
        """The server's handshake; the caller bounds it with a deadline."""
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                await self._flush()
                try:
                    if not self._fill():
                        raise trio.BrokenResourceError("the peer closed during the handshake")
                except BlockingIOError:
                    await trio.lowlevel.wait_readable(self.sock)
        # TLS 1.3: the session tickets follow the handshake
        await self._flush()

    # ------------------------------------------------------------------ writing
    def _send_nowait(self) -> None:
        """Write what the TLS object produced without waiting (what does not fit waits
        for the next ``_flush``): a KeyUpdate answer, an alert."""
        data = self._unsent + self._out.read()
        try:
            n = self.sock.send(data)
        except BlockingIOError:
            n = 0
        self._unsent = data[n:]

    async def _flush(self) -> None:
        data = self._out.read()
        if self._unsent:
            data, self._unsent = self._unsent + data, b""
        view = memoryview(data)
        sock = self.sock
        while view:
            try:
                n = sock.send(view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(sock)
                continue
            view = view[n:]

    async def send_parts(self, parts) -> None:
        """Encrypt and write a response's parts (bytes-like and file regions) in order."""
        obj = self.obj
        out = self._out
        small = bytearray()
        for part in parts:
            if isinstance(part, (bytes, bytearray, memoryview)):
                if len(part) < _COALESCE:
                    small += part
                    if len(small) < _COALESCE:
                        continue
                    obj.write(small)
                    small = bytearray()
                else:
                    if small:
                        obj.write(small)
                        small = bytearray()
                    obj.write(part)
            else:
                if small:
                    obj.write(small)
                    small = bytearray()
                await self._send_region(part)
            if out.pending >= _FLUSH:
                await self._flush()
        if small:
            obj.write(small)
        await self._flush()

    async def _send_region(self, region) -> None:
        fd = _region_fd(region)
        if fd is None:
            self.obj.write(region.read_bytes())
            return
        chunk, view = self._pool.take(_CHUNK)
        try:
            sent, length = 0, region.length
            while sent < length:
                n = os.preadv(fd, [view[:min(_CHUNK, length - sent)]], region.position + sent)
                if not n:
                    raise trio.BrokenResourceError(f"file region shrank: {sent} of {length} bytes sent")
                self.obj.write(view[:n])
                sent += n
                await self._flush()
        finally:
            self._pool.give(chunk, view)
