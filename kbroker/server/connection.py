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
- a failed or cancelled write (a half-written frame must never be followed by another);
- ``connections.max.idle.ms`` without a byte from the client; broker shutdown.
"""
from __future__ import annotations

import logging

import trio

from kbroker.api import RequestContext
from kbroker.wire import messages
from kbroker.wire.errors import FrameTooLarge, MalformedFrame, UnsupportedVersion, WireError
from kbroker.wire.protocol import FrameDecoder, decode_request, encode_response, peek_request

from .send import send_parts

log = logging.getLogger("kbroker.server")

API_VERSIONS = 18
UNSUPPORTED_VERSION = 35
RECEIVE_SIZE = 256 * 1024


class Connection:
    def __init__(self, server, stream, listener_name: str):
        self.server = server
        self.stream = stream
        self.listener_name = listener_name
        self.busy = False
        self._recv_scope: trio.CancelScope | None = None
        try:
            peer = stream.socket.getpeername()
            self.client_host, self.client_port = peer[0], peer[1]
        except (AttributeError, OSError):
            self.client_host, self.client_port = "unknown", 0
        self.requests = 0

    def __str__(self) -> str:
        return f"{self.client_host}:{self.client_port}"

    def stop_if_idle(self) -> None:
        """Shutdown: a connection waiting for a request stops now; a busy one stops after
        answering the request it is handling."""
        if self._recv_scope is not None:
            self._recv_scope.cancel()

    async def run(self) -> None:
        try:
            await self._loop()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except Exception:  # noqa: BLE001 - never let one connection take the broker down
            log.exception("closing connection from %s after an unexpected error", self)
        finally:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)

    async def _loop(self) -> None:
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

    async def _handle(self, frame: bytes) -> bool:
        """Answer one request; False means close the connection."""
        self.requests += 1
        try:
            api_key, version, correlation_id = peek_request(frame)
        except MalformedFrame as e:
            log.warning("closing connection from %s: %s", self, e)
            return False
        spec = self.server.registry.get(api_key)
        if api_key == API_VERSIONS and (spec is None or version > spec.max_version):
            await self._send_api_versions_unsupported(correlation_id)
            return True
        if spec is None or not spec.min_version <= version <= spec.max_version:
            name = spec.name if spec else f"api key {api_key}"
            log.warning("closing connection from %s: unsupported request %s v%d", self, name, version)
            return False
        try:
            header, request = decode_request(frame)
        except (MalformedFrame, UnsupportedVersion, WireError) as e:
            log.warning("closing connection from %s: bad %s v%d request: %s", self, spec.name, version, e)
            return False
        ctx = RequestContext(self.server.broker, api_key, version, correlation_id,
                             header.client_id, self.client_host, self.listener_name)
        try:
            response = await spec.handler(ctx, request)
            if response is None:
                return True
            parts = encode_response(api_key, version, correlation_id, response)
        except Exception:  # noqa: BLE001 - a bug in one handler must not take the broker down
            log.exception("closing connection from %s: %s v%d (correlation id %d, client %r) failed",
                          self, spec.name, version, correlation_id, header.client_id)
            return False
        await send_parts(self.stream, parts)
        return True

    async def _send_api_versions_unsupported(self, correlation_id: int) -> None:
        spec = self.server.registry.get(API_VERSIONS)
        lo, hi = (spec.min_version, spec.max_version) if spec else (0, 0)
        resp = messages.ApiVersionsResponse(
            error_code=UNSUPPORTED_VERSION,
            api_keys=[messages.ApiVersionsResponse.ApiVersion(api_key=API_VERSIONS,
                                                              min_version=lo, max_version=hi)])
        await send_parts(self.stream, encode_response(API_VERSIONS, 0, correlation_id, resp))
