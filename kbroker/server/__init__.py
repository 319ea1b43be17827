"""The network side: trio listeners, one task per connection, graceful shutdown.

One nursery tree::

    Server.run
    ├── broker maintenance tasks (log flush / retention / cleaner)
    └── connections nursery
        ├── accept loop per listener (each in its own cancel scope)
        ├── Connection.run per client (none for a client silent for 250 ms or more:
        │   kbroker/server/dormant.py, whose watcher gives it a task again)
        └── the dormant connections' watcher and sweep, the idle sweep (idle.py)

Startup locks the log directories (``.lock``, kbroker/log/dirs.py: a second broker on the
same directory stops here), binds every listener (so ``port 0`` can be resolved and
advertised) and the HTTP listener when ``kbroker.http.listen`` is set (kbroker/http: it runs
from then on, so ``/health`` and ``/ready`` answer during start-up), then starts the broker
(logs, metadata replay, broker registration), then accepts; readiness is reported with
``task_status.started(server)``, ``server.ready`` and one ``kbroker ready: ...`` log line.

Shutdown (``request_shutdown()``, SIGINT/SIGTERM via ``run_until_signal``): first the
controlled shutdown (KIP-631, as Kafka's ``BrokerServer.shutdown``): while still serving, the
broker asks the controller to move its leaderships and take it out of every ISR, and waits
until the controller lets it go (bounded by ``broker.session.timeout.ms``); then stop
accepting and close the listening sockets; connections waiting for a request close at
once, connections handling one finish it (its response is written) within
``shutdown_timeout`` seconds, after which everything left is cancelled; then the log
maintenance stops and the broker flushes and closes every log, writing the
clean-shutdown marker. So a SIGTERM ends within ``broker.session.timeout.ms`` plus
``shutdown_timeout`` even when no controller answers (Kafka's broker waits up to five
minutes there). A second signal (``request_shutdown(force=True)``) abandons every wait on
the network — the controlled shutdown, busy connections, answers still owed — and only
closes the logs; ``kbroker.server.signals`` ends the process outright if even that stalls.

Embedding (tests)::

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve, config)
        ... server.bootstrap ...
        server.request_shutdown()
"""
from __future__ import annotations

import functools
import logging
from pathlib import Path

import trio

from kbroker.api import load_all
from kbroker.common import modimage
from kbroker.node.broker import Broker
from kbroker.config.broker import BrokerConfig, Listener
from kbroker.security.credentials import Credentials
from kbroker.security.listeners import build_all

from .accept import AcceptBurst
from .bind import buffer_settings, open_tcp_listeners
from .buffers import BufferPool
from .connection import Connection
from .dormant import Dormancy
from .idle import expire_idle
from .writer import AnswerWriter

log = logging.getLogger("kbroker.server")

__all__ = ["Server", "serve", "run_until_signal"]

_CONNECTION_TASK = "kbroker.server.Connection"


