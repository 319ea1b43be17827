"""UpdateFeatures rules (kbroker/metadata/feature_control.py), table-driven: the error or the
records for each case, with Kafka 4.3.1's messages."""
import pytest

from kbroker.metadata.feature_control import (SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE, FeatureUpdate,
                                              metadata_changed, update_features)
from kbroker.wire.error_codes import ErrorCode as E

SUPPORTED = {"metadata.version": (7, 25), "transaction.version": (0, 2),
             "eligible.leader.replicas.version": (0, 1)}
FINALIZED = {"metadata.version": 25, "transaction.version": 2}


def run(*updates, finalized=FINALIZED, validate_only=False):
    r = update_features(dict(finalized), SUPPORTED, [FeatureUpdate(*u) for u in updates], node_id=1,
                        validate_only=validate_only)
    return r.error_code, r.error_message, [(x.name, x.feature_level) for x in r.records]


OK = (E.NONE, None)


@pytest.mark.parametrize("updates, expected", [
    # metadata.version: up, safe down across levels that kept the format, refused across one that changed
    ([("metadata.version", 24, SAFE_DOWNGRADE)], (*OK, [("metadata.version", 24)])),
    ([("metadata.version", 23, SAFE_DOWNGRADE)], (*OK, [("metadata.version", 23)])),
    ([("metadata.version", 22, SAFE_DOWNGRADE)], (E.INVALID_UPDATE_VERSION,
      "Unsupported metadata.version downgrade from 25 to 22. Refusing to perform the requested "
      "downgrade because it might delete metadata information.", [])),
    ([("metadata.version", 22, UNSAFE_DOWNGRADE)], (E.INVALID_UPDATE_VERSION,
      "Unsupported metadata.version downgrade from 25 to 22. Unsafe metadata downgrade is not "
      "supported in this version.", [])),
    ([("metadata.version", 24, UPGRADE)], (E.INVALID_UPDATE_VERSION,
      "Invalid update version 24 for feature metadata.version. Can't downgrade the version of this "
      "feature without setting the upgrade type to either safe or unsafe downgrade.", [])),
    ([("metadata.version", 26, UPGRADE)], (E.INVALID_UPDATE_VERSION,
      "Invalid update version 26 for feature metadata.version. Local controller 1 only supports "
      "versions 7-25", [])),
    ([("metadata.version", 25, UPGRADE)], (*OK, [("metadata.version", 25)])),
    # other features: unknown, unserved, out of range, removal, dependencies
    ([("no.such.feature", 1, UPGRADE)], (E.INVALID_UPDATE_VERSION,
      "Invalid update version 1 for feature no.such.feature. Local controller 1 does not support "
      "this feature.", [])),
    ([("no.such.feature", 0, UPGRADE)], (E.INVALID_UPDATE_VERSION,
      "Invalid update version 0 for feature no.such.feature. Feature no.such.feature not found.", [])),
    ([("group.version", 1, UPGRADE)], (E.INVALID_UPDATE_VERSION,
      "Invalid update version 1 for feature group.version. Local controller 1 does not support "
      "this feature.", [])),
    ([("transaction.version", 0, SAFE_DOWNGRADE)], (*OK, [("transaction.version", 0)])),
    ([("transaction.version", 1, UPGRADE)], (E.INVALID_UPDATE_VERSION,
      "Invalid update version 1 for feature transaction.version. Can't downgrade the version of "
      "this feature without setting the upgrade type to either safe or unsafe downgrade.", [])),
    ([("transaction.version", -1, SAFE_DOWNGRADE)], (E.INVALID_UPDATE_VERSION,
      "Invalid update version -1 for feature transaction.version. A feature version cannot be less "
      "than 0.", [])),
    ([("transaction.version", 2, 4)], (E.INVALID_UPDATE_VERSION,
      "Invalid update version 2 for feature transaction.version. The controller does not support "
      "the given upgrade type.", [])),
    ([("eligible.leader.replicas.version", 1, UPGRADE), ("metadata.version", 22, SAFE_DOWNGRADE)],
     (E.INVALID_UPDATE_VERSION, "Invalid update version 1 for feature eligible.leader.replicas.version. "
      "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version "
      "level 23", [])),
    ([("eligible.leader.replicas.version", 1, UPGRADE)], (*OK, [("eligible.leader.replicas.version", 1)])),
    # one failure fails everything
    ([("transaction.version", 0, SAFE_DOWNGRADE), ("metadata.version", 99, UPGRADE)],
     (E.INVALID_UPDATE_VERSION, "Invalid update version 99 for feature metadata.version. Local "
      "controller 1 only supports versions 7-25", [])),
])
def test_update_rules(updates, expected):
    assert run(*updates) == expected


