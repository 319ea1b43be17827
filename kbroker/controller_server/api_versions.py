"""ApiVersions (key 18) on the controller listener, v0–v5: this plane's registry.
v5 (KIP-1242): the cluster and node the client means to reach, checked as on the client plane
(``kbroker.api.api_versions.misrouted``: REBOOTSTRAP_REQUIRED, or INVALID_REQUEST for half a
name; no keys, finalized-features epoch -1).
Features: supported (``kbroker.config.features``; below v4 without those whose minimum level is 0,
KIP-1022) and finalized as in the client plane."""
from __future__ import annotations

from kbroker.api.api_versions import misrouted
from kbroker.config.features import finalized_levels, supported_feature_keys
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import CONTROLLER_REGISTRY, controller_api

Response = messages.ApiVersionsResponse


@controller_api(18, versions=(0, 5))
async def handle(ctx, request):
    if ctx.version >= 5:
        refused = misrouted(ctx, request)
        if refused is not None:
            return Response(error_code=refused, api_keys=[], finalized_features_epoch=-1)
    keys = [Response.ApiVersion(api_key=s.api_key, min_version=s.min_version, max_version=s.max_version)
            for s in sorted(CONTROLLER_REGISTRY.values(), key=lambda s: s.api_key)]
    resp = Response(error_code=ErrorCode.NONE, api_keys=keys)
    if ctx.version >= 3:
        image = ctx.broker.metadata
        # KIP-1022: a feature whose minimum level is 0 is announced from v4 only (as the
        # client plane and Kafka 4.3.1's controllers do)
        resp.supported_features = [f for f in supported_feature_keys(Response)
                                   if ctx.version >= 4 or f.min_version > 0]
        resp.finalized_features = [
            Response.FinalizedFeatureKey(name=n, min_version_level=lvl, max_version_level=lvl)
            for n, lvl in sorted(finalized_levels(image.features, getattr(ctx.broker, "quorum", None)).items())]
        resp.finalized_features_epoch = image.offset
    return resp
