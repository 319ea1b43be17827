"""One client connection: read a frame, handle it, write the response — in order.

Kafka answers requests on a connection strictly in the order they arrived and handles
one at a time per connection (its network layer mutes the channel while a request is in
flight), so this task does the same with no internal queue.

What closes the connection (with one log line; the broker keeps serving everyone else):
- a size prefix outside ``0..socket.request.max.bytes`` (``FrameTooLarge``), a request
  whose header or body cannot be decoded (``MalformedFrame``);
- an API key the registry does not serve, or a version outside its advertised range —
  except ApiVersions, which gets a v0 answer with ``UNSUPPORTED_VERSION`` and
  ApiVersions' own range (KIP-511's negotiation), always with response header v0;
- a handler exception (logged with its traceback) or a response that cannot be encoded;
- a handler that answers nothing and asks for the close in ``ctx.extra["close_connection"]``
  (an acks=0 Produce that failed: Kafka closes so the client learns of it);
- a failed or cancelled write (a half-written frame must never be followed by another);
- ``connections.max.idle.ms`` without a byte from the client (on the socket fast path by
  the server's sweep, ``kbroker/server/idle.py``); broker shutdown.
- security (``kbroker.security``): a failed TLS handshake, a client certificate no
  ``ssl.principal.mapping.rules`` rule maps; on SASL listeners anything the SASL state
  machine refuses (any API but ApiVersions/SaslHandshake/SaslAuthenticate before
  authentication, failed authentication after its error answer, an expired session).

TLS listeners (SSL, SASL_SSL) take the same socket fast path as plaintext ones, with a
:class:`~kbroker.server.tls.TlsSocket` (the stdlib's ``SSLObject`` over memory BIOs) in
place of the raw socket: ciphertext is read in large gulps and every record already
received is decrypted straight into the frame buffers in one call; fetched file regions
are encrypted in bounded chunks (zero copy cannot apply to encrypted bytes). PLAINTEXT and
SASL_PLAINTEXT keep ``os.sendfile``. (A stream without a raw socket, such as an in-memory
test stream, is wrapped in ``trio.SSLStream`` and takes the generic path.) The principal (``User:ANONYMOUS``, the SASL
user, or the mapped certificate DN) reaches handlers as ``ctx.principal``.

Every request is metered once (``server.request_stats``, kbroker/node/stats.py: count per
version, time histogram, bytes) and, only while DEBUG is enabled on the ``kbroker.request``
logger (``--log-level DEBUG``), logged as one line: API, version, correlation id, client id,
client address, listener, time taken (Kafka's request logger).

Hot path (TCP sockets; other streams, e.g. in-memory test streams, take the plain
``receive_some`` + :class:`FrameDecoder` path with the same behaviour). Kept as it is because
the produce and fetch profiles in ``benchmarks/README.md`` showed socket calls and copies
dominating:

- Reads go into a receive buffer with ``recv_into``; a frame larger than what is left of
  it gets its own exactly sized ``bytearray`` and the rest of it is received straight into
  that (no ``+=``/slicing copies of large produce requests). Frames are handed on as
  writable ``bytearray``s (copies), so the log can patch offsets into a produce batch in
  place. The receive buffer is borrowed from the server's pool (``kbroker/server/buffers.py``)
  for a read and kept only while it holds part of a frame: an idle connection, or one
  handling its last request (a long-polling fetch), holds none (issue 32: an idle
  connection cost ~23 KiB, most of it a zero-filled buffer of its own).
- The socket is used without trio's wrapper: a read or write is tried first and only waits
  (``wait_readable``/``wait_writable``) on ``EAGAIN``; the connection yields to the scheduler
  once per request instead of around every socket call — and once per burst of pipelined
  Produce requests already received (at most ``_MAX_BURST`` requests, ``_MAX_BURST_BYTES``
  bytes; issue 32, item 3): a parked consumer Fetch the appends woke then runs once per
  burst and answers every record of it, instead of once per one-record request of a
  ``linger.ms=0`` producer. Other connections get their turn after every bounded burst
  (``tests/broker/test_produce_burst.py``).
- Runs: the Produce requests of a burst that are already received whole are decoded
  together, and each stretch of them writing one partition with acks=1 and no
  transactional id is answered by one append (:meth:`Connection._handle_produces`,
  :func:`kbroker.api.produce.handle_run`, :func:`kbroker.replica.append.append_run`): one
  write, one high-watermark step and one wake-up of parked fetches for the stretch, the
  answers and meters those of the requests one at a time (the answers stamped from one
  encoded answer per version, :func:`kbroker.api.produce.run_answers`, the meters counted
  once per run). A producer ahead of its broker
  (``linger.ms=0``, many requests in flight) sends such stretches, and each one-record
  request's own append was most of its cost: the broker catches up faster the further it
  falls behind. Batches the log must see one by one (an idempotent producer's, a refused
  batch, a timestamp outside the window) and every request while an authorizer or a quota
  is in force, or on a SASL connection, take the one-request path
  (``tests/broker/test_produce_runs.py``).
- Answers to Produce requests are held back while more requests are already waiting on
  the socket (a non-blocking read finds them) and the next one is again a Produce; they
  go out with one ``sendmsg`` before the connection would wait or handle anything else —
  same bytes, same order, fewer wake-ups of the client (on a VM each costs an IPI). Any
  other request writes what is owed first, since it may block (long-poll fetch, join).
- Readers first: when a Produce's append woke parked readers (a consumer's Fetch waiting
  at the log end), the connection gives them two scheduler turns before it writes the
  Produce's answer (:meth:`Connection._readers_first`), so the fetch's answer goes out
  first, as Kafka queues it (``tests/broker/test_readers_first.py``); within a burst this
  happens once, before its answers are written (``tests/broker/test_produce_burst.py``).
"""
from __future__ import annotations

