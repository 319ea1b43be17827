"""ApiVersions (key 18), v0–v5: what this broker serves, derived from the registry.

- KIP-35 (v0), KIP-511 (v3: client software name/version; flexible), KIP-584 (v3:
  supported and finalized features).
- KIP-1242 (v5): the client names the cluster id and node id it means to reach (both or
  neither, else INVALID_REQUEST); a connection that reached another cluster or node is
  answered REBOOTSTRAP_REQUIRED (129) with no API keys, and the client rebootstraps. Both
  answers carry no keys and finalized-features epoch -1, as Kafka 4.4's.
- A request at a version above v5 never reaches this handler: the server answers it in
  v0 format with ``UNSUPPORTED_VERSION`` and ApiVersions' own range (see
  ``kbroker.server.connection``). The response header is always v0.
- v3+: an invalid client software name/version is ``INVALID_REQUEST`` (Kafka's rule).
- Features: the table of ``kbroker.config.features`` (supported; below v4 without the features
  whose minimum level is 0, KIP-1022) and the metadata image's finalized levels.
Not implemented: throttling (always 0).
"""
from __future__ import annotations

import re

from kbroker.api import REGISTRY, RequestContext, api
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.ApiVersionsResponse
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")

from kbroker.config.features import finalized_levels, supported_feature_keys


def api_version_entries() -> list:
    return [Response.ApiVersion(api_key=s.api_key, min_version=s.min_version, max_version=s.max_version)
            for s in sorted(REGISTRY.values(), key=lambda s: s.api_key) if s.advertised]


def misrouted(ctx: RequestContext, request) -> int | None:
    """v5: the error for a connection the client did not mean to open here, if any."""
    cluster_id, node_id = request.cluster_id, request.node_id
    if cluster_id is None and node_id == -1:
        return None
    if cluster_id is None or node_id == -1:
        return ErrorCode.INVALID_REQUEST
    if cluster_id != ctx.broker.cluster_id or node_id != ctx.broker.node_id:
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return None


@api(18, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Response:
    if ctx.version >= 5:
        refused = misrouted(ctx, request)
        if refused is not None:
            return Response(error_code=refused, api_keys=[], finalized_features_epoch=-1)
    resp = Response(error_code=ErrorCode.NONE, api_keys=api_version_entries())
    if ctx.version >= 3:
        if not (_SOFTWARE.match(request.client_software_name or "")
                and _SOFTWARE.match(request.client_software_version or "")):
            return Response(error_code=ErrorCode.INVALID_REQUEST, api_keys=resp.api_keys)
        image = ctx.broker.metadata
        # KIP-1022: a feature whose minimum level is 0 is announced from v4 only (clients
        # before it refuse a range starting at 0)
        resp.supported_features = [f for f in supported_feature_keys(Response)
                                   if ctx.version >= 4 or f.min_version > 0]
        resp.finalized_features = [
            Response.FinalizedFeatureKey(name=n, min_version_level=lvl, max_version_level=lvl)
            for n, lvl in sorted(finalized_levels(image.features, getattr(ctx.broker, "quorum", None)).items())]
        resp.finalized_features_epoch = image.offset
    return resp