def test_validate_only_writes_nothing():
    assert run(("metadata.version", 24, SAFE_DOWNGRADE), validate_only=True) == (*OK, [])


class Kraft:
    """The Raft layer's side of kraft.version (feature_control's ``kraft``), scripted."""

    def __init__(self, level=0, refuse=None):
        self.level, self.refuse, self.asked = level, refuse, []

    def current(self):
        return self.level

    def upgrade(self, level, validate_only):
        self.asked.append((level, validate_only))
        return self.refuse or (E.NONE, None)


def run_kraft(kraft, *updates, validate_only=False):
    supported = dict(SUPPORTED, **{"kraft.version": (0, 1)})
    return update_features(dict(FINALIZED), supported, [FeatureUpdate(*u) for u in updates], node_id=1,
                           validate_only=validate_only, kraft=kraft)


def test_kraft_version_goes_to_the_raft_layer_and_is_never_a_feature_record():
    kraft = Kraft()
    r = run_kraft(kraft, ("kraft.version", 1, UPGRADE))
    assert (r.error_code, r.kraft_version) == (E.NONE, 1)
    assert [type(x).__name__ for x in r.records] == ["NoOpRecord"]       # something to wait on
    assert kraft.asked == [(1, True)]          # only checked here; the controller writes it
    # validate-only: checked, nothing to write
    r = run_kraft(kraft, ("kraft.version", 1, UPGRADE), validate_only=True)
    assert (r.error_code, r.records, r.kraft_version) == (E.NONE, [], None)
    # already at the level: nothing to upgrade, still a record to wait on (as Kafka)
    r = run_kraft(Kraft(level=1), ("kraft.version", 1, UPGRADE))
    assert (r.error_code, r.kraft_version, len(r.records)) == (E.NONE, None, 1)


def test_kraft_version_refusals():
    why = "Invalid upgrade of kraft.version to KRAFT_VERSION_1 because not all of the voters support it"
    r = run_kraft(Kraft(refuse=(E.INVALID_UPDATE_VERSION, why)), ("kraft.version", 1, UPGRADE))
    assert (r.error_code, r.error_message, r.records) == (E.INVALID_UPDATE_VERSION, why, [])
    # no downgrade, whatever the type; "down" to the current level is no change
    r = run_kraft(Kraft(level=1), ("kraft.version", 0, SAFE_DOWNGRADE))
    assert (r.error_code, r.error_message) == (E.INVALID_UPDATE_VERSION, "Invalid update version 0 for "
                                               "feature kraft.version. Can't downgrade the version of this feature.")
    assert run_kraft(Kraft(level=1), ("kraft.version", 0, UPGRADE)).error_code == E.INVALID_UPDATE_VERSION
    assert run_kraft(Kraft(), ("kraft.version", 0, SAFE_DOWNGRADE)).error_code == E.NONE
    r = run_kraft(Kraft(), ("kraft.version", 2, UPGRADE))
    assert r.error_message == ("Invalid update version 2 for feature kraft.version. "
                               "Local controller 1 only supports versions 0-1")
    # another update of the request failing: the upgrade is not asked for at all
    kraft = Kraft()
    r = run_kraft(kraft, ("kraft.version", 1, UPGRADE), ("transaction.version", 7, UPGRADE))
    assert r.error_code == E.INVALID_UPDATE_VERSION and r.kraft_version is None
    # without a Raft layer that can upgrade (the default): refused as Kafka does with no voter set
    r = update_features(dict(FINALIZED), dict(SUPPORTED, **{"kraft.version": (0, 1)}),
                        [FeatureUpdate("kraft.version", 1, UPGRADE)], node_id=1)
    assert (r.error_code, r.error_message) == (
        E.INVALID_UPDATE_VERSION, "Invalid upgrade of kraft.version from version KRAFT_VERSION_0 to KRAFT_VERSION_1")


