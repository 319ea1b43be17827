"""Eligible leader replicas (KIP-966): when ELR is on, and each partition's minimum ISR.

Pure facts the controller and the replica layer share:

- the ELR fields exist from ``metadata.version`` 4.0-IV1 (``PartitionRecord``/
  ``PartitionChangeRecord`` v2, Kafka's ``isElrSupported``);
- ELR is *on* when ``eligible.leader.replicas.version`` is finalized at 1 or more (Kafka's
  ``FeatureControlManager.isElrFeatureEnabled``), which needs that metadata.version;
- a partition's minimum ISR is the topic's effective ``min.insync.replicas`` capped by its
  replication factor (Kafka's ``getTopicEffectiveMinIsr``): an ISR of that size or more
  clears the ELR, a smaller one keeps the members it lost as eligible leaders, and with ELR on
  the leader's high watermark advances only while the ISR has that many members.

The rules that maintain the sets are ``reassign.build_change``'s (Kafka's
``PartitionChangeBuilder``).
"""
from __future__ import annotations

from typing import Mapping

FEATURE = "eligible.leader.replicas.version"
ELR_METADATA_VERSION = 23            # 4.0-IV1


def supported(metadata_version: int | None) -> bool:
    """Whether partition records carry the ELR fields at this metadata.version."""
    return metadata_version is not None and metadata_version >= ELR_METADATA_VERSION


def enabled(features: Mapping[str, int]) -> bool:
    """Whether ELR is on for these finalized feature levels."""
    return features.get(FEATURE, 0) >= 1 and supported(features.get("metadata.version"))


def effective_min_isr(min_insync_replicas: int, replication_factor: int) -> int:
    """``min.insync.replicas`` capped by the replication factor (at least 1)."""
    return max(1, min(int(min_insync_replicas), int(replication_factor) or 1))


def topic_min_isr(image, topic, static_default: int = 1) -> int | None:
    """The effective minimum ISR of ``topic`` (a ``TopicImage``) when ELR is on, else None:
    its ``min.insync.replicas`` override, else the cluster-level dynamic default (which the
    format step writes, KIP-966), else ``static_default``; capped by the replication factor."""
    if not enabled(image.features):
        return None
    value = topic.configs.get("min.insync.replicas")
    if value is None:
        value = image.broker_configs.get("", {}).get("min.insync.replicas", static_default)
    try:
        wanted = int(value)
    except (TypeError, ValueError):
        wanted = int(static_default)
    return effective_min_isr(wanted, topic.replication_factor)