import logging
import os
from operator import itemgetter
import ssl
import struct
import sys
from time import perf_counter as _perf_counter

import trio

from kbroker.api import RequestContext
from kbroker.common.request_scope import CURRENT_REQUEST
from kbroker.quota.manager import drop_records, records_size
from kbroker.quota.task_time import RequestTimer
from kbroker.wire import messages
from kbroker.wire.errors import FrameTooLarge, MalformedFrame, UnsupportedVersion, WireError
from kbroker.wire.codegen import r_uvarint
from kbroker.wire.protocol import (FrameDecoder, decode_request,
                                   decode_request_to_end, encode_response, peek_request)

from .buffers import LARGE, SMALL, pool_of
from .send import send_parts
from .writer import PlainSender
from .tls import TlsError, TlsSocket

log = logging.getLogger("kbroker.server")
# One DEBUG line per request (Kafka's kafka.request.logger); nothing is formatted otherwise.
_request_log = logging.getLogger("kbroker.request")

API_VERSIONS = 18
SASL_HANDSHAKE = 17
UNSUPPORTED_VERSION = 35
RECEIVE_SIZE = LARGE             # receive buffers of a busy connection (kbroker/server/buffers.py)
FIRST_RECEIVE_SIZE = SMALL       # until a read fills one
PRODUCE = 0
FETCH = 1
# request_percentage: exempt as Kafka's sendResponseExemptThrottle (WriteTxnMarkers; follower
# fetches are checked in _request_quota); the controller plane's APIs are not on this listener
_REQUEST_QUOTA_EXEMPT = frozenset({27})
_REQUEST_TIMER = RequestTimer()


def _follower_fetch(request) -> bool:
    state = getattr(request, "replica_state", None)
    replica = state.replica_id if state is not None and state.replica_id >= 0 else \
        getattr(request, "replica_id", -1)
    return replica is not None and replica >= 0
_SIZE = struct.Struct(">i")


_KEY = struct.Struct(">h")
# Produce answers held back for pipelined requests: at most this many, and only while the
# requests handled meanwhile add up to less than this many bytes (bounds the added latency).
_MAX_PENDING = 16
_MAX_HELD = 256 * 1024
# Pipelined Produce requests already received are handled one after another without giving
# the scheduler a turn in between: at most this many, and this many request bytes, then the
# connection yields (other connections, and the fetches the appends woke, run once per burst).
_MAX_BURST = 32
_MAX_BURST_BYTES = 512 * 1024


def _recv_now(raw, view) -> int:
    """``raw.recv_into(view)``, or -1 when nothing is there yet. The exception is caught
    here, not in the connection's loop: a traceback through the loop would give its frame a
    frame object that then lives as long as the connection (~0.4 KiB each)."""
    try:
        return raw.recv_into(view)
    except BlockingIOError:
        return -1


def _raw_socket(stream):
    """The stdlib socket under a trio SocketStream, or None (other stream types)."""
    sock = getattr(getattr(stream, "socket", None), "_sock", None)
    if sock is None or not hasattr(sock, "recv_into"):
        return None
    return sock


