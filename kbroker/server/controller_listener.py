"""The CONTROLLER listener(s) of a quorum voter: accepts connections and serves them with the
client plane's ``Connection`` against the controller plane's registry
(``kbroker/controller_server``: one handler module per controller API). Its sockets take
the node's ``socket.listen.backlog.size``, ``socket.receive.buffer.bytes`` and
``socket.send.buffer.bytes`` (``kbroker/server/bind.py``), as Kafka's controller acceptors do."""
from __future__ import annotations

import logging

import trio

from kbroker.controller_server import ControllerPlane
from kbroker.controller_server.registry import load_all
from kbroker.security.credentials import Credentials
from kbroker.server.bind import buffer_settings, open_tcp_listeners
from kbroker.server.buffers import BufferPool
from kbroker.server.connection import Connection
from kbroker.server.idle import expire_idle

log = logging.getLogger("kbroker.controller_server")


class ControllerServer:
    """Accepts connections on the controller listeners until cancelled."""

    def __init__(self, plane: ControllerPlane, listeners):
        self.plane = plane
        self.broker = plane                   # Connection builds RequestContext(server.broker, ...)
        self.listeners = listeners
        self.registry = load_all()
        cfg = plane.config
        self.max_frame = cfg.get("socket.request.max.bytes")
        self.idle_timeout_s = cfg.get("connections.max.idle.ms") / 1000
        self.draining = False
        self.bound = []
        self._conns: set[Connection] = set()   # open ones (connections.max.idle.ms sweep)
        self.receive_buffers = BufferPool()
        # TLS/SASL of the controller listeners (kbroker.security), as on client listeners
        self.listener_security = getattr(cfg, "controller_listener_security", None) or {}
        self.credentials = Credentials(lambda: plane.metadata,
                                       lambda: cfg.get("delegation.token.secret.key"),
                                       lambda: plane.broker.clock.now_ms())

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        socks = []
        try:
            settings = buffer_settings(self.plane.config)
            for l in self.listeners:
                ss = await open_tcp_listeners(l.port, l.host, **settings)
                socks.append((l, ss))
                self.bound.append((l.name, l.host, ss[0].socket.getsockname()[1]))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(expire_idle, self._conns, self.idle_timeout_s)
                for l, ss in socks:
                    for s in ss:
                        nursery.start_soon(self._accept_loop, s, l.name, nursery)
                log.info("controller listener(s) %s", ", ".join(f"{n}://{h}:{p}" for n, h, p in self.bound))
                task_status.started(self)
        finally:
            self.draining = True
            with trio.CancelScope(shield=True):
                for _, ss in socks:
                    for s in ss:
                        await trio.aclose_forcefully(s)

    async def _accept_loop(self, sock, name: str, nursery: trio.Nursery) -> None:
        while True:
            try:
                stream = await sock.accept()
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                return
            except OSError as e:
                log.error("accept failed on %s: %s", name, e)
                await trio.sleep(0.1)
                continue
            nursery.start_soon(self._run_connection, Connection(self, stream, name))

    async def _run_connection(self, conn: Connection) -> None:
        self._conns.add(conn)
        try:
            await conn.run()
        finally:
            self._conns.discard(conn)
