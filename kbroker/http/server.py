"""``HttpServer``: kbroker's HTTP/1.1 listener (``kbroker.http.listen``), on the broker's nursery.

HTTP parsing is h11's (sans-I/O, like the project's own codecs); this module is the trio loop
around it, in the shape of h11's trio example: receive bytes, feed h11, act on its events,
send what it produces. Rules:

- Bounded: a request head is at most ``MAX_HEAD`` bytes (h11's incomplete-event limit), a
  body at most ``MAX_BODY`` (413 otherwise), at most ``MAX_CONNECTIONS`` open connections
  (more are closed at once); a request must arrive within ``REQUEST_TIMEOUT`` seconds and
  a keep-alive connection is closed after ``IDLE_TIMEOUT`` seconds without one.
- A lingering close, as h11's trio example closes: when the listener ends a connection
  first (an answer with ``connection: close``, a refused request), it half-closes and reads
  and discards what the client still sends, until the client closes or ``LINGER_TIMEOUT``
  passes, before closing the socket. Closing a socket with unread input makes the kernel
  send a reset instead of the end of stream: the client sees "connection reset by peer",
  and can lose the answer (a 413 or 431 refused before the client finished sending).
- With ``ssl_context`` (the schema registry's HTTPS), each connection does its TLS handshake
  first, within ``REQUEST_TIMEOUT``; a failed handshake closes it with one INFO line.
- Bad input (h11's ``RemoteProtocolError``) answers 400 when h11 still allows a response,
  then closes; a handler that raises answers 500 and the listener keeps serving. Nothing
  here can take the broker down: every error stays inside the connection's task.
- Handlers run on the trio thread like everything else in the broker, so they must not
  block: long work yields (``await trio.lowlevel.checkpoint()``) as the metrics renderer does.

Started by ``kbroker.server.Server`` before the broker itself (so ``/health`` and ``/ready``
answer during start-up) and cancelled with it.
"""
from __future__ import annotations

import logging
from http import HTTPStatus

import h11
import trio

from kbroker.config.broker import parse_listen

from .router import Request, Response, Router, load_routes

log = logging.getLogger("kbroker.http")

MAX_HEAD = 16 * 1024
MAX_BODY = 1024 * 1024
MAX_CONNECTIONS = 64
REQUEST_TIMEOUT = 10.0
IDLE_TIMEOUT = 30.0
LINGER_TIMEOUT = 5.0
RECEIVE_SIZE = 64 * 1024
SERVER_HEADER = ("server", "kbroker")