class Connection:
    """One client connection's state (issue 32: slotted, as an idle connection's cost is
    mostly what it holds; a dormant one has no task: kbroker/server/dormant.py)."""
    __slots__ = ("server", "stream", "listener_name", "security", "security_protocol",
                 "principal", "auth", "_linger", "busy", "_mute_s", "_recv_scope",
                 "waiting_since", "dormant", "expired", "asleep_since", "client_host",
                 "client_port", "requests", "_raw", "_tls", "_send_raw", "_pool", "_rsize",
                 "_last_api", "_last_version", "_last_name", "_last_correlation",
                 "_last_client", "_stats", "close_hooks", "quota_ip", "_readers_woken",
                 "__weakref__")

    def __init__(self, server, stream, listener_name: str):
        self.server = server
        self.stream = stream
        self.listener_name = listener_name
        # security (kbroker.security): TLS wraps the stream in run(); SASL gates _handle
        self.security = getattr(server, "listener_security", {}).get(listener_name)
        self.security_protocol = self.security.protocol if self.security else "PLAINTEXT"
        self.principal = "User:ANONYMOUS"
        self.auth = None
        self._linger = False     # flush an authentication error answer before closing
        self.busy = False
        self._mute_s = 0.0          # quota throttle: pause reading after the answer (KIP-219)
        self._recv_scope: trio.CancelScope | None = None
        # since when the fast path waits for a request, with no deadline of its own
        # (connections.max.idle.ms is enforced by the server's sweep, kbroker/server/idle.py)
        self.waiting_since: float | None = None
        # parked long enough, its task given up (kbroker/server/dormant.py); ``expired``:
        # woken from there to be closed
        self.dormant = False
        self.expired = False
        self.asleep_since = 0.0
        try:
            peer = stream.socket.getpeername()
            # interned: every connection from one host shares the string
            self.client_host, self.client_port = sys.intern(peer[0]), peer[1]
        except (AttributeError, OSError):
            self.client_host, self.client_port = "unknown", 0
        self.requests = 0
        self._raw = None
        self._tls: TlsSocket | None = None
        self._send_raw = None      # writes a list of parts on the fast path
        self._pool = pool_of(server)       # receive buffers, lent while bytes are held
        self._rsize = FIRST_RECEIVE_SIZE   # the size this connection borrows
        self._last_api = -1
        self._last_version = -1
        self._last_name = ""
        self._last_correlation = -1
        self._last_client: str | None = None
        # the client listeners' meters (the controller plane's server keeps none)
        self._stats = getattr(server, "request_stats", None)
        # what handlers ask to run when this connection closes (ctx.extra["close_hooks"]:
        # key → callable; share sessions end with their connection, as Kafka's do)
        self.close_hooks: dict = {}
        self.quota_ip = ""       # the address max.connections.per.ip counts (the accept loop)
        # a Produce handled here woke parked readers (ctx.extra["readers_woken"]): they
        # answer before its answer is written (:meth:`_readers_first`)
        self._readers_woken = False

    def __str__(self) -> str:
        return f"{self.client_host}:{self.client_port}"

    def stop_if_idle(self) -> None:
        """Shutdown: a connection waiting for a request stops now; a busy one stops after
        answering the request it is handling."""
        if self.waiting_since is not None:
            self.expire()
        elif self._recv_scope is not None:
            self._recv_scope.cancel()

    def expire(self) -> None:
        """End the fast path's wait for a request (``waiting_since`` is set only during
        it, and while dormant): the connection closes (kbroker/server/idle.py, shutdown)."""
        if self.dormant:
            self.server.dormancy.wake(self, expired=True)
        elif self.waiting_since is not None:
            trio.lowlevel.notify_closing(self._raw)

    def raw_socket(self):
        return self._raw

    def _fall_asleep(self) -> bool:
        """After the task returned for dormancy: the connection joins the server's
        dormant set (True), or is closed as usual (False: the server drains)."""
        if not self.dormant:
            return False
        if not self.server.draining:
            try:
                self.server.dormancy.adopt(self)
            except (OSError, ValueError):
                pass
            else:
                # what a new task makes again (_wake_up): a dormant connection keeps
                # only its state
                self._send_raw = None
                self._last_client = None
                if not self.close_hooks:
                    self.close_hooks = None
                return True
        self.dormant = False
        return False

    def _wake_up(self) -> None:
        """A new task for a dormant connection (kbroker/server/dormant.py)."""
        self._send_raw = PlainSender(self._raw, getattr(self.server, "writer", None))
        if self.close_hooks is None:
            self.close_hooks = {}

    def _close_socket(self) -> None:
        """The socket of a plaintext connection that dropped trio's stream wrapper."""
        raw = self._raw
        if raw.fileno() != -1:
            trio.lowlevel.notify_closing(raw)
            raw.close()

    async def run(self) -> None:
        try:
            if self._raw is None:
                if not await self._secure():
                    return
                if not self._fast_path():
                    await self._loop_stream()
                    return
            elif self.expired:      # woken from dormancy to be closed
                if not self.server.draining:
                    log.debug("closing idle connection from %s", self)
                return
            else:
                self._wake_up()
            # (no coroutine of its own in between: every frame of an idle connection's
            # await chain stays resident as long as it waits)
            await self._loop_socket()
        except TlsError as e:
            log.info("closing connection from %s on %s: %s", self, self.listener_name, e)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except Exception:  # noqa: BLE001 - never let one connection take the broker down
            log.exception("closing connection from %s after an unexpected error", self)
        finally:
            if not self._fall_asleep():     # (else dormant: kbroker/server/dormant.py)
                with trio.CancelScope(shield=True):
                    if self._linger and not getattr(self.server, "forced", False):
                        await self._close_gently()
                    if self.stream is None:
                        self._close_socket()
                    elif type(self.stream) is trio.SocketStream:
                        # closed in this step, without the checkpoint of ``aclose``: when
                        # many clients leave at once (a batch of producers closing), each
                        # task ends here instead of all of them waiting together at that
                        # checkpoint with their scopes and frames (~3 KiB each), a peak the
                        # allocator keeps resident after it is freed (issue 32)
                        self.stream.socket.close()
                    else:
                        await trio.aclose_forcefully(self.stream)
                self._run_close_hooks()

    def _run_close_hooks(self) -> None:
        hooks, self.close_hooks = self.close_hooks, {}
        for key, hook in (hooks or {}).items():
            try:
                hook()
            except Exception:  # noqa: BLE001 - one failed hook must not skip the others
                log.exception("connection %s: close hook %s failed", self, key)

    async def _close_gently(self) -> None:
        """After a failed authentication the error answer must reach the client: closing a
        socket with unread input sends a reset that can overtake the answer, so the write
        side is shut first and what the client still sends is read and dropped until it
        closes too (at most one second), as Kafka closes only once the answer is flushed."""
        sock = _raw_socket(self.stream)
        try:
            if sock is not None:
                import socket as _socket
                sock.shutdown(_socket.SHUT_WR)
            with trio.move_on_after(1.0):
                while await self.stream.receive_some(65536):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    async def _secure(self) -> bool:
        """TLS handshake (SSL, SASL_SSL) and the principal of a client certificate; a SASL
        state machine for SASL_* listeners. False: the connection is closed (one log line)."""
        sec = self.security
        if sec is None:
            return True
        if sec.uses_tls:
            raw = _raw_socket(self.stream)
            if raw is not None:
                # the socket fast path with TLS in user space (kbroker/server/tls.py)
                tls = self._tls = TlsSocket(raw, sec.ssl_context, self._pool)
            else:
                tls = self.stream = trio.SSLStream(self.stream, sec.ssl_context, server_side=True,
                                                   https_compatible=False)
            with trio.move_on_after(self.server.idle_timeout_s) as scope:
                try:
                    await tls.do_handshake()
                except (trio.BrokenResourceError, ssl.SSLError, OSError) as e:
                    log.info("closing connection from %s on %s: SSL handshake failed: %s",
                             self, self.listener_name, e.__cause__ or e)
                    return False
            if scope.cancelled_caught:
                log.info("closing connection from %s on %s: SSL handshake timed out",
                         self, self.listener_name)
                return False
            if not sec.uses_sasl:
                from kbroker.security.tls import certificate_principal  # TLS listeners only
                try:
                    self.principal = certificate_principal(
                        tls.getpeercert(binary_form=True), sec.principal_mapper)
                except ValueError as e:
                    log.info("closing connection from %s on %s: %s", self, self.listener_name, e)
                    return False
        if sec.uses_sasl:
            spec = self.server.registry.get(API_VERSIONS)
            self.auth = sec.authenticator(self.server.credentials, self._now_ms, os.urandom,
                                          spec.max_version if spec else 0)
        return True

    @staticmethod
    def _now_ms() -> int:
        return int(trio.current_time() * 1000)

    def _frame_limit(self) -> int:
        """Before SASL completes a frame may be at most ``sasl.server.max.receive.size``."""
        if self.auth is not None and not self.auth.authenticated:
            return self.security.max_receive
        return self.server.max_frame

    async def _sasl(self, frame, out) -> bool | None:
        """Frames of a SASL connection that is not (or no longer) authenticated; None when
        the frame goes on to the API registry, else keep-the-connection."""
        auth = self.auth
        if auth.authenticated:
            if (len(frame) >= 2 and _KEY.unpack_from(frame, 0)[0] == SASL_HANDSHAKE
                    and auth.session_expires_ms is not None):
                # KIP-368 re-authentication; without a session limit (connections.max.reauth.ms
                # unset) Kafka hands the handshake to its API layer: ILLEGAL_SASL_STATE
                auth.begin_reauthentication()
            elif auth.session_expired():
                log.info("closing connection from %s on %s: SASL session of %s expired",
                         self, self.listener_name, self.principal)
                return False
            else:
                return None
        step = auth.receive(frame)
        for reply in step.reply:
            await self._emit(reply, out)
        if step.close:
            log.info("closing connection from %s on %s: %s%s", self, self.listener_name, step.close,
                     f" ({auth.last_detail})" if auth.last_detail else "")
            self._linger = bool(step.reply)
            return False
        if auth.authenticated:
            self.principal = auth.principal
        return None if step.dispatch else True

    def _fast_path(self) -> bool:
        """True when the socket fast path applies (a TCP socket, or TLS over one)."""
        if self._tls is not None:
            self._raw = self._tls
            self._send_raw = self._tls.send_parts
        else:
            self._raw = _raw_socket(self.stream)
            if self._raw is not None:
                # one small object: the socket, and the writer thread for crowded times
                self._send_raw = PlainSender(self._raw, getattr(self.server, "writer", None))
                dormancy = getattr(self.server, "dormancy", None)
                if dormancy is not None:
                    dormancy.awake.add(self)      # may give its task up when idle
                if self.auth is None:
                    # trio's stream and socket wrappers are not used on this path (a SASL
                    # connection keeps them for its lingering close): the socket is closed
                    # by _close_socket (about 0.5 KiB per connection)
                    self.stream = None
        return self._raw is not None

    # ------------------------------------------------------------------ socket fast path
    async def _wait_readable(self) -> bool:
        """Until the socket is readable; False when the connection went idle for
        ``connections.max.idle.ms`` or shutdown stopped the wait."""
        with trio.CancelScope(deadline=trio.current_time() + self.server.idle_timeout_s) as scope:
            self._recv_scope = scope
            await trio.lowlevel.wait_readable(self._raw)
        self._recv_scope = None
        if scope.cancelled_caught:
            if not self.server.draining:
                log.debug("closing idle connection from %s", self)
            return False
        return True

    async def _recv_into(self, view) -> int | None:
        """Bytes received into ``view``; 0 at EOF; None when the connection went idle for
        ``connections.max.idle.ms`` or shutdown stopped the wait."""
        raw = self._raw
        while True:
            try:
                return raw.recv_into(view)
            except BlockingIOError:
                pass
            if not await self._wait_readable():
                return None

    async def _loop_socket(self) -> None:
        server = self.server
        max_frame = server.max_frame
        pool = self._pool
        raw = self._raw
        wait_readable = trio.lowlevel.wait_readable
        now = trio.current_time
        # the receive buffer is lent by the pool only while it holds bytes of a frame
        # (kbroker/server/buffers.py): an idle connection, or one handling its last
        # request, holds none
        rbuf = rview = None
        start = end = 0
        pending: list = []   # response parts of pipelined produce requests, not yet written
        held = 0             # request bytes handled since the oldest of them
        burst = 0            # requests handled since this task last gave the scheduler a turn
        burst_bytes = 0
        try:
            while not server.draining:
                avail = end - start
                frame = None
                if avail >= 4:
                    size = _SIZE.unpack_from(rbuf, start)[0]
                    if size < 0 or size > max_frame or (self.auth is not None and size > self._frame_limit()):
                        log.warning("closing connection from %s: %s", self,
                                    FrameTooLarge(f"frame size {size} outside 0..{self._frame_limit()}"))
                        return
                    if pending and (avail < 6 or _KEY.unpack_from(rbuf, start + 4)[0] != PRODUCE):
                        # only produce answers wait for the next request: anything else may
                        # block (a long-polling fetch, a join), so write what is owed first
                        if self._readers_woken:
                            await self._readers_first()
                        await self._send_raw(pending)
                        pending = []
                    if avail - 4 >= size:
                        frame = rbuf[start + 4:start + 4 + size]
                        start += 4 + size
                        if start == end:
                            start = end = 0
                            pool.give(rbuf, rview)
                            rbuf = rview = None
                    elif start + 4 + size > len(rbuf):
                        # larger than what is left of the buffer: receive it into its own
                        frame = bytearray(size)
                        have = avail - 4
                        frame[:have] = rview[start + 4:end]
                        start = end = 0
                        pool.give(rbuf, rview)
                        rbuf = rview = None
                        fview = memoryview(frame)
                        if pending:
                            await self._send_raw(pending)
                            pending = []
                        while have < size:
                            n = await self._recv_into(fview[have:])
                            if not n:
                                return
                            have += n
                        fview.release()
                if frame is None:
                    if start:
                        rbuf[:avail] = rview[start:end]
                        start, end = 0, avail
                    if rbuf is None:
                        rbuf, rview = pool.take(self._rsize)
                    n = _recv_now(raw, rview[end:])
                    if n < 0:
                        # nothing there yet: first what is owed (pipelined requests already
                        # here are answered together), then wait holding no empty buffer
                        if pending:
                            if self._readers_woken:
                                await self._readers_first()
                            await self._send_raw(pending)
                            pending = []
                            continue
                        if not end:
                            pool.give(rbuf, rview)
                            rbuf = rview = None
                        # parked with no deadline, inline (one coroutine less): the idle
                        # sweep or shutdown ends the wait (kbroker/server/idle.py)
                        self.waiting_since = now()
                        burst = burst_bytes = 0      # the wait is a turn for everyone else
                        try:
                            await wait_readable(raw)
                            self.dormant = False    # readable before a sweep's notice
                        except trio.ClosedResourceError:
                            if self.dormant:        # kbroker/server/dormant.py
                                if not end:
                                    return
                                # part of a frame is held here: the task stays (waits again)
                                self.dormant = False
                                continue
                            if not server.draining:
                                log.debug("closing idle connection from %s", self)
                            return
                        finally:
                            self.waiting_since = None
                        continue
                    if not n:
                        return
                    end += n
                    if end == len(rbuf) < RECEIVE_SIZE:
                        rbuf, rview = self._grow(rbuf, rview, end)
                    continue
                if burst and (burst >= _MAX_BURST or burst_bytes >= _MAX_BURST_BYTES
                              or self._last_api != PRODUCE or len(frame) < 2
                              or _KEY.unpack_from(frame, 0)[0] != PRODUCE):
                    # the scheduler's turn owed since the last request (skipped only
                    # between pipelined produce requests, within the burst's bounds)
                    await trio.lowlevel.cancel_shielded_checkpoint()
                    burst = burst_bytes = 0
                run = None
                if end - start >= 6 and len(frame) >= 2 and \
                        _KEY.unpack_from(frame, 0)[0] == PRODUCE and self._runs_allowed():
                    # further Produce requests already here: handled together (one append
                    # for those that write the same partition), within the burst's bounds
                    run, start = _pipelined_produces(rbuf, start, end, frame, max_frame,
                                                     _MAX_BURST - burst,
                                                     _MAX_BURST_BYTES - burst_bytes)
                    if start == end:
                        start = end = 0
                        pool.give(rbuf, rview)
                        rbuf = rview = None
                self.busy = True
                try:
                    if run is None:
                        keep = await self._handle(frame, pending)
                        count, size = 1, len(frame)
                    else:
                        keep = await self._handle_produces(run, pending)
                        count, size = len(run), sum(map(len, run))
                finally:
                    self.busy = False
                if not keep or server.draining:
                    return
                held += size
                burst += count
                burst_bytes += size
                if self._mute_s:
                    if pending:
                        await self._send_raw(pending)
                        pending = []
                    await self._muted()
                    burst = burst_bytes = 0
                if pending and (self._last_api != PRODUCE or len(pending) >= _MAX_PENDING
                                or held >= _MAX_HELD):
                    if self._readers_woken:
                        await self._readers_first()
                    await self._send_raw(pending)
                    pending = []
                if not pending:
                    held = 0
        finally:
            if rbuf is not None:
                pool.give(rbuf, rview)
            # answers already owed are written (at most a second) — unless a second signal
            # forced the stop: then nothing waits on the network (an unanswered produce is
            # retried by its client; the records are in the log either way)
            if pending and not getattr(server, "forced", False):
                with trio.CancelScope(shield=True):
                    with trio.move_on_after(1):
                        await self._send_raw(pending)

    def _grow(self, rbuf: bytearray, rview: memoryview, end: int) -> tuple[bytearray, memoryview]:
        """A connection that filled a small receive buffer takes large ones from now on (a
        busy client's pipelined requests), its first ``end`` bytes carried over."""
        self._rsize = RECEIVE_SIZE
        grown, gview = self._pool.take(RECEIVE_SIZE)
        gview[:end] = rview[:end]
        self._pool.give(rbuf, rview)
        return grown, gview

    # ------------------------------------------------------------------ generic streams
    async def _loop_stream(self) -> None:
        server = self.server
        decoder = FrameDecoder(server.max_frame)
        idle_s = server.idle_timeout_s
        while not server.draining:
            with trio.CancelScope(deadline=trio.current_time() + idle_s) as scope:
                self._recv_scope = scope
                data = await self.stream.receive_some(RECEIVE_SIZE)
            self._recv_scope = None
            if scope.cancelled_caught:
                if not server.draining:
                    log.debug("closing idle connection from %s", self)
                return
            if not data:
                return
            decoder.max_frame = self._frame_limit()
            try:
                frames = decoder.feed(data)
            except FrameTooLarge as e:
                log.warning("closing connection from %s: %s", self, e)
                return
            for frame in frames:
                self.busy = True
                try:
                    keep = await self._handle(frame)
                finally:
                    self.busy = False
                if not keep or server.draining:
                    return
                if self._mute_s:
                    await self._muted()

    def _runs_allowed(self) -> bool:
        """Whether pipelined Produce requests may be handled as runs
        (:meth:`_handle_produces`): not on a SASL connection (each request passes the
        authenticator's check), nor while quotas are enforced (each request is charged and
        may mute the connection) or the request log is on (a line per request as handled)."""
        if self.auth is not None or _request_log.isEnabledFor(logging.DEBUG):
            return False
        quotas = getattr(self.server.broker, "quotas", None)
        return quotas is None or not (quotas.produce.enabled or quotas.request.enabled)

    async def _handle_produces(self, frames: list, out: list) -> bool:
        """Pipelined Produce requests received together, in order: each stretch of them
        that writes one partition (:func:`kbroker.api.produce.run_key`) is answered by
        :func:`kbroker.api.produce.handle_run` (one append for the stretch), anything else
        one by one by :meth:`_handle`. A request whose bytes are those of the last decoded
        one but for its correlation id and records (:class:`_SameRequest`) is not decoded
        again; every other is decoded once. False means close the connection."""
        from kbroker.api import produce as produce_api    # (loaded with the first run)
        registry = self.server.registry
        # (header, request or None, run key, records, correlation id, version) or None; a
        # repeated request (_SameRequest) carries the header of the request it repeats (the
        # correlation id and version beside it, for the run's itemgetter maps)
        entries: list = []
        same = None
        for frame in frames:
            e = same.read(frame) if same is not None else None
            if e is None:
                try:
                    api_key, version, _ = peek_request(frame)
                    spec = registry.get(api_key)
                    if spec is not None and spec.min_version <= version <= spec.max_version:
                        e, same = _decode_produce(frame, produce_api.run_key)
                except (MalformedFrame, UnsupportedVersion, WireError):
                    e = same = None     # the one-by-one path answers for it (it closes)
            entries.append(e)
        i, n = 0, len(frames)
        while i < n:
            key = entries[i][2] if entries[i] is not None else None
            j = i + 1
            if key is not None:
                while j < n and entries[j] is not None and entries[j][2] == key:
                    j += 1
            if j - i > 1:
                done = self._produce_run(produce_api, frames[i:j], entries[i:j], out)
                if done is False:
                    return False
                if done:
                    i = j
                    continue
            for k in range(i, j):
                e = entries[k]
                decoded = e[:2] if e is not None and e[1] is not None else None
                if not await self._handle(frames[k], out, decoded) or self.server.draining:
                    return False
            i = j
        return True

    def _produce_run(self, produce_api, frames: list, entries: list, out: list) -> bool | None:
        """A run of Produce requests for one partition answered with one append
        (:func:`kbroker.api.produce.handle_run`, the module passed in), each answer's parts
        appended to ``out`` in order and each request metered; None when the run must be
        handled one by one (nothing was appended), False to close the connection (a bug,
        logged)."""
        start = _perf_counter()
        header = entries[0][0]
        ctx = self._context(PRODUCE, header)
        current = CURRENT_REQUEST.set(ctx)
        try:
            name, index = entries[0][2]
            results = produce_api.handle_run(ctx, name, index, list(map(_RECORDS, entries)))
            if results is None:
                return None
            out.append(produce_api.run_answers(name, index, list(map(_VERSION_AND_ID, entries)),
                                               results))
        except Exception:  # noqa: BLE001 - a bug in one handler must not take the broker down
            log.exception("closing connection from %s: a run of %d Produce requests "
                          "(correlation ids %d..%d, client %r) failed", self, len(entries),
                          entries[0][4], entries[-1][4], header.client_id)
            return False
        finally:
            CURRENT_REQUEST.reset(current)
        if "readers_woken" in ctx.extra:
            self._readers_woken = True
        self.requests += len(entries)
        last = entries[-1][0]
        self._last_api = PRODUCE
        self._last_version = last.api_version
        self._last_name = "Produce"
        self._last_correlation = entries[-1][4]
        self._last_client = last.client_id
        if self._stats is not None:
            share = (_perf_counter() - start) / len(entries)
            if len(set(map(_VERSION, entries))) == 1:
                self._stats.observe_many(PRODUCE, last.api_version, len(entries), share,
                                         sum(map(len, frames)))
            else:
                for frame, e in zip(frames, entries):
                    self._stats.observe(PRODUCE, e[0].api_version, share, len(frame), True)
        return True

    async def _handle(self, frame, out: list | None = None, decoded=None) -> bool:
        """Answer one request; False means close the connection. With ``out`` the
        response's parts are appended to it (the caller writes them) instead of sent;
        ``decoded``: its header and body, when the caller decoded it already.
        Meters the request (``server.request_stats``) and, only when DEBUG is on for
        ``kbroker.request``, logs it (Kafka's request logger)."""
        start = _perf_counter()
        self._last_api = -1
        keep = False
        try:
            keep = await self._handle_request(frame, out, decoded)
            return keep
        finally:
            key = self._last_api
            if key >= 0:
                elapsed = _perf_counter() - start
                if self._stats is not None:
                    self._stats.observe(key, self._last_version, elapsed, len(frame), keep)
                if _request_log.isEnabledFor(logging.DEBUG):
                    _request_log.debug(
                        "completed request %s v%d (correlation id %d) from client %r at %s "
                        "on %s in %.3f ms%s", self._last_name, self._last_version,
                        self._last_correlation, self._last_client, self, self.listener_name,
                        elapsed * 1000, "" if keep else ", closing the connection")

    async def _handle_request(self, frame, out: list | None, decoded=None) -> bool:
        self.requests += 1
        if self.auth is not None:
            keep = await self._sasl(frame, out)
            if keep is not None:
                return keep
        try:
            api_key, version, correlation_id = peek_request(frame)
        except MalformedFrame as e:
            log.warning("closing connection from %s: %s", self, e)
            return False
        spec = self.server.registry.get(api_key)
        if api_key == API_VERSIONS and (spec is None or version > spec.max_version):
            await self._emit(self._api_versions_unsupported(correlation_id), out)
            return True
        if spec is None or not spec.min_version <= version <= spec.max_version:
            name = spec.name if spec else f"api key {api_key}"
            log.warning("closing connection from %s: unsupported request %s v%d", self, name, version)
            return False
        try:
            header, request = decode_request(frame) if decoded is None else decoded[:2]
        except (MalformedFrame, UnsupportedVersion, WireError) as e:
            log.warning("closing connection from %s: bad %s v%d request: %s", self, spec.name, version, e)
            return False
        self._last_api = api_key
        self._last_version = version
        self._last_name = spec.name
        self._last_correlation = correlation_id
        self._last_client = header.client_id
        ctx = self._context(api_key, header)
        ctx.extra["close_hooks"] = self.close_hooks
        if self.auth is not None and self.auth.token_authenticated:
            # KIP-48: a session opened with a delegation token may not ask for tokens
            ctx.extra["token_authenticated"] = True
        quotas = getattr(self.server.broker, "quotas", None)
        timed = _REQUEST_TIMER.start() if quotas is not None and quotas.request.enabled else None
        current = CURRENT_REQUEST.set(ctx)
        try:
            response = await spec.handler(ctx, request)
            if api_key == PRODUCE and "readers_woken" in ctx.extra:
                self._readers_woken = True
            throttle = getattr(response, "throttle_time_ms", 0) or 0
            if api_key == PRODUCE and quotas is not None and quotas.produce.enabled:
                # producer_byte_rate on the request's bytes (Kafka's handleProduceRequest)
                throttle = max(throttle, quotas.produce.record(
                    getattr(ctx, "principal", None), header.client_id, len(frame)))
                if response is not None and version >= 1:
                    response.throttle_time_ms = throttle
            if timed is not None:
                throttle = self._request_quota(quotas, ctx, api_key, request, response,
                                               _REQUEST_TIMER.stop(timed), throttle)
            if throttle > 0:
                # KIP-219: answer first, then read nothing more from this client for that long
                self._mute_s = throttle / 1000
            if response is None:
                reason = ctx.extra.get("close_connection")
                if reason:
                    # a request that has no response (acks=0 produce) failed: closing is
                    # the only way to tell the client (Kafka's closeConnection)
                    log.info("closing connection from %s: %s", self, reason)
                    return False
                return True
            parts = encode_response(api_key, version, correlation_id, response)
        except Exception:  # noqa: BLE001 - a bug in one handler must not take the broker down
            if timed is not None:
                _REQUEST_TIMER.stop(timed)
            log.exception("closing connection from %s: %s v%d (correlation id %d, client %r) failed",
                          self, spec.name, version, correlation_id, header.client_id)
            return False
        finally:
            CURRENT_REQUEST.reset(current)
        if out is not None:      # (``_emit`` inline: one coroutine less per request)
            out.extend(parts)
        else:
            if self._readers_woken:
                await self._readers_first()
            await self._send(parts)
        return True

    def _context(self, api_key: int, header) -> RequestContext:
        """A request's context: the broker, the request's header, this connection's
        client, listener and principal."""
        return RequestContext(self.server.broker, api_key, header.api_version,
                              header.correlation_id, header.client_id, self.client_host,
                              self.listener_name, principal=self.principal,
                              security_protocol=self.security_protocol)

    async def _readers_first(self) -> None:
        """Let the tasks a Produce's append woke (parked consumer fetches, acks=all
        produces) run before this connection writes the Produce's answer: Kafka completes
        the delayed fetches inside the append (``ReplicaManager.appendRecords``), so their
        answers are queued before the produce's; here a woken fetch would otherwise wait
        for this answer's ``sendmsg`` (a low-rate consumer's end-to-end p50 in alternating
        runs at 500 records/s: 0.47 → 0.44 ms; benchmarks/README.md, "The p50 at low
        rates"). Two turns: trio runs each turn's ready tasks in a random order (it
        reverses the batch half the time), so after one a woken task may still come after
        this one; after two it has run, up to its answer's write (a fetch's write does not
        yield unless the socket is full)."""
        self._readers_woken = False
        await trio.lowlevel.cancel_shielded_checkpoint()
        await trio.lowlevel.cancel_shielded_checkpoint()

    @staticmethod
    def _request_quota(quotas, ctx, api_key, request, response, nanos: int, throttle: int) -> int:
        """``request_percentage`` (KIP-124): charge the client the time its request was
        handled; the answer carries the larger of the throttle times (Kafka's
        ``max(bandwidth, request)``). Follower fetches and WriteTxnMarkers are exempt."""
        manager = quotas.request
        if api_key in _REQUEST_QUOTA_EXEMPT or (api_key == FETCH and _follower_fetch(request)):
            manager.record_exempt(nanos)
            return throttle
        request_throttle = manager.record_time(ctx.principal, ctx.client_id, nanos)
        if request_throttle > throttle and response is not None:
            throttle = request_throttle
            if hasattr(response, "throttle_time_ms"):
                response.throttle_time_ms = throttle
            if api_key == FETCH and response.responses:
                # a throttled fetch answers no data, its bytes are taken back (handleFetchRequest)
                size = sum(records_size(p.records) for t in response.responses for p in t.partitions)
                if size:
                    quotas.fetch.unrecord(ctx.principal, ctx.client_id, size)
                drop_records(response.responses)
        return throttle

    async def _muted(self) -> None:
        """The channel stays muted (nothing read) for the throttle time; shutdown ends it."""
        seconds, self._mute_s = self._mute_s, 0.0
        with trio.CancelScope(deadline=trio.current_time() + seconds) as scope:
            self._recv_scope = scope
            await trio.sleep_forever()
        self._recv_scope = None

    async def _emit(self, parts, out: list | None) -> None:
        if out is not None:
            out.extend(parts)
        else:
            await self._send(parts)

    async def _send(self, parts) -> None:
        if self._send_raw is not None:
            await self._send_raw(parts)
        else:
            await send_parts(self.stream, parts)

    def _api_versions_unsupported(self, correlation_id: int) -> list:
        spec = self.server.registry.get(API_VERSIONS)
        lo, hi = (spec.min_version, spec.max_version) if spec else (0, 0)
        resp = messages.ApiVersionsResponse(
            error_code=UNSUPPORTED_VERSION,
            api_keys=[messages.ApiVersionsResponse.ApiVersion(api_key=API_VERSIONS,
                                                              min_version=lo, max_version=hi)])
        return encode_response(API_VERSIONS, 0, correlation_id, resp)


