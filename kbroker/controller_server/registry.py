"""The controller plane's API registry (separate from the client plane's ``kbroker.api``)."""
from __future__ import annotations

import importlib

from kbroker.api import ApiSpec
from kbroker.wire import messages

CONTROLLER_REGISTRY: dict[int, ApiSpec] = {}

_MODULES = ("api_versions", "vote", "begin_quorum_epoch", "end_quorum_epoch", "describe_quorum",
            "fetch", "fetch_snapshot", "broker_registration", "broker_heartbeat",
            "allocate_producer_ids", "forwarded", "describe_cluster", "alter_partition",
            "envelope", "raft_voters", "assign_replicas_to_dirs", "unregister_controller")


CLUSTER_AUTHORIZATION_FAILED = 31


def controller_api(api_key: int, *, versions: tuple[int, int], cluster_operation: int | None = None):
    """Register a controller-plane handler. ``cluster_operation``: the operation on the
    cluster resource the caller (the connection's principal) needs, as Kafka's
    ``ControllerApis`` checks it (CLUSTER_ACTION for the KRaft and broker-lifecycle RPCs);
    refused requests get CLUSTER_AUTHORIZATION_FAILED as their top-level error."""
    lo, hi = versions
    cls = messages.request_class(api_key)
    if cls is None or lo not in cls._message.valid or hi not in cls._message.valid:
        raise ValueError(f"api key {api_key}: versions {lo}-{hi} not in the schema")

    def register(fn):
        if api_key in CONTROLLER_REGISTRY:
            raise ValueError(f"controller api key {api_key} registered twice")
        handler = fn
        if cluster_operation is not None:
            async def handler(ctx, request):
                if not ctx.authorize_cluster(cluster_operation):
                    return messages.response_class(api_key)(error_code=CLUSTER_AUTHORIZATION_FAILED)
                return await fn(ctx, request)
        CONTROLLER_REGISTRY[api_key] = ApiSpec(api_key, cls._message.name.removesuffix("Request"),
                                               lo, hi, lo, handler)
        return fn
    return register


def load_all() -> dict[int, ApiSpec]:
    for name in _MODULES:
        importlib.import_module(f"kbroker.controller_server.{name}")
    return CONTROLLER_REGISTRY
