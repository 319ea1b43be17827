"""A REST gateway for Kafka clients that speak HTTP: Confluent REST Proxy's API v2 and v3,
served by the broker process itself on a listener of its own (issue 35).

Off by default; on with ``kbroker.rest.proxy.listen=HOST:PORT`` (``kbroker serve
--rest-proxy HOST:PORT``; ``--dev`` and so ``make run`` serve it on ``127.0.0.1:8082``,
Confluent's port). curl is the client::

    curl -X POST -H 'Content-Type: application/vnd.kafka.json.v2+json' \\
         --data '{"records":[{"value":{"a":1}}]}' http://127.0.0.1:8082/topics/orders

Rules:

- **Same paths as the wire protocol.** Every read and change goes through the registered
  Kafka API handler, called in process with a typed request (``inproc.call_api``, as the
  console does): Produce, Fetch, Metadata, ListOffsets, OffsetCommit/OffsetFetch,
  ConsumerGroupHeartbeat, CreateTopics/DeleteTopics, DescribeConfigs/IncrementalAlterConfigs,
  ListGroups/DescribeGroups/ConsumerGroupDescribe, Describe/Create/DeleteAcls. So the
  broker's rules, ACLs, quotas-free meters and error codes apply unchanged; no rule is
  implemented twice and there is no Kafka client inside the broker.
- **Consumer instances are group members of this broker's coordinator** (KIP-848's
  ConsumerGroupHeartbeat, in process), not a client: ``consumers.py``.
- **Bounded.** Request bodies at most ``kbroker.rest.proxy.max.request.bytes`` (413), at
  most ``v2_topics.MAX_RECORDS`` records per request, ``consumers.MAX_INSTANCES``
  consumer instances per node, answers of a poll at most ``max_bytes``.
- **Confluent's answers.** Content types ``application/vnd.kafka[.fmt].v2+json`` (v2) and
  ``application/json`` (v3), error bodies ``{"error_code", "message"}`` with Confluent's
  codes (``errors.py``).
- **Who calls.** With an authorizer, HTTP Basic with the cluster's SCRAM/PLAIN users, every
  call acting as that principal (``app.py``); HTTPS with the broker's ``ssl.*`` keys when
  ``kbroker.rest.proxy.ssl.enabled``.
- **Measured.** Requests by endpoint and status, latency and consumer instances on the
  broker's ``/metrics`` (``kbroker_rest_proxy_*``, ``metrics.py``).
- **Every node serves it.** Produce, Fetch and ListOffsets for partitions another node
  leads go to that leader over the node-to-node RPC client, after the local handler's ACL
  check (``forward.py``); a consumer instance runs on the node coordinating its group
  (another node answers 50003 naming it).

Layout: ``app.py`` (routes, principal, error answers), ``media.py`` (content types, JSON
bodies), ``errors.py``, ``inproc.py``, ``cluster.py`` (Metadata reads), ``formats.py``
(embedded formats), ``avro.py`` (the avro format through the broker's schema registry,
``kbroker/schema_registry``, called in process), ``schema_formats.py`` (protobuf and
jsonschema the same way), ``produce.py`` (Produce), ``forward.py``
(partitions led elsewhere), ``v2_topics.py``, ``v2_consumers.py`` with ``consumers.py``
(the instances), ``v3.py`` / ``v3_configs.py`` / ``v3_partitions.py`` /
``v3_reassignments.py`` / ``v3_groups.py`` /
``v3_acls.py`` / ``v3_records.py`` (with ``v3_schemas.py`` and ``subject_names.py``:
schema-based keys and values, the subject name strategies), ``metrics.py``.

Spec: Confluent REST Proxy API reference (v2 and v3); error codes from its ``Errors`` and
``KafkaExceptionMapper`` classes (facts only, no code).
"""
from __future__ import annotations

from kbroker.http import HttpServer, Router

from .app import Routes, dispatch, listener_error

DEFAULT_MAX_REQUEST_BYTES = 10_485_760


class Gateway:
    """One node's REST gateway: its routes and consumer instances."""

    def __init__(self, server):
        from . import (v2_consumers, v2_topics, v3, v3_acls, v3_configs, v3_groups,
                       v3_partitions, v3_reassignments, v3_records)
        from .consumers import ConsumerInstances
        self.server = server
        self.http: HttpServer | None = None
        self.consumers = ConsumerInstances(server)
        from .avro import Schemas
        from .forward import Forwarder
        self.schemas = Schemas()
        from .schema_formats import TypedSchemas
        self.typed = TypedSchemas()
        from .subject_names import RecordNames
        self.record_names = RecordNames()
        self.forward = Forwarder(server)
        self.consumers.forward = self.forward
        self.routes = Routes()
        from .metrics import RequestMeter
        self.meter = RequestMeter()
        # v3_partitions first: its ``topics/-/configs`` and ``brokers/-/configs`` come
        # before the ``{topic}`` and ``{broker}`` routes that would take "-" for a name
        for module in (v2_topics, v2_consumers, v3_partitions, v3, v3_configs, v3_reassignments,
                       v3_groups, v3_acls, v3_records):
            module.install(self.routes)

    async def keep_forwarder(self, context) -> None:
        """The listener's task that closes the forwarder's connections when it stops."""
        import trio
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await self.forward.aclose()

    def listener_address(self) -> str:
        return self.http.address if self.http is not None else "127.0.0.1:8082"

    async def handle(self, request):
        return await dispatch(self.routes, self, request)

    def metric_families(self) -> list:
        """Its ``/metrics`` families (``kbroker.metrics.collect`` asks): ``metrics.py``."""
        from .metrics import families
        return families(self)

    def statistics(self) -> dict:
        return {"consumer_instances": len(self.consumers.instances),
                "requests": self.http.requests if self.http is not None else 0}


def _config(server, key: str, default):
    try:
        value = server.config.get(key)
    except KeyError:
        return default
    return default if value is None else value


def _tls(server):
    """The HTTPS context from the broker's ``ssl.*`` keys when
    ``kbroker.rest.proxy.ssl.enabled`` (Kafka's keystore/truststore/client-auth rules,
    ``kbroker.security.tls``), else None."""
    if not _config(server, "kbroker.rest.proxy.ssl.enabled", False):
        return None
    from kbroker.config.broker import ConfigError
    from kbroker.security.tls import TlsConfigError, server_context
    values = server.config.values
    try:
        return server_context(values.get)
    except TlsConfigError as e:
        raise ConfigError(e.key, f"kbroker.rest.proxy.ssl.enabled: {str(e).split(': ', 1)[-1]}") from None


def build_listener(listen: str, server) -> HttpServer:
    """The gateway's HttpServer for ``server`` (a ``kbroker.server.Server``)."""
    gateway = Gateway(server)
    router = Router()
    for method in ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        router.add(method, "/", gateway.handle, prefix=True)
    router.add_task(gateway.consumers.run)
    router.add_task(gateway.keep_forwarder)
    http = HttpServer(listen, context=server, router=router, name="rest-proxy listener",
                      config_key="kbroker.rest.proxy.listen",
                      max_body=int(_config(server, "kbroker.rest.proxy.max.request.bytes",
                                           DEFAULT_MAX_REQUEST_BYTES)),
                      error_response=listener_error, ssl_context=_tls(server))
    gateway.http = http
    http.gateway = gateway
    return http


__all__ = ["Gateway", "build_listener"]