def _pipelined_produces(buf, start: int, end: int, first, max_frame: int, max_count: int,
                        max_bytes: int) -> tuple[list | None, int]:
    """``first`` (a Produce request just taken from ``buf``) and the whole Produce requests
    that follow it in ``buf[start:end]``, at most ``max_count`` frames and about
    ``max_bytes`` in all; and where the next frame begins. (None, ``start``) when no whole
    Produce request follows. A frame of a size outside 0..``max_frame`` ends the run (the
    loop closes the connection for it)."""
    frames = [first]
    total = len(first)
    pos = start
    while len(frames) < max_count and total < max_bytes and end - pos >= 6:
        size = _SIZE.unpack_from(buf, pos)[0]
        if size < 2 or size > max_frame or end - pos - 4 < size or \
                _KEY.unpack_from(buf, pos + 4)[0] != PRODUCE:
            break
        frames.append(buf[pos + 4:pos + 4 + size])
        pos += 4 + size
        total += size
    if len(frames) == 1:
        return None, start
    return frames, pos


def _decode_produce(frame, run_key) -> tuple[tuple | None, "_SameRequest | None"]:
    """A request frame of a run decoded: (header, request, run key, records) — run key and
    records None for a request that cannot join a run — and, for one that can, the
    :class:`_SameRequest` that reads the frames repeating it. Raises the decode errors."""
    header, request, end = decode_request_to_end(frame)
    key = run_key(header.api_version, request) if header.api_key == PRODUCE else None
    if key is None:
        return (header, request, None, None, header.correlation_id, header.api_version), None
    records = request.topic_data[0].partition_data[0].records
    return ((header, request, key, records, header.correlation_id, header.api_version),
            _SameRequest.of(frame, end, header, request, records, key))


