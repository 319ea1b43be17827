"""UpdateFeatures (key 57), v0–v2 (flexible): finalize, upgrade or downgrade feature levels
(KIP-584, KIP-778) — ``Admin.updateFeatures``, ``kafka-features.sh upgrade|downgrade|disable``.

Forwarded to the active controller (``ControllerChannel.update_features``); the rules are
``kbroker/metadata/feature_control.py`` over the table of ``kbroker/config/features.py``, and an
accepted update is one batch of ``FeatureLevelRecord``s. ``kraft.version`` is the Raft
layer's: upgrading a static quorum to 1 (KAFKA-16538) is checked and written by the Raft
leader (a ``KRaftVersionRecord`` and the ``VotersRecord``), the answer waits for a
``NoOpRecord`` committed after it. ``validate_only`` (v1+) checks
without writing. The upgrade type is v1+'s ``upgrade_type``; v0's ``allow_downgrade`` is not
read, as Kafka 4.3's controller reads only the type (its default, upgrade, for v0).

Answer as Kafka's: one failing update fails the whole request with a top-level
``INVALID_UPDATE_VERSION`` ("The update failed for all features since …") and no per-feature
results; on success v0–v1 list every feature with error 0 and the message ``NONE``, v2 has
no per-feature list. New levels show in ApiVersions' finalized features (and their epoch)
once this node's image holds them.

ACLs (``kbroker.authz``): ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
Not implemented: ``timeout_ms`` (the controller channel's own timeout applies).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz.acls import ALTER
from kbroker.metadata.feature_control import UPGRADE, FeatureUpdate
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.UpdateFeaturesResponse


@api(57, versions=(0, 2))
async def handle(ctx: RequestContext, request) -> Response:
    if not ctx.authorize_cluster(ALTER):
        return Response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=None, results=[])
    updates: dict[str, FeatureUpdate] = {}
    for f in request.feature_updates or ():
        kind = f.upgrade_type if ctx.version >= 1 else UPGRADE
        updates[f.feature] = FeatureUpdate(f.feature, f.max_version_level, kind)
    validate_only = bool(request.validate_only) if ctx.version >= 1 else False
    code, message = await ctx.broker.controller.update_features(list(updates.values()),
                                                                validate_only=validate_only)
    if code:
        return Response(throttle_time_ms=0, error_code=code, error_message=message, results=[])
    results = [] if ctx.version >= 2 else [
        Response.UpdatableFeatureResult(feature=name, error_code=0, error_message="NONE")
        for name in updates]
    return Response(throttle_time_ms=0, error_code=0, error_message=None, results=results)
