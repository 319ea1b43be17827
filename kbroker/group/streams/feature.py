"""Whether this broker serves the streams group protocol (KIP-1071) right now: Kafka 4.4's
``KafkaApis.isStreamsGroupProtocolEnabled`` -- ``group.coordinator.rebalance.protocols``
lists ``streams`` and the finalized ``streams.version`` is at least 1 (Kafka's
``StreamsVersion.streamsGroupSupported``; a new cluster finalizes 1, ``kafka-features
downgrade --feature streams.version=0`` turns it off). Otherwise StreamsGroupHeartbeat and
StreamsGroupDescribe answer UNSUPPORTED_VERSION, as Kafka does; ApiVersions lists both
APIs all the same (Kafka's ``ApiVersionsResponse.filterApis`` leaves only the telemetry
APIs out)."""
from __future__ import annotations

from kbroker.group.consumer.feature import feature_finalized, protocol_listed

STREAMS_VERSION = "streams.version"


def streams_protocol_enabled(broker) -> bool:
    return feature_finalized(broker, STREAMS_VERSION) and protocol_listed(broker, "streams")