class _BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class HttpServer:
    """One HTTP listener. ``router`` holds the routes (the defaults of
    ``kbroker/http/routes`` plus whatever other modules add); ``context`` is handed to
    handlers as ``request.server``."""

    def __init__(self, listen: str, context=None, router: Router | None = None, *,
                 max_body: int = MAX_BODY, error_response=None, ssl_context=None,
                 name: str = "http listener", config_key: str = "kbroker.http.listen"):
        self.host, self.port = parse_listen(listen)
        self.name = name                    # for the start-up log line
        self.ssl_context = ssl_context      # HTTPS: every connection is wrapped in TLS first
        # a service on its own listener (the schema registry) may bound bodies and word
        # the listener's own errors (413...) its way: error_response(status, message)
        self.max_body = max_body
        self.error_response = error_response or (lambda status, message: Response(status, f"{message}\n".encode()))
        self.context = context
        self.router = router if router is not None else load_routes(Router())
        self.config_key = config_key        # named in a bind error (the REST gateway's key)
        self._listeners: list = []
        self._open = 0
        self.requests = 0

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"

    @property
    def address(self) -> str:
        host = self.host or "0.0.0.0"
        return f"{'[' + host + ']' if ':' in host else host}:{self.port}"

    async def bind(self) -> None:
        """Open the listening socket(s); a port of 0 is resolved to the one the OS picked."""
        try:
            self._listeners = await trio.open_tcp_listeners(self.port, host=self.host or None)
        except OSError as e:
            raise OSError(e.errno, f"cannot listen on http://{self.address} "
                          f"({self.config_key}): {e.strerror}") from None
        self.port = self._listeners[0].socket.getsockname()[1]

    async def aclose(self) -> None:
        for s in self._listeners:
            await trio.aclose_forcefully(s)
        self._listeners = []

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        if not self._listeners:
            await self.bind()
        log.info("%s on %s://%s (%s)", self.name, "https" if self.ssl_context else "http",
                 self.address, ", ".join(self.router.paths()))
        try:
            async with trio.open_nursery() as nursery:
                for sock in self._listeners:
                    nursery.start_soon(self._accept_loop, sock, nursery)
                for task in self.router.tasks:
                    nursery.start_soon(task, self.context)
                task_status.started(self)
        finally:
            with trio.CancelScope(shield=True):
                await self.aclose()

    async def _accept_loop(self, sock, nursery) -> None:
        while True:
            try:
                stream = await sock.accept()
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                return
            except OSError as e:
                log.error("http accept failed: %s", e)
                await trio.sleep(0.1)
                continue
            if self._open >= MAX_CONNECTIONS:
                await trio.aclose_forcefully(stream)
                continue
            self._open += 1
            nursery.start_soon(self._serve_connection, stream)

    async def _serve_connection(self, stream) -> None:
        try:
            peer = stream.socket.getpeername()
            client = f"{peer[0]}:{peer[1]}"
        except (AttributeError, OSError):
            client = "unknown"
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        served = 0
        linger = False      # the listener closes first: the client may still be sending
        try:
            if self.ssl_context is not None:
                stream = trio.SSLStream(stream, self.ssl_context, server_side=True)
                try:
                    with trio.fail_after(REQUEST_TIMEOUT):
                        await stream.do_handshake()
                except (trio.BrokenResourceError, trio.TooSlowError) as e:
                    log.info("tls handshake with %s failed: %s", client, e.__cause__ or e)
                    return
            while True:
                try:
                    # the first request must come promptly; a kept-alive one may idle longer
                    with trio.move_on_after(IDLE_TIMEOUT if served else REQUEST_TIMEOUT) as idle:
                        event = await self._next_event(conn, stream)
                    if idle.cancelled_caught or event is None or isinstance(event, h11.ConnectionClosed):
                        return
                    with trio.fail_after(REQUEST_TIMEOUT):
                        request = await self._read_request(conn, stream, event, client)
                    response = await self._respond_to(request)
                except _BadRequest as e:
                    request, response = None, self.error_response(e.status, str(e))
                except (h11.RemoteProtocolError, trio.TooSlowError) as e:
                    # h11's hint: 400, or 431 for a head over MAX_HEAD; 408 when too slow
                    status = 408 if isinstance(e, trio.TooSlowError) else e.error_status_hint
                    if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                        linger = True
                        await self._send(conn, stream, self._error(status, f"bad request: {e}"),
                                         head_only=False, close=True)
                    return
                await self._send(conn, stream, response,
                                 head_only=request is not None and request.method == "HEAD",
                                 close=request is None)
                served += 1
                if conn.our_state is h11.MUST_CLOSE or request is None:
                    linger = True
                    return
                try:
                    conn.start_next_cycle()
                except h11.LocalProtocolError:
                    linger = True
                    return      # the client's body was not read to the end: close
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except h11.ProtocolError as e:
            log.info("closing http connection from %s: %s", client, e)
        finally:
            try:
                if linger:
                    await self._linger(stream)
            finally:
                self._open -= 1
                with trio.CancelScope(shield=True):
                    await trio.aclose_forcefully(stream)

    @staticmethod
    async def _linger(stream) -> None:
        """Half-close, then discard input until the client closes or ``LINGER_TIMEOUT``
        passes (the module's lingering close). TLS has no half-close: a TLS stream closes
        at once."""
        if not isinstance(stream, trio.abc.HalfCloseableStream):
            return
        with trio.move_on_after(LINGER_TIMEOUT):
            try:
                await stream.send_eof()
                while await stream.receive_some(RECEIVE_SIZE):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

    async def _next_event(self, conn: h11.Connection, stream):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(RECEIVE_SIZE)
                conn.receive_data(data)      # b"" tells h11 the peer closed
                continue
            if event is h11.PAUSED:
                return None
            return event

    async def _read_request(self, conn, stream, event, client: str) -> Request:
        if not isinstance(event, h11.Request):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
        self.requests += 1
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers]
        length = next((v for k, v in headers if k == "content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_body:
            raise _BadRequest(413, f"request body larger than {self.max_body} bytes")
        body = bytearray()
        while True:
            ev = await self._next_event(conn, stream)
            if isinstance(ev, h11.Data):
                body += ev.data
                if len(body) > self.max_body:
                    raise _BadRequest(413, f"request body larger than {self.max_body} bytes")
            elif isinstance(ev, h11.EndOfMessage):
                break
            else:
                raise h11.RemoteProtocolError("connection closed inside a request")
        return Request(event.method.decode("ascii", "replace").upper(),
                       event.target.decode("latin-1"), headers, bytes(body), client, self.context)

    async def _respond_to(self, request: Request) -> Response:
        try:
            return await self.router.dispatch(request)
        except Exception:  # noqa: BLE001 - a failing page must not stop the listener
            log.exception("%s %s %s failed", self.name, request.method, request.target)
            return self._error(500, "internal error")

    def _error(self, status: int, message: str) -> Response:
        return self.error_response(status, message)

    async def _send(self, conn, stream, response: Response, *, head_only: bool, close: bool) -> None:
        headers = [SERVER_HEADER, ("content-type", response.content_type),
                   ("content-length", str(len(response.body))), *response.headers]
        if close:
            headers.append(("connection", "close"))
        try:
            reason = HTTPStatus(response.status).phrase
        except ValueError:
            reason = ""
        out = conn.send(h11.Response(status_code=response.status, headers=headers,
                                     reason=reason.encode("ascii")))
        if response.body and not head_only:
            out += conn.send(h11.Data(data=response.body))
        out += conn.send(h11.EndOfMessage())
        await stream.send_all(out)