def test_metadata_changed_between_levels():
    assert not metadata_changed(25, 23) and metadata_changed(25, 22)
    assert metadata_changed(30, 29) and not metadata_changed(29, 24)


def test_default_levels_follow_the_metadata_version_and_the_table():
    from kbroker.metadata.feature_control import default_levels
    table = {"metadata.version": (7, 30), "kraft.version": (0, 1), "transaction.version": (0, 2),
             "group.version": (0, 1), "share.version": (0, 1), "eligible.leader.replicas.version": (0, 1)}
    assert default_levels(25, table) == {"transaction.version": 2, "group.version": 1, "share.version": 0,
                                         "eligible.leader.replicas.version": 0}
    assert default_levels(21, table) == {"transaction.version": 0, "group.version": 0, "share.version": 0,
                                         "eligible.leader.replicas.version": 0}
    assert default_levels(30, table)["share.version"] == 1
    # share.version 2 (KIP-1191) from 4.4-IV0 (31), where kbroker serves it
    assert default_levels(31, {**table, "share.version": (0, 2)})["share.version"] == 2
    assert default_levels(30, {**table, "share.version": (0, 2)})["share.version"] == 1
    # capped at what kbroker serves; a feature not in the table gets nothing
    assert default_levels(25, {"metadata.version": (7, 25), "transaction.version": (0, 1)}) == \
        {"transaction.version": 1}
    assert default_levels(25, {"metadata.version": (7, 25)}) == {}


def test_dependency_error_at_format():
    from kbroker.metadata.feature_control import dependency_error
    assert dependency_error({"metadata.version": 25, "eligible.leader.replicas.version": 1}) is None
    assert dependency_error({"metadata.version": 22, "eligible.leader.replicas.version": 1}) == (
        "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23")


def test_every_registered_broker_must_serve_the_level():
    brokers = {2: {"metadata.version": (7, 24)}, 3: {"metadata.version": (7, 25)}}
    r = update_features(dict(FINALIZED), SUPPORTED, [FeatureUpdate("metadata.version", 25, UPGRADE)],
                        node_id=1, brokers=brokers)
    assert (r.error_code, r.error_message) == (E.INVALID_UPDATE_VERSION, "Invalid update version 25 for "
                                               "feature metadata.version. Broker 2 only supports versions 7-24")
    r = update_features(dict(FINALIZED), SUPPORTED, [FeatureUpdate("eligible.leader.replicas.version", 1)],
                        node_id=1, brokers=brokers)
    assert r.error_message.endswith("Broker 2 does not support this feature.")


def test_registration_is_refused_below_a_finalized_level():
    from kbroker.metadata.feature_control import registration_error
    assert registration_error({"metadata.version": 25}, [("metadata.version", 7, 25)]) is None
    assert registration_error({"metadata.version": 25}, [("metadata.version", 7, 24)]) == (
        E.UNSUPPORTED_VERSION,
        "Unable to register because the broker does not support finalized version 25 of "
        "metadata.version. The broker wants a version between 7 and 24, inclusive.")
    code, why = registration_error({"metadata.version": 25, "transaction.version": 2},
                                   [("metadata.version", 7, 25)])
    assert code == E.UNSUPPORTED_VERSION and "finalized version 2 of transaction.version" in why


def test_registration_without_metadata_version_is_invalid():
    """Kafka's order: the listed ranges first, then the presence of metadata.version."""
    from kbroker.metadata.feature_control import registration_error
    assert registration_error({"metadata.version": 25}, [("group.version", 0, 1)]) == (
        E.INVALID_REGISTRATION, "Request features do not contain 'metadata.version'")
    assert registration_error({"metadata.version": 25, "group.version": 1},
                              [("group.version", 0, 0)])[0] == E.UNSUPPORTED_VERSION

