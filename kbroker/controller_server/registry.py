"""The controller plane's API registry (separate from the client plane's ``kbroker.api``)."""
from __future__ import annotations

import importlib

from kbroker.api import ApiSpec
from kbroker.wire import messages

CONTROLLER_REGISTRY: dict[int, ApiSpec] = {}

_MODULES = ("api_versions", "vote", "begin_quorum_epoch", "end_quorum_epoch", "describe_quorum",
            "fetch", "fetch_snapshot", "broker_registration", "broker_heartbeat",
            "allocate_producer_ids", "forwarded", "describe_cluster", "alter_partition",
            "envelope")


def controller_api(api_key: int, *, versions: tuple[int, int]):
    lo, hi = versions
    cls = messages.request_class(api_key)
    if cls is None or lo not in cls._message.valid or hi not in cls._message.valid:
        raise ValueError(f"api key {api_key}: versions {lo}-{hi} not in the schema")

    def register(fn):
        if api_key in CONTROLLER_REGISTRY:
            raise ValueError(f"controller api key {api_key} registered twice")
        CONTROLLER_REGISTRY[api_key] = ApiSpec(api_key, cls._message.name.removesuffix("Request"),
                                               lo, hi, lo, fn)
        return fn
    return register


def load_all() -> dict[int, ApiSpec]:
    for name in _MODULES:
        importlib.import_module(f"kbroker.controller_server.{name}")
    return CONTROLLER_REGISTRY
