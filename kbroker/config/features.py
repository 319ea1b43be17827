"""The feature flags this kbroker serves (KIP-584 feature versioning, KIP-778 KRaft upgrades).

One table for every place that names them: ApiVersions on both planes (``supported_features``),
``kbroker storage format --feature/--release-version`` (what may be written at format time)
and the controller (what a FeatureLevelRecord may finalize). Each row is the feature's
(min, max) level kbroker implements. A level is raised here only together with the code
that implements it — a client reads a finalized level as a promise:

- ``metadata.version``: the KRaft record versions (7 = 3.3-IV3 … 33 = 4.4-IV2, the pinned
  release's latest production level).
- ``transaction.version`` ≥ 2 promises KIP-890's second phase (EndTxn v5, implicit
  partition adds); ``group.version`` ≥ 1 the KIP-848 consumer protocol; ``share.version`` ≥ 1
  share groups (KIP-932), 2 their dead-letter queues (KIP-1191, ``kbroker/share/dlq.py``);
  ``streams.version`` ≥ 1 streams groups (KIP-1071);
  ``kraft.version`` ≥ 1 a dynamic quorum (KIP-853);
  ``eligible.leader.replicas.version`` ≥ 1 ELR (KIP-966).

A feature missing from the table is one kbroker does not know: formatting or finalizing it is
refused (Kafka: "unknown feature").
"""
from __future__ import annotations

SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    "metadata.version": (7, 33),           # 3.3-IV3 .. 4.4-IV2 (Kafka 4.4's latest production)
    "streams.version": (0, 1),             # streams groups, KIP-1071 (kbroker/group/streams)
    "group.version": (0, 1),               # KIP-848 consumer groups (kbroker/group/consumer)
    "transaction.version": (0, 2),         # KIP-890 part 2 (kbroker/txn)
    "kraft.version": (0, 1),               # KIP-853 dynamic quorums (kbroker/raft)
    "share.version": (0, 2),               # KIP-932 share groups (kbroker/group/share, kbroker/share); 2: KIP-1191 DLQs
    "eligible.leader.replicas.version": (0, 1),   # KIP-966 ELR (kbroker/metadata/reassign, elr)
}


def supported_feature_keys(response_cls) -> list:
    """The ApiVersions ``supported_features`` entries (sorted by name)."""
    return [response_cls.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
            for n, (lo, hi) in sorted(SUPPORTED_FEATURES.items())]


def finalized_levels(image_features: dict[str, int], quorum=None) -> dict[str, int]:
    """The finalized feature levels ApiVersions reports: the image's FeatureLevelRecords,
    plus ``kraft.version`` 1 for a dynamic quorum (KIP-853 finalizes it in the Raft log's
    ``KRaftVersionRecord``, not with a FeatureLevelRecord)."""
    out = dict(image_features)
    node = getattr(getattr(quorum, "driver", None), "node", None)
    if node is not None and getattr(node, "dynamic", False):
        out["kraft.version"] = 1
    return out
