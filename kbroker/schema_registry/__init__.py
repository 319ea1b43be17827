"""A Confluent-compatible schema registry served by the broker process (issue 28).

Off by default; on with ``kbroker.schema.registry.listen=HOST:PORT`` (or ``kbroker serve
--schema-registry HOST:PORT``; ``--dev`` serves it on 127.0.0.1:8081); HTTPS with
``kbroker.schema.registry.ssl.enabled=true`` and the broker's ``ssl.*`` keys. Its own HTTP
listener (``kbroker.http.HttpServer``: h11 on trio, bounded) answers Confluent's REST API
v1; the schemas live in the compacted ``_schemas`` topic in Confluent's record format, and
every node's state is a replay of that topic (records, then replay), so any node of a
cluster serves reads and writes are ordered by the log.

Layout, lowest first: ``records.py`` (the topic's key/value JSON), ``state.py`` (the pure
replay), ``store.py`` (the topic: create, read, append), ``types/`` (schema parsing and
compatibility, per schema type), ``service.py`` (the operations and their rules),
``rest.py`` (paths, bodies, status codes), and :class:`SchemaRegistry` here (the listener
in the broker's nursery).
"""
from __future__ import annotations

import logging

import trio

log = logging.getLogger("kbroker.schema_registry")

DEV_LISTEN = "127.0.0.1:8081"


class SchemaRegistry:
    """The registry of one broker process: its listener and its service. Created and bound
    by ``kbroker.server.Server`` before the broker starts, run once the broker is up."""

    def __init__(self, server, listen: str, *, optional: bool = False):
        from kbroker.http import HttpServer

        from .rest import MAX_BODY, error_response
        self.server = server
        self.optional = optional        # --dev's default address: a busy port only warns
        self.service = None
        self.routes = None
        self.tls = bool(server.config.get("kbroker.schema.registry.ssl.enabled"))
        self.http = HttpServer(listen, context=server, router=_empty_router(),
                               max_body=MAX_BODY, error_response=error_response,
                               ssl_context=tls_context(server.config) if self.tls else None,
                               name="schema registry listener")
        self.enabled = True

    @property
    def address(self) -> str:
        return self.http.address

    async def bind(self) -> None:
        try:
            await self.http.bind()
        except OSError as e:
            if not self.optional:
                raise OSError(e.errno, str(e.strerror).replace("kbroker.http.listen",
                                                               "kbroker.schema.registry.listen")) from None
            log.warning("schema registry not started: %s (set kbroker.schema.registry.listen "
                        "or --schema-registry to serve it elsewhere)", e.strerror)
            self.enabled = False

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        if not self.enabled:
            task_status.started(self)
            return
        from .rest import Routes
        from .service import RegistryService
        broker = self.server.broker
        cfg = broker.config
        self.service = RegistryService(
            broker, replication_factor=int(cfg.get("kbroker.schema.registry.topic.replication.factor")),
            timeout_s=max(1.0, int(cfg.get("request.timeout.ms") or 30_000) / 1000))
        from .auth import RegistryAuth
        self.routes = Routes(self.service, RegistryAuth(self.server))
        self.http.router = self.routes.router()
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.http.run)
                nursery.start_soon(self._replay_on_start)
                log.info("schema registry on %s://%s", "https" if self.tls else "http",
                         self.http.address)
                task_status.started(self)
        finally:
            with trio.CancelScope(shield=True):
                await self.http.aclose()
                await self.service.store.aclose()

    async def _replay_on_start(self) -> None:
        """Rebuild the state from ``_schemas`` now rather than at the first request (reads
        catch up again anyway; a failure here only leaves it to them)."""
        from .errors import RegistryError
        try:
            await self.service.store.catch_up()
        except RegistryError as e:
            log.info("schema registry: _schemas not replayed at start: %s", e.message)
        else:
            st = self.service.state.statistics()
            log.info("schema registry: replayed %d _schemas records (%d subjects, %d schemas)",
                     st["records"], st["subjects"], st["schemas"])

    async def aclose(self) -> None:
        await self.http.aclose()

    def metric_families(self) -> list:
        """Its ``/metrics`` families (``kbroker.metrics.collect`` asks)."""
        if self.service is None:
            return []
        from .metrics import families
        return families(self)

    def statistics(self) -> dict:
        if self.service is None:
            return {}
        return {"requests": self.routes.requests, "errors": self.routes.errors,
                **self.service.statistics()}


def tls_context(config):
    """The registry's TLS server context from the broker's ``ssl.*`` keys, each overridable
    as ``listener.name.schema_registry.ssl.*`` (as a Kafka listener's are); a bad or missing
    setting is a configuration error naming the key."""
    from kbroker.config.broker import ConfigError
    from kbroker.security.listeners import ListenerKeys
    from kbroker.security.tls import TlsConfigError, server_context
    keys = ListenerKeys(config.values, "schema_registry")
    try:
        return server_context(keys.get)
    except TlsConfigError as e:
        raise ConfigError(keys.key_of(e.key), str(e).split(": ", 1)[-1]) from None


def _empty_router():
    from kbroker.http.router import Router
    return Router()