class Server:
    def __init__(self, config: BrokerConfig, *, clock=None, shutdown_timeout: float = 5.0):
        self.config = config
        self.clock = clock
        self.shutdown_timeout = shutdown_timeout
        self.registry = load_all()
        self.max_frame = config.get("socket.request.max.bytes")
        self.idle_timeout_s = config.get("connections.max.idle.ms") / 1000
        self.broker: Broker | None = None
        self.draining = False
        self.bound: list[Listener] = []
        self._stop = trio.Event()
        self._stopped = trio.Event()
        self._conns: set[Connection] = set()
        self._no_conns = trio.Event()
        self._slot_freed = trio.Event()      # a connection closed (max.connections waits on it)
        self._accept_scopes: list[trio.CancelScope] = []
        self._force = False
        self._controlled_scope: trio.CancelScope | None = None
        self._drain_scope: trio.CancelScope | None = None
        # cancelled by a stop requested before the broker is ready (e.g. no controller
        # answers, so registration never completes): start-up is abandoned, not awaited
        self._startup_scope = trio.CancelScope()
        from kbroker.node.stats import RequestStats
        self.request_stats = RequestStats({k: s.name for k, s in self.registry.items()})
        self.connections_created: dict[str, int] = {}   # listener -> accepted connections
        self.receive_buffers = BufferPool()   # lent to connections holding part of a frame
        self.dormancy: Dormancy | None = None  # idle connections without a task (dormant.py)
        # plaintext answers written by a thread while the loop is crowded (writer.py)
        self.writer = AnswerWriter(config.get("kbroker.network.answer.writer"))
        self.serving = False     # listeners bound, broker registered and unfenced (/ready)
        self.http = None         # kbroker.http.HttpServer when kbroker.http.listen is set
        self.rest_proxy = None   # the REST gateway's HttpServer (kbroker.rest.proxy.listen)
        self.schema_registry = None   # kbroker.schema_registry.SchemaRegistry when configured
        # per-listener TLS/SASL settings (built and checked when the config was loaded)
        self.listener_security = getattr(config, "listener_security", None) or build_all(config)
        from kbroker.node.broker import SystemClock
        self.credentials = Credentials(
            lambda: self.broker.metadata if self.broker else None,
            lambda: config.get("delegation.token.secret.key"),
            lambda: (self.broker.clock if self.broker else SystemClock()).now_ms())

    # ------------------------------------------------------------------ control
    def request_shutdown(self, *, force: bool = False) -> None:
        """Stop serving. ``force`` (a second signal): stop waiting on the network at once —
        the controlled-shutdown wait, busy connections and owed answers are abandoned; the
        logs are still closed."""
        if force:
            self._force = True
            for scope in (self._controlled_scope, self._drain_scope):
                if scope is not None:
                    scope.cancel()
            for c in list(self._conns):
                c.stop_if_idle()
        self._startup_scope.cancel()
        self._stop.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    @property
    def bootstrap(self) -> str:
        l = self.bound[0]
        return f"{l.host or '127.0.0.1'}:{l.port}"

    @property
    def port(self) -> int:
        return self.bound[0].port

    @property
    def ready(self) -> bool:
        """True while the broker serves clients: listeners bound, metadata caught up, broker
        registered and unfenced; false before that and from the start of shutdown."""
        return self.serving and not self.draining and not self._stop.is_set()

    @property
    def forced(self) -> bool:
        """A forced stop was requested: nothing may wait on the network any more."""
        return self._force

    @property
    def stopping(self) -> bool:
        """A shutdown was requested (controlled shutdown, draining or closing)."""
        return self._stop.is_set()

    def connection_counts(self) -> dict[str, int]:
        """Open client connections per listener name."""
        out = {l.name: 0 for l in self.bound}
        for c in list(self._conns):
            out[c.listener_name] = out.get(c.listener_name, 0) + 1
        return out

    def ready_line(self) -> str:
        # a controller-only node has no client listener: name the controller plane's
        where = ", ".join(str(l) for l in self.bound or self.config.controller_listeners)
        return (f"kbroker ready: listening on {where} (node {self.config.node_id}, "
                f"cluster {self.broker.cluster_id}, data "
                f"{', '.join(str(Path(d).resolve()) for d in self.config.log_dirs)})")

    # ------------------------------------------------------------------ run
    async def _bind(self) -> list[tuple[Listener, list]]:
        out = []
        settings = buffer_settings(self.config)
        for l in self.config.listeners:
            try:
                socks = await open_tcp_listeners(l.port, l.host, **settings)
            except OSError as e:
                for _, ss in out:
                    for s in ss:
                        await s.aclose()
                raise OSError(e.errno, f"cannot listen on {l}: {e.strerror}") from None
            port = socks[0].socket.getsockname()[1]
            out.append((Listener(l.name, l.host, port, l.security_protocol), socks))
        # a listener configured with port 0 is advertised with the port it really got
        ports = {l.name: b.port for (b, _), l in zip(out, self.config.listeners)}
        self.config.advertised_listeners = [
            Listener(a.name, a.host, ports.get(a.name, a.port), a.security_protocol) if a.port == 0 else a
            for a in self.config.advertised_listeners]
        return out

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        self.broker = Broker(self.config, self.clock)
        bound: list = []
        try:
            # the log directories are ours before anything else happens (Kafka's .lock)
            self.broker.lock_log_dirs()
            bound = await self._bind()
            self.bound = [b for b, _ in bound]
            listen = self.config.get("kbroker.http.listen")
            if listen:
                from kbroker.http import HttpServer
                self.http = HttpServer(listen, context=self)
                await self.http.bind()
            rest_listen = self.config.get("kbroker.rest.proxy.listen")
            if rest_listen:
                from kbroker.rest_proxy import build_listener
                self.rest_proxy = build_listener(rest_listen, self)
                try:
                    await self.rest_proxy.bind()
                except OSError as e:
                    if not getattr(self.config, "rest_proxy_optional", False):
                        raise
                    log.warning("REST gateway not started: %s (set kbroker.rest.proxy.listen or "
                                "--rest-proxy to serve it elsewhere)", e.strerror)
                    self.rest_proxy = None
            sr_listen = self.config.get("kbroker.schema.registry.listen")
            if sr_listen:
                from kbroker.schema_registry import SchemaRegistry
                self.schema_registry = SchemaRegistry(
                    self, sr_listen, optional=getattr(self.config, "schema_registry_optional", False))
                await self.schema_registry.bind()
            async with trio.open_nursery() as root:
                if self.http is not None:
                    # before the broker: /health and /ready answer during start-up
                    await root.start(self.http.run)
                if self.rest_proxy is not None:
                    # answers 503 (50003) until the broker below has started
                    await root.start(self.rest_proxy.run)
                with self._startup_scope:
                    await self.broker.start(root)
                if self._startup_scope.cancelled_caught or self._stop.is_set():
                    log.warning("stopping before the broker was ready (%s)", self.broker.startup_stage())
                    root.cancel_scope.cancel()
                    return
                if self.schema_registry is not None:
                    await root.start(self.schema_registry.run)
                async with trio.open_nursery() as conns:
                    conns.start_soon(expire_idle, self._conns, self.idle_timeout_s)
                    await conns.start(self.writer.run)
                    dormant_after_ms = self.config.get("kbroker.connections.dormant.after.ms")
                    if dormant_after_ms > 0:
                        self.dormancy = Dormancy(functools.partial(
                            conns.start_soon, self._run_connection, name=_CONNECTION_TASK),
                            dormant_after_ms / 1000)
                        conns.start_soon(self.dormancy.watch)
                        conns.start_soon(self.dormancy.run_sweeps, self)
                    for listener, socks in bound:
                        for sock in socks:
                            scope = trio.CancelScope()
                            self._accept_scopes.append(scope)
                            conns.start_soon(self._accept_loop, sock, listener.name, conns, scope)
                    log.info("%s", self.ready_line())
                    modimage.note_ready()
                    self.serving = True
                    task_status.started(self)
                    await self._stop.wait()
                    self.serving = False
                    await self._controlled_shutdown()
                    await self._drain(bound, conns)
                root.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                if self.http is not None:
                    await self.http.aclose()
                if self.rest_proxy is not None:
                    await self.rest_proxy.aclose()
                if self.schema_registry is not None:
                    await self.schema_registry.aclose()
                for _, socks in bound:
                    for s in socks:
                        await trio.aclose_forcefully(s)
                self.broker.shutdown()
                if self.dormancy is not None:
                    self.dormancy.close()
                self._stopped.set()

    async def _controlled_shutdown(self) -> None:
        """Leaderships move away while clients can still be answered (they are told
        ``NOT_LEADER_OR_FOLLOWER`` and go to the new leaders). Skipped by a forced stop."""
        lifecycle = getattr(self.broker, "lifecycle", None)
        if lifecycle is None or self._force:
            return
        with trio.CancelScope() as scope:
            self._controlled_scope = scope
            await lifecycle.shutdown(self.config.get("broker.session.timeout.ms") / 1000)
        self._controlled_scope = None

    async def _drain(self, bound, conns: trio.Nursery) -> None:
        log.info("shutting down: no new connections; %d open", len(self._conns))
        for scope in self._accept_scopes:
            scope.cancel()
        for _, socks in bound:
            for s in socks:
                await trio.aclose_forcefully(s)
        self.draining = True
        for c in list(self._conns):
            c.stop_if_idle()
        if self._conns and not self._force:
            with trio.move_on_after(self.shutdown_timeout) as scope:
                self._drain_scope = scope       # a forced stop cuts the grace period short
                await self._no_conns.wait()
            self._drain_scope = None
        if self._conns and self._force:
            log.warning("forced stop: cancelling %d busy connection(s)", len(self._conns))
        elif self._conns:
            log.warning("cancelling %d connection(s) still busy after %.1f s",
                        len(self._conns), self.shutdown_timeout)
        conns.cancel_scope.cancel()

    async def _accept_loop(self, sock, listener_name: str, conns: trio.Nursery,
                           scope: trio.CancelScope) -> None:
        quotas = self.broker.quotas.connections
        inter_broker = self.config.inter_broker_listener()
        protected = (inter_broker is not None and inter_broker.name == listener_name
                     and len(self.config.listeners) > 1)
        burst = AcceptBurst(sock)
        with scope, burst:
            while True:
                if not quotas.slot_available(protected):
                    # max.connections: stop accepting until a connection closes (Kafka's
                    # waitForConnectionSlot); new clients wait in the listen backlog
                    quotas.stats["waited"] += 1
                    await self._slot_freed.wait()
                    continue
                # a connection already waiting in the backlog is taken without yielding, after
                # the slot check like any other (kbroker/server/accept.py)
                stream = burst.take()
                if stream is None:
                    try:
                        stream = await sock.accept()
                    except (trio.ClosedResourceError, trio.BrokenResourceError):
                        return
                    except OSError as e:
                        # EMFILE and friends: back off instead of spinning (as trio's serve_listeners)
                        log.error("accept failed on %s: %s", listener_name, e)
                        await trio.sleep(0.1)
                        continue
                    burst.refill()
                try:
                    ip = stream.socket.getpeername()[0]
                except (AttributeError, OSError):
                    ip = "unknown"
                admission = quotas.admit(ip)
                if not admission.ok:
                    if admission.throttle_ms:
                        # connection_creation_rate: closed after the throttle time, as Kafka
                        conns.start_soon(self._close_later, stream, admission.throttle_ms / 1000)
                    else:
                        await trio.aclose_forcefully(stream)   # max.connections.per.ip
                    continue
                conn = Connection(self, stream, listener_name)
                conn.quota_ip = conn.client_host if conn.client_host == ip else ip  # one string
                self._conns.add(conn)
                self.connections_created[listener_name] = self.connections_created.get(listener_name, 0) + 1
                self._no_conns = trio.Event() if self._no_conns.is_set() else self._no_conns
                # a fixed task name: trio would format one string per connection
                conns.start_soon(self._run_connection, conn, name=_CONNECTION_TASK)

    async def _run_connection(self, conn: Connection) -> None:
        try:
            await conn.run()
        finally:
            if not conn.dormant:      # (a dormant one is still open: kbroker/server/dormant.py)
                self._closed(conn)

    def _closed(self, conn: Connection) -> None:
        self.broker.quotas.connections.release(conn.quota_ip)
        self._slot_freed.set()
        self._slot_freed = trio.Event()
        self._conns.discard(conn)
        if self.dormancy is not None:
            self.dormancy.closed(conn)
        if not self._conns:
            self._no_conns.set()

    @staticmethod
    async def _close_later(stream, seconds: float) -> None:
        with trio.move_on_after(seconds):
            await trio.sleep_forever()
        await trio.aclose_forcefully(stream)


async def serve(config: BrokerConfig, *, clock=None, shutdown_timeout: float = 5.0,
                task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Run a broker until ``request_shutdown()`` is called on the ``Server`` passed to
    ``task_status.started``."""
    server = Server(config, clock=clock, shutdown_timeout=shutdown_timeout)
    await server.run(task_status=task_status)


async def run_until_signal(config: BrokerConfig, *, shutdown_timeout: float = 5.0) -> None:
    """The CLI's main: serve until SIGINT/SIGTERM; a second signal forces the stop, and ends
    the process if even that stalls (``kbroker.server.signals``; the caller has called
    ``signals.block()`` before starting trio)."""
    from kbroker.common import startup_gc

    from . import signals

    server = Server(config, shutdown_timeout=shutdown_timeout)
    # the modules are loaded: collect cycles again (the CLI paused it for the imports)
    startup_gc.resume()
    token = trio.lowlevel.current_trio_token()

    def on_signal(signum: int, count: int) -> None:
        try:
            token.run_sync_soon(functools.partial(server.request_shutdown, force=count > 1))
        except trio.RunFinishedError:
            pass

    signals.block()
    watcher = signals.SignalWatcher(on_signal).start()
    try:
        await server.run()
    finally:
        watcher.done()
