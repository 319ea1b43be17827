"""Whether this broker serves the consumer group protocol (KIP-848) right now: Kafka's
``KafkaApis.isConsumerGroupProtocolEnabled`` — the finalized ``group.version`` feature is at
least 1 and ``group.coordinator.rebalance.protocols`` lists ``consumer``. Otherwise
ConsumerGroupHeartbeat and ConsumerGroupDescribe answer UNSUPPORTED_VERSION, as Kafka does
(a cluster formatted before 4.0, or with ``--feature group.version=0``)."""
from __future__ import annotations

GROUP_VERSION = "group.version"


def consumer_protocol_enabled(broker) -> bool:
    return feature_finalized(broker, GROUP_VERSION) and protocol_listed(broker, "consumer")


def feature_finalized(broker, name: str, level: int = 1) -> bool:
    """Whether the cluster's finalized ``name`` is at least ``level`` (0 when not finalized,
    as Kafka's ``finalizedFeatures().getOrDefault(name, 0)``; also read for
    ``streams.version``)."""
    image = getattr(broker, "metadata", None)
    features = getattr(image, "features", None) or {}
    # an image without metadata.version has not replayed the cluster's bootstrap yet (a node
    # starting up): the coordinator answers that one, never a fatal UNSUPPORTED_VERSION
    return "metadata.version" not in features or int(features.get(name, 0)) >= level


def protocol_listed(broker, name: str) -> bool:
    """Whether ``group.coordinator.rebalance.protocols`` lists ``name`` (Kafka's
    ``KafkaConfig.groupCoordinatorRebalanceProtocols``; also read for ``streams``)."""
    try:
        protocols = broker.config.get("group.coordinator.rebalance.protocols")
    except Exception:  # noqa: BLE001 - a minimal config without the key: Kafka's default
        return True
    if protocols is None:
        return True
    if isinstance(protocols, str):
        protocols = protocols.split(",")
    return name in {str(p).strip().lower() for p in protocols}