# a run's entries (Connection._handle_produces): records, version, (version, correlation id)
_RECORDS, _VERSION, _VERSION_AND_ID = itemgetter(3), itemgetter(5), itemgetter(5, 4)
_NO_TAGS = b"\0\0\0"     # the empty tagged fields of a partition, its topic and the request


class _SameRequest:
    """The bytes of a one-partition Produce request around its records (:func:`_decode_produce`):
    a later frame of the run that has the same bytes before its records field but for the
    correlation id, and nothing after them but what this one has, decodes to the same
    request with its own correlation id and records (equal bytes decode to equal values),
    so it is read without decoding it. Records are the last field of each level of a
    Produce request; a request that was not read to its end, or that carries tagged fields,
    gives no template."""

    __slots__ = ("head", "middle", "at", "flexible", "header", "key")

    @classmethod
    def of(cls, frame, end: int, header, request, records, key) -> "_SameRequest | None":
        size = len(frame)
        if end != size:
            return None                          # trailing bytes: leave it to the decoder
        flexible = header.header_version >= 2
        n = len(records)
        if flexible:
            if request._unknown_tags or request.topic_data[0]._unknown_tags or \
                    request.topic_data[0].partition_data[0]._unknown_tags:
                return None
            start = size - len(_NO_TAGS) - n
            field = n + 1
            at = start - (1 if field < 0x80 else 2 if field < 0x4000 else 3 if field < 0x200000
                          else 4 if field < 0x10000000 else 5)
            if at < 8 or r_uvarint(frame, at) != (field, start):
                return None
        else:
            start = size - n
            at = start - 4
            if at < 8 or _SIZE.unpack_from(frame, at)[0] != n:
                return None
        self = cls.__new__(cls)
        self.head = bytes(frame[:4])
        self.middle = bytes(frame[8:at])
        self.at = at
        self.flexible = flexible
        self.header = header
        self.key = key
        return self

    def read(self, frame) -> tuple | None:
        """``frame`` as (header, None, run key, records, correlation id, version) when it
        repeats this request (``header``: the repeated request's)."""
        at = self.at
        size = len(frame)
        if size <= at or frame[:4] != self.head or frame[8:at] != self.middle:
            return None
        if self.flexible:
            field = frame[at]
            if field < 0x80:                    # records under 127 bytes
                start = at + 1
            elif at + 1 < size and frame[at + 1] < 0x80:       # under 16 KiB
                field = (field & 0x7F) | (frame[at + 1] << 7)
                start = at + 2
            else:
                try:
                    field, start = r_uvarint(frame, at)
                except (IndexError, MalformedFrame):
                    return None                 # the decoder names what is wrong with it
            n = field - 1
            if n < 0 or start + n + len(_NO_TAGS) != size or frame[start + n:] != _NO_TAGS:
                return None
        else:
            n = _SIZE.unpack_from(frame, at)[0]
            start = at + 4
            if n < 0 or start + n != size:
                return None
        return (self.header, None, self.key, memoryview(frame)[start:start + n],
                _SIZE.unpack_from(frame, 4)[0], self.header.api_version)
