"""A small Kafka-protocol RPC client on trio, for node-to-node traffic on loopback or LAN.

Used by the Raft driver (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot to
the other voters), by brokers talking to the active controller (BrokerRegistration,
BrokerHeartbeat, forwarded admin requests) and by ``kbroker cluster`` tooling.

Each peer has a small pool of connections; a call takes one connection for itself (Kafka
answers a connection's requests in order and one long-polling Fetch must not hold a Vote
back), writes one request frame and reads one response frame. Any failure — refused
connection, timeout, a frame that does not decode — closes that connection and returns
``None``: the callers (the Raft core's timers, the forwarding retry loop) decide what to do.
With ``security`` (``kbroker.security.client``) every new connection is first wrapped in
TLS and/or authenticated with SASL, as the listener it calls requires; a failure there
(``SecureConnectError``, an ``OSError``) is a failed call like a refused connection.
"""
from __future__ import annotations

import logging
import math

import trio

from kbroker.wire.errors import WireError
from kbroker.wire.protocol import FrameDecoder, decode_response, encode_request

log = logging.getLogger("kbroker.rpc")

MAX_RESPONSE = 256 * 1024 * 1024
POOL_SIZE = 4


def _reason(e: BaseException) -> str:
    if isinstance(e, trio.TooSlowError):
        return "no answer in time"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror.lower()
    if isinstance(e, (EOFError, trio.BrokenResourceError, trio.ClosedResourceError)):
        return "connection closed by the peer"
    return str(e) or type(e).__name__


class _Conn:
    def __init__(self, stream):
        self.stream = stream
        self.decoder = FrameDecoder(MAX_RESPONSE)
        self.frames: list[bytes] = []


class RpcClient:
    """Calls to peers by id; ``endpoints`` maps id -> (host, port) and may be updated."""

    def __init__(self, endpoints: dict[int, tuple[str, int]] | None = None, client_id: str = "kbroker",
                 connect_timeout: float = 2.0, security=None):
        self.endpoints = dict(endpoints or {})
        # kbroker.security.client.ClientSecurity: TLS/SASL of the listener called (None: PLAINTEXT)
        self.security = security
        self.client_id = client_id
        self.connect_timeout = connect_timeout
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._correlation = 0
        self.stats = {"calls": 0, "failures": 0, "connects": 0}
        # (host, port) -> why its last call failed, until a call succeeds (for operators' logs)
        self.last_error: dict[tuple[str, int], str] = {}

    async def call(self, dest: int, api_key: int, version: int, body, timeout: float = 5.0):
        addr = self.endpoints.get(dest)
        if addr is None:
            return None
        return await self.call_addr(addr, api_key, version, body, timeout)

    async def call_addr(self, addr: tuple[str, int], api_key: int, version: int, body,
                        timeout: float = 5.0):
        self.stats["calls"] += 1
        conn = None
        try:
            with trio.fail_after(timeout if timeout and timeout != math.inf else 3600):
                conn = await self._checkout(addr)
                self._correlation = (self._correlation + 1) & 0x7FFFFFFF
                corr = self._correlation
                await conn.stream.send_all(encode_request(api_key, version, corr, self.client_id, body))
                frame = await self._read_frame(conn)
                got, resp = decode_response(frame, api_key, version)
                if got != corr:
                    raise WireError(f"correlation id {got}, expected {corr}")
        except (OSError, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError,
                WireError, EOFError) as e:
            self.stats["failures"] += 1
            self.last_error[addr] = _reason(e)
            log.debug("rpc %s key %d v%d failed: %r", addr, api_key, version, e)
            if conn is not None:
                with trio.CancelScope(shield=True):
                    await trio.aclose_forcefully(conn.stream)
            return None
        except BaseException:
            if conn is not None:
                with trio.CancelScope(shield=True):
                    await trio.aclose_forcefully(conn.stream)
            raise
        self.last_error.pop(addr, None)
        pool = self._idle.setdefault(addr, [])
        if len(pool) < POOL_SIZE:
            pool.append(conn)
        else:
            await trio.aclose_forcefully(conn.stream)
        return resp

    async def _checkout(self, addr) -> _Conn:
        pool = self._idle.get(addr)
        if pool:
            return pool.pop()
        self.stats["connects"] += 1
        with trio.fail_after(self.connect_timeout):
            stream = await trio.open_tcp_stream(*addr)
        if self.security is not None:
            from kbroker.security.client import secure_stream
            try:
                with trio.fail_after(max(self.connect_timeout, 5.0)):
                    stream = await secure_stream(stream, self.security, addr[0])
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
        return _Conn(stream)

    @staticmethod
    async def _read_frame(conn: _Conn) -> bytes:
        while not conn.frames:
            data = await conn.stream.receive_some(256 * 1024)
            if not data:
                raise EOFError("peer closed the connection")
            conn.frames.extend(conn.decoder.feed(data))
        return conn.frames.pop(0)

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for c in pool:
                await trio.aclose_forcefully(c.stream)
        self._idle.clear()
