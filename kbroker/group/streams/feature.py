"""Whether this broker serves the streams group protocol (KIP-1071) right now: Kafka 4.4's
``KafkaApis.isStreamsGroupProtocolEnabled`` asks that ``group.coordinator.rebalance.protocols``
list ``streams`` (and that ``streams.version`` be finalized at 1 or more; kbroker serves
streams groups without it, as its README says, so only the configuration is read here).
Otherwise StreamsGroupHeartbeat and StreamsGroupDescribe answer UNSUPPORTED_VERSION, as
Kafka does."""
from __future__ import annotations

from kbroker.group.consumer.feature import protocol_listed


def streams_protocol_enabled(broker) -> bool:
    return protocol_listed(broker, "streams")
