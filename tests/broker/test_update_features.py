"""UpdateFeatures (57) on a real broker over raw frames: metadata.version downgrades and
upgrades, validate-only, the answer's shape per version, and ApiVersions' finalized features
and epoch following the FeatureLevelRecords."""
import pytest

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .raw import RawClient

UF = messages.UpdateFeaturesRequest
# a new cluster finalizes transaction.version 2 (KIP-890 part 2), share.version 2 (KIP-932 with
# KIP-1191's dead-letter queues), streams.version 1 (KIP-1071) and
# eligible.leader.replicas.version 1 (KIP-966)
BASE = {"transaction.version": (2, 2), "share.version": (2, 2), "streams.version": (1, 1),
        "eligible.leader.replicas.version": (1, 1)}
NEW = {**BASE, "group.version": (1, 1)}   # ... and group.version 1 (KIP-848)
MV = 33                                   # 4.4-IV2, Kafka 4.4's latest production level
ELR = "eligible.leader.replicas.version"


async def finalized(c):
    r = await c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    return {f.name: (f.min_version_level, f.max_version_level) for f in r.finalized_features}, \
        r.finalized_features_epoch


async def update(c, version, *updates, validate_only=False):
    keys = [UF.FeatureUpdateKey(feature=n, max_version_level=lvl, upgrade_type=t, allow_downgrade=False)
            for n, lvl, t in updates]
    return await c.request("UpdateFeatures", version, timeout_ms=5000, feature_updates=keys,
                           validate_only=validate_only)


async def test_update_features_metadata_version(broker_server):
    c = await RawClient.connect(broker_server)
    features, epoch0 = await finalized(c)
    assert features == {"metadata.version": (MV, MV), **NEW} and epoch0 >= 0

    # 4.4-IV2 changed the metadata format: Kafka refuses any downgrade, safe or unsafe, also
    # validate-only; one top-level error, no results
    for kind, validate in ((2, True), (2, False), (3, False)):
        r = await update(c, 1, ("metadata.version", 32, kind), validate_only=validate)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION and r.results == []
        assert r.error_message.startswith("The update failed for all features since the following "
                                          "feature had an error: Unsupported metadata.version downgrade "
                                          "from 33 to 32.")
    # a downgrade with the upgrade type, an unknown feature, a level kbroker does not serve
    for ups in ([("metadata.version", 20, 1)], [("no.such", 1, 1)], [("metadata.version", 34, 1)]):
        r = await update(c, 2, *ups)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION, ups
    assert (await finalized(c)) == ({"metadata.version": (MV, MV), **NEW}, epoch0)

    # ELR off (a safe downgrade to 0) and on again; each change moves the epoch
    r = await update(c, 2, (ELR, 0, 2))
    assert (r.error_code, r.error_message, r.results) == (0, None, [])
    features, epoch1 = await finalized(c)
    assert ELR not in features and epoch1 > epoch0
    r = await update(c, 0, (ELR, 1, 1))
    assert (r.error_code, [(x.feature, x.error_code) for x in r.results]) == (0, [(ELR, 0)])
    features, epoch2 = await finalized(c)
    assert features == {"metadata.version": (MV, MV), **NEW} and epoch2 > epoch1
    await c.aclose()


@pytest.fixture
def group_version_served(monkeypatch):
    """As if the groups work had added its row: kbroker/config/features.py serving group.version 0-1."""
    from kbroker.config import features
    monkeypatch.setitem(features.SUPPORTED_FEATURES, "group.version", (0, 1))


async def test_update_features_is_generic_over_the_table(group_version_served, broker_server):
    c = await RawClient.connect(broker_server)
    # a new cluster finalizes the default of every served feature (group.version 1 from 4.0-IV0)
    assert (await finalized(c))[0] == {"metadata.version": (MV, MV), **BASE, "group.version": (1, 1)}
    # (a supported range starting at 0 is announced from ApiVersions v4, KIP-1022)
    r = await c.request("ApiVersions", 4, client_software_name="t", client_software_version="1")
    assert {f.name: (f.min_version, f.max_version) for f in r.supported_features}["group.version"] == (0, 1)
    # disabled (level 0 with a downgrade type), then finalized again
    r = await update(c, 2, ("group.version", 0, 2))
    assert r.error_code == 0
    assert (await finalized(c))[0] == {"metadata.version": (MV, MV), **BASE}
    r = await update(c, 2, ("group.version", 2, 1))
    assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert r.error_message.endswith("Local controller 1 only supports versions 0-1")
    r = await update(c, 1, ("group.version", 1, 1))
    assert r.error_code == 0
    assert (await finalized(c))[0] == {"metadata.version": (MV, MV), **BASE, "group.version": (1, 1)}
    await c.aclose()
