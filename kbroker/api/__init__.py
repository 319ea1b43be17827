"""The API layer: one module per Kafka API key, each registering its handler here.

A module declares what it serves with the ``@api`` decorator::

    @api(3, versions=(0, 12))
    async def handle(ctx: RequestContext, request) -> MetadataResponse | None: ...

``versions`` is the advertised range (what ApiVersions reports); ``served_from`` (default
the advertised minimum) is the lowest version the handler really serves — a request below
it closes the connection, since the schema (Kafka's definitions) has no such version to
decode: Produce advertises v0 for old librdkafka feature detection but serves v3+, as Kafka 4
does (KIP-896, KAFKA-18659). ``advertised=False`` serves an API without listing it in
ApiVersions (client telemetry: Kafka lists it only with a telemetry receiver plugin). The
registry is the single
source of truth: ApiVersions is derived from it, never from a hand-kept table.

Modules are imported on the first request of their API (issue 32, start-up): a plain node
serving Produce, Fetch and Metadata never loads the share-group, streams, transaction, ACL
or SCRAM handlers, nor the managers and message classes they bind. :func:`load_all` fills
the registry from ``_index.py``, the decorators' arguments written out by
``python -m kbroker.api._make_index``; each entry's handler imports its module when first
called and hands over to the handler the module registered. ``tests/broker/test_api_index.py``
imports every module and fails when the index differs from what the modules declare.

Handlers are thin: decode has already happened; they check, call the broker's managers
(``ctx.broker``) and build the response. Returning ``None`` means "send no response"
(Produce with acks=0).
"""
from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from kbroker.wire import messages

_audit = logging.getLogger("kbroker.authorizer")   # denials, as Kafka's kafka.authorizer.logger


@dataclass(frozen=True)
class ApiSpec:
    """One API of the registry: its key, advertised range and handler."""
    api_key: int
    name: str               # e.g. "Metadata"
    min_version: int        # advertised minimum
    max_version: int        # advertised maximum
    served_from: int        # lowest version actually served
    handler: Callable[["RequestContext", Any], Awaitable[Any]]
    advertised: bool = True  # listed by ApiVersions (else served to clients that call it anyway)


REGISTRY: dict[int, ApiSpec] = {}       # what connections dispatch on (lazy entries too)
_LOADED: dict[int, ApiSpec] = {}        # what imported modules registered


def api(api_key: int, *, versions: tuple[int, int], served_from: int | None = None,
        advertised: bool = True):
    """Register the decorated coroutine as the handler of ``api_key``."""
    lo, hi = versions
    # the schema, not the message class: classes are built when the first request comes
    found = messages.request_versions(api_key)
    if found is None:
        raise ValueError(f"no request schema for api key {api_key}")
    request_name, valid = found
    served = lo if served_from is None else served_from
    if served not in valid or hi not in valid or not lo <= served <= hi:
        raise ValueError(f"{request_name}: versions {served}-{hi} outside {valid}")

    def register(fn):
        if api_key in _LOADED:
            raise ValueError(f"api key {api_key} registered twice")
        spec = ApiSpec(api_key, request_name.removesuffix("Request"), lo, hi,
                       lo if served_from is None else served_from, fn, advertised)
        _LOADED[api_key] = spec
        current = REGISTRY.get(api_key)
        # an index entry gives way; anything else put there (a test's wrapper) stays
        if current is None or getattr(current.handler, "lazy_module", None) is not None:
            REGISTRY[api_key] = spec
        return fn
    return register


@dataclass
class RequestContext:
    """What a handler knows about the request beyond its body."""

    broker: Any                 # kbroker.node.broker.Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str = "127.0.0.1"
    listener: str = "PLAINTEXT"
    extra: dict = field(default_factory=dict)
    principal: str = "User:ANONYMOUS"
    security_protocol: str = "PLAINTEXT"   # of the listener the request came in on

    @property
    def version(self) -> int:
        return self.api_version

    # --- authorization (kbroker.authz): the one way handlers ask; with no authorizer
    # configured every check is a single attribute test and allows.
    @property
    def authorizer(self):
        return getattr(self.broker, "authorizer", None)

    def authorize(self, operation: int, resource_type: int, name: str) -> bool:
        """May this request's principal do ``operation`` on the resource?"""
        a = getattr(self.broker, "authorizer", None)
        if a is None:
            return True
        if a.authorize(self.broker.metadata.acl_index, self.principal, self.client_host,
                       operation, resource_type, name):
            return True
        if _audit.isEnabledFor(logging.DEBUG):
            from kbroker.authz.acls import OPERATION_NAMES, RESOURCE_NAMES
            _audit.debug("Principal = %s is Denied operation = %s from host = %s on resource = "
                         "%s:%s for request = %s", self.principal, OPERATION_NAMES.get(operation),
                         self.client_host, RESOURCE_NAMES.get(resource_type), name,
                         REGISTRY[self.api_key].name if self.api_key in REGISTRY else self.api_key)
        return False

    def authorize_cluster(self, operation: int) -> bool:
        return self.authorize(operation, 4, "kafka-cluster")

    def authorized_names(self, operation: int, resource_type: int, names) -> set:
        """The subset of ``names`` the principal may ``operation``."""
        a = getattr(self.broker, "authorizer", None)
        if a is None:
            return set(names)
        index = self.broker.metadata.acl_index
        return {n for n in set(names) if a.authorize(index, self.principal, self.client_host,
                                                     operation, resource_type, n)}

    def authorize_any(self, operation: int, resource_type: int) -> bool:
        """May the principal do ``operation`` on some resource of the type (Kafka's
        ``authorizeByResourceType``)?"""
        a = getattr(self.broker, "authorizer", None)
        if a is None:
            return True
        return a.authorize_by_resource_type(self.broker.metadata.acl_index, self.principal,
                                            self.client_host, operation, resource_type)

    def authorized_operations(self, requested: bool, resource_type: int, name: str) -> int:
        """KIP-430 bitfield of a resource (Kafka's "not requested" value when not asked)."""
        from kbroker.api import _authorized
        if not requested:
            return _authorized.NOT_REQUESTED
        a = getattr(self.broker, "authorizer", None)
        if a is None:
            return _authorized.ALL_OPERATIONS[resource_type]
        return a.authorized_operations(self.broker.metadata.acl_index, self.principal,
                                       self.client_host, resource_type, name)


def _lazy(api_key: int, module: str):
    """A handler that imports ``module`` on its first call and then runs what it registered."""
    async def handler(ctx, request):
        spec = _LOADED.get(api_key)
        if spec is None:
            importlib.import_module(f"{__name__}.{module}")
            spec = _LOADED[api_key]
        return await spec.handler(ctx, request)
    handler.lazy_module = module
    return handler


def load_all() -> dict[int, ApiSpec]:
    """The registry, every API of the index in it: entries of modules not imported yet carry
    a handler that imports the module on the first request (see the module docstring)."""
    from ._index import INDEX
    for api_key, (module, name, lo, hi, served, advertised) in INDEX.items():
        if api_key not in REGISTRY:
            REGISTRY[api_key] = ApiSpec(api_key, name, lo, hi, served, _lazy(api_key, module),
                                        advertised)
    return REGISTRY


def import_all() -> dict[int, ApiSpec]:
    """Import every API module of this package (each registers itself) and return what they
    registered: what the index must say (``_make_index``, the index test)."""
    import pkgutil
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return dict(_LOADED)

