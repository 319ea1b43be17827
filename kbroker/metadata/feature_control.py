"""Finalizing feature levels: the rules of UpdateFeatures (key 57) as Kafka's controller keeps
them (``FeatureControlManager``; KIP-584 feature versioning, KIP-778 KRaft upgrades, KIP-1022
feature dependencies).

Pure: the finalized levels of the image, the table of levels this kbroker serves
(``kbroker.config.features.SUPPORTED_FEATURES``, read at each call so a row another feature adds is
honoured without touching this module) and the requested updates in; an error or the
``FeatureLevelRecord``s to commit out. The caller commits the records in one batch and the
image changes by replaying them, like every other controller operation.

Rules, in Kafka's order, for each update (the first failing update fails the whole request
and nothing is written):

- the upgrade type must be 1 (upgrade), 2 (safe downgrade) or 3 (unsafe downgrade);
- a level below 0 is refused; a level outside what this node serves is refused ("does not
  support this feature" for a feature it does not serve at all, "only supports versions
  MIN-MAX" otherwise); level 0 of a feature nobody serves passes this check;
- a lower level needs a downgrade type, a higher level the upgrade type;
- ``metadata.version``: a downgrade across a level that changed the metadata format is
  refused whatever the type (Kafka 4.3 performs no unsafe metadata downgrade, KAFKA-13896);
  across levels that did not, it is written;
- ``kraft.version``: never a ``FeatureLevelRecord``: the Raft layer owns it (KIP-853,
  KAFKA-16538). Its current level is the Raft log's (``kraft.current()``); a downgrade is
  refused whatever the type; an upgrade is checked by the Raft leader
  (``kraft.upgrade(level, validate_only=True)``: Kafka's ``RaftClient.upgradeKRaftVersion``
  errors, e.g. "not all of the voters support it") and the result names the level in
  ``kraft_version``: the controller asks the leader to write it (one control batch) only once
  every update of the request passed, then commits a ``NoOpRecord`` to wait on, as Kafka's
  ``FeatureControlManager`` does. (Kafka asks the Raft layer in the middle of its checks, so a
  later failing update of the same request may leave the upgrade done; kbroker checks all first.)
- any other feature must be one Kafka knows, and its new level's dependencies must hold in
  the levels the request would leave (``metadata.version`` ≥ 3.3-IV3 for every level ≥ 1,
  plus the feature's own declared dependencies, e.g. ELR 1 needs ``metadata.version`` 4.0-IV1).
  Level 0 removes the feature (a ``FeatureLevelRecord`` with level 0, as Kafka writes);
  removing ``eligible.leader.replicas.version`` also writes a ``ClearElrRecord`` for every topic.

``validate_only`` runs every check and returns no records. The messages are Kafka's.

New clusters: :func:`default_levels` gives the level each served feature starts at for a
``metadata.version`` (Kafka's ``Feature.defaultVersion``: the highest level whose bootstrap
metadata.version is at or below it, here capped at what kbroker serves); ``kbroker storage
format`` and a first controller without a bootstrap file finalize them, and
:func:`dependency_error` checks a set of levels as Kafka's format does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3

# metadata.version level -> did that level change the metadata records (Kafka's
# MetadataVersion ``didMetadataChange``); a downgrade may only cross levels marked False.
METADATA_CHANGED: dict[int, bool] = {
    7: True, 8: True, 9: False, 10: False, 11: True, 12: False, 13: True, 14: True, 15: True,
    16: False, 17: True, 18: False, 19: False, 20: False, 21: False, 22: False, 23: True,
    24: False, 25: False, 26: False, 27: False, 28: False, 29: False, 30: True,
    31: False, 32: True, 33: True,
}
MINIMUM_METADATA_VERSION = 7                    # 3.3-IV3, the oldest KRaft level Kafka 4 reads

# The features Kafka 4.3.1 knows besides metadata.version: their levels, and each level's
# dependencies on other features (Kafka's FeatureVersion.dependencies()).
KNOWN_FEATURES: dict[str, tuple[int, ...]] = {
    KRAFT_VERSION: (0, 1),
    "transaction.version": (0, 1, 2),
    "group.version": (0, 1),
    "eligible.leader.replicas.version": (0, 1),
    "share.version": (0, 1, 2),
    "streams.version": (0, 1),
}
DEPENDENCIES: dict[tuple[str, int], dict[str, int]] = {
    ("eligible.leader.replicas.version", 1): {METADATA_VERSION: 23},
}
# (level, the metadata.version from which a new cluster starts at that level)
BOOTSTRAP_LEVELS: dict[str, tuple[tuple[int, int], ...]] = {
    "transaction.version": ((1, 24), (2, 24)),
    "group.version": ((1, 22),),
    "eligible.leader.replicas.version": ((1, 26),),
    "share.version": ((1, 28), (2, 31)),          # 2 from 4.4-IV0 (Kafka 4.4's ShareVersion.SV_2)
    "streams.version": ((1, 29),),
}


# Levels Kafka 4.3.1 finalizes on a cluster formatted without --release-version (its latest
# production levels) for features kbroker serves although its own metadata.version is older:
# a new kbroker cluster (no release version asked for) starts with them, as a new Kafka 4.3
# cluster does. share.version 2: share groups (KIP-932, on by default since Kafka 4.2) with
# dead-letter queues (KIP-1191), Kafka 4.4's latest production level;
# streams.version 1: streams groups (KIP-1071), Kafka 4.3's latest production level.
LATEST_DEFAULTS: dict[str, int] = {"share.version": 2, "streams.version": 1}


def latest_defaults(supported: dict[str, tuple[int, int]]) -> dict[str, int]:
    """:data:`LATEST_DEFAULTS` for the features kbroker serves at those levels."""
    return {n: lvl for n, lvl in LATEST_DEFAULTS.items()
            if n in supported and supported[n][0] <= lvl <= supported[n][1]}


def default_levels(metadata_version: int, supported: dict[str, tuple[int, int]]) -> dict[str, int]:
    """The levels a new cluster at ``metadata_version`` finalizes for the features kbroker
    serves (``kraft.version`` is the Raft layer's, never a record here)."""
    out = {}
    for name, (lo, hi) in sorted(supported.items()):
        if name in (METADATA_VERSION, KRAFT_VERSION):
            continue
        level = 0
        for lvl, since in BOOTSTRAP_LEVELS.get(name, ()):
            if since <= metadata_version and lvl <= hi:
                level = max(level, lvl)
        out[name] = max(level, lo)
    return out


def dependency_error(features: dict[str, int]) -> str | None:
    """Kafka's ``Feature.validateVersion`` over a whole set of levels (format time)."""
    for name, level in sorted(features.items()):
        if name in (METADATA_VERSION, KRAFT_VERSION) or level < 1:
            continue
        mv = features.get(METADATA_VERSION)
        if mv is None or mv < MINIMUM_METADATA_VERSION:
            return (f"{name} could not be set to {level} because it depends on "
                    f"metadata.version={MINIMUM_METADATA_VERSION} (3.3-IV3)")
        for dep, need in DEPENDENCIES.get((name, level), {}).items():
            if features.get(dep, 0) < need:
                return f"{name} could not be set to {level} because it depends on {dep} level {need}"
    return None


@dataclass
class FeatureUpdate:
    """One feature level change, as UpdateFeatures asks for it."""
    name: str
    level: int
    upgrade_type: int = UPGRADE


@dataclass
class UpdateResult:
    """The result of one feature update."""
    error_code: int = E.NONE
    error_message: str | None = None
    records: list = field(default_factory=list)
    kraft_version: int | None = None    # a kraft.version upgrade the Raft leader must write


class StaticKRaftVersion:
    """``kraft`` for a controller without a Raft layer that can upgrade: level ``level``,
    upgrades refused as Kafka refuses one with no voter set to write."""

    def __init__(self, level: int = 0):
        self.level = level

    def current(self) -> int:
        return self.level

    def upgrade(self, level: int, validate_only: bool) -> tuple[int, str | None]:
        return (E.INVALID_UPDATE_VERSION, f"Invalid upgrade of kraft.version from version "
                f"KRAFT_VERSION_{self.level} to KRAFT_VERSION_{level}")


def _range_text(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _invalid(name: str, level: int, why: str) -> UpdateResult:
    return UpdateResult(E.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. {why}")


def metadata_changed(a: int, b: int) -> bool:
    """Whether any level in (low, high] changed the metadata format (Kafka's
    ``checkIfMetadataChanged``)."""
    low, high = min(a, b), max(a, b)
    return any(METADATA_CHANGED.get(v, True) for v in range(low + 1, high + 1))


def _not_supported(name: str, level: int, supported: dict, who: str) -> str | None:
    lo, hi = supported.get(name, (0, 0))
    if lo <= level <= hi:
        return None
    if hi == 0:
        return f"{who} does not support this feature."
    return f"{who} only supports versions {_range_text(lo, hi)}"


def registration_error(finalized: dict[str, int], features) -> tuple[int, str] | None:
    """``(error code, why)`` a broker serving ``features`` (``(name, min, max)``) cannot join
    a cluster with these finalized levels, or None: Kafka's ``ClusterControlManager.
    registerBroker`` checks in its order. Every listed range must hold the finalized level
    (UNSUPPORTED_VERSION); the broker must list ``metadata.version`` (INVALID_REGISTRATION); a
    finalized level above 0 of a feature it does not list refuses it too.

    ``finalized`` holds ``metadata.version``: the active controller commits the bootstrap
    levels before it checks a registration (Kafka has no default for it)."""
    listed = {n: (lo, hi) for n, lo, hi in features}
    for name, lo, hi in features:
        level = finalized.get(name, 0)
        if not lo <= level <= hi:
            return E.UNSUPPORTED_VERSION, (
                f"Unable to register because the broker does not support finalized version "
                f"{level} of {name}. The broker wants a version between {lo} and {hi}, inclusive.")
    if METADATA_VERSION not in listed:
        return E.INVALID_REGISTRATION, f"Request features do not contain '{METADATA_VERSION}'"
    for name, level in sorted(finalized.items()):
        if level > 0 and name not in listed:
            return E.UNSUPPORTED_VERSION, (
                f"Unable to register because the broker does not support finalized version "
                f"{level} of {name}. The broker wants a version between 0 and 0, inclusive.")
    return None


def update_features(finalized: dict[str, int], supported: dict[str, tuple[int, int]],
                    updates: list[FeatureUpdate], *, node_id: int,
                    validate_only: bool = False,
                    brokers: dict[int, dict[str, tuple[int, int]]] | None = None,
                    kraft=None) -> UpdateResult:
    """Check ``updates`` against the finalized levels and return the records to commit.
    ``brokers``: the ranges each registered broker serves (from its registration); a level
    one of them cannot serve is refused as by this node ("Broker N …"). ``kraft``: the Raft
    layer's ``kraft.version`` (``current()``, ``upgrade(level, validate_only)``; default
    :class:`StaticKRaftVersion`)."""
    kraft = kraft or StaticKRaftVersion(finalized.get(KRAFT_VERSION, 0))
    proposed = dict(finalized)
    for u in updates:
        proposed[u.name] = u.level
    records: list = []
    upgrade: list[int] = []
    for u in updates:
        err = _check_one(u, finalized, supported, proposed, node_id, records, brokers or {}, kraft, upgrade)
        if err is not None:
            return err
    if validate_only:
        return UpdateResult()
    return UpdateResult(records=records, kraft_version=upgrade[0] if upgrade else None)


def _check_one(u: FeatureUpdate, finalized, supported, proposed, node_id, records,
               brokers, kraft, upgrade) -> UpdateResult | None:
    name, level = u.name, u.level
    if u.upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return _invalid(name, level, "The controller does not support the given upgrade type.")
    current = kraft.current() if name == KRAFT_VERSION else finalized.get(name, 0)
    if level < 0:
        return _invalid(name, level, "A feature version cannot be less than 0.")
    why = _not_supported(name, level, supported, f"Local controller {node_id}")
    for broker_id, ranges in sorted(brokers.items()):
        why = why or _not_supported(name, level, ranges, f"Broker {broker_id}")
    if why:
        return _invalid(name, level, why)
    if level < current and u.upgrade_type == UPGRADE:
        return _invalid(name, level, "Can't downgrade the version of this feature without setting the "
                                     "upgrade type to either safe or unsafe downgrade.")
    if level > current and u.upgrade_type != UPGRADE:
        return _invalid(name, level, "Can't downgrade to a newer version.")
    if name == METADATA_VERSION:
        if level < current and metadata_changed(current, level):
            why = ("Unsafe metadata downgrade is not supported in this version."
                   if u.upgrade_type == UNSAFE_DOWNGRADE else
                   "Refusing to perform the requested downgrade because it might delete "
                   "metadata information.")
            return UpdateResult(E.INVALID_UPDATE_VERSION,
                                f"Unsupported metadata.version downgrade from {current} to {level}. {why}")
        records.append(messages.FeatureLevelRecord(name=name, feature_level=level))
        return None
    if name == KRAFT_VERSION:
        if u.upgrade_type != UPGRADE:
            if level != current:
                return _invalid(name, level, "Can't downgrade the version of this feature.")
            return None         # no change, nothing written
        code, message = kraft.upgrade(level, True)
        if code:
            return UpdateResult(code, message)
        if level != current:
            upgrade.append(level)
        # a record to wait on, so the answer comes once the upgrade is committed (Kafka)
        records.append(messages.NoOpRecord())
        return None
    levels = KNOWN_FEATURES.get(name)
    if levels is None:
        return _invalid(name, level, f"Feature {name} not found.")
    if level not in levels:
        return _invalid(name, level, f"No feature:{name} with feature level {level}")
    if level >= 1:
        mv = proposed.get(METADATA_VERSION)
        if mv is None or mv < MINIMUM_METADATA_VERSION:
            return _invalid(name, level, f"{name} could not be set to {level} because it depends on "
                                         f"metadata.version={MINIMUM_METADATA_VERSION} (3.3-IV3)")
    for dep, need in DEPENDENCIES.get((name, level), {}).items():
        have = proposed.get(dep)
        if have is None or have < need:
            return _invalid(name, level, f"{name} could not be set to {level} because it depends on "
                                         f"{dep} level {need}")
    records.append(messages.FeatureLevelRecord(name=name, feature_level=level))
    if name == "eligible.leader.replicas.version" and level == 0 and current > 0:
        # ELR turned off: every partition's ELR and last known ELR go (KIP-966)
        records.append(messages.ClearElrRecord(topic_name=""))
    return None
