"""The broker settings the group coordinator obeys, with Kafka's keys and defaults.

One dataclass for every group type, so a ``server.properties`` carries over: the classic
protocol's ``group.*`` keys, the consumer protocol's ``group.consumer.*`` keys (KIP-848)
and the offsets keys shared by all types. Pure data; :meth:`GroupConfig.from_config`
reads them through a ``get(key, default)`` callable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass
class GroupConfig:
    """The Kafka broker settings the coordinator obeys (same keys, same defaults)."""
    num_partitions: int = 50                      # offsets.topic.num.partitions
    initial_rebalance_delay_ms: int = 3000        # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000            # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000         # group.max.session.timeout.ms
    max_size: int = 2**31 - 1                     # group.max.size
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000   # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096         # offset.metadata.max.bytes
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS
    # the consumer group protocol (KIP-848)
    consumer_session_timeout_ms: int = 45000      # group.consumer.session.timeout.ms
    consumer_min_session_timeout_ms: int = 45000  # group.consumer.min.session.timeout.ms
    consumer_max_session_timeout_ms: int = 60000  # group.consumer.max.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5000    # group.consumer.heartbeat.interval.ms
    consumer_min_heartbeat_interval_ms: int = 5000   # group.consumer.min.heartbeat.interval.ms
    consumer_max_heartbeat_interval_ms: int = 15000  # group.consumer.max.heartbeat.interval.ms
    consumer_max_size: int = 2**31 - 1            # group.consumer.max.size
    consumer_assignment_interval_ms: int = 1000   # group.consumer.assignment.interval.ms
    consumer_assignors: tuple[str, ...] = ("uniform", "range")   # group.consumer.assignors
    consumer_migration_policy: str = "bidirectional"   # group.consumer.migration.policy

    @classmethod
    def from_config(cls, get: Callable[[str, Any], Any]) -> "GroupConfig":
        """``get(key, default)`` reads a broker setting."""
        d = cls()
        return cls(
            num_partitions=int(get("offsets.topic.num.partitions", d.num_partitions)),
            initial_rebalance_delay_ms=int(get("group.initial.rebalance.delay.ms",
                                               d.initial_rebalance_delay_ms)),
            min_session_timeout_ms=int(get("group.min.session.timeout.ms", d.min_session_timeout_ms)),
            max_session_timeout_ms=int(get("group.max.session.timeout.ms", d.max_session_timeout_ms)),
            max_size=int(get("group.max.size", d.max_size)),
            offsets_retention_ms=int(get("offsets.retention.minutes",
                                         d.offsets_retention_ms // 60000)) * 60000,
            offsets_retention_check_interval_ms=int(get("offsets.retention.check.interval.ms",
                                                        d.offsets_retention_check_interval_ms)),
            offset_metadata_max_bytes=int(get("offset.metadata.max.bytes",
                                              d.offset_metadata_max_bytes)),
            consumer_session_timeout_ms=int(get("group.consumer.session.timeout.ms",
                                                d.consumer_session_timeout_ms)),
            consumer_min_session_timeout_ms=int(get("group.consumer.min.session.timeout.ms",
                                                    d.consumer_min_session_timeout_ms)),
            consumer_max_session_timeout_ms=int(get("group.consumer.max.session.timeout.ms",
                                                    d.consumer_max_session_timeout_ms)),
            consumer_heartbeat_interval_ms=int(get("group.consumer.heartbeat.interval.ms",
                                                   d.consumer_heartbeat_interval_ms)),
            consumer_min_heartbeat_interval_ms=int(get("group.consumer.min.heartbeat.interval.ms",
                                                       d.consumer_min_heartbeat_interval_ms)),
            consumer_max_heartbeat_interval_ms=int(get("group.consumer.max.heartbeat.interval.ms",
                                                       d.consumer_max_heartbeat_interval_ms)),
            consumer_max_size=int(get("group.consumer.max.size", d.consumer_max_size)),
            consumer_assignment_interval_ms=int(get("group.consumer.assignment.interval.ms",
                                                    d.consumer_assignment_interval_ms)),
            consumer_assignors=assignor_names(get("group.consumer.assignors",
                                                  list(d.consumer_assignors))),
            consumer_migration_policy=str(get("group.consumer.migration.policy",
                                              d.consumer_migration_policy)).lower(),
        )


_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_names(value) -> tuple[str, ...]:
    """``group.consumer.assignors``: names or Kafka's class names, in preference order."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    out = []
    for item in items:
        name = _ASSIGNOR_CLASSES.get(str(item).strip(), str(item).strip())
        if name and name not in out:
            out.append(name)
    return tuple(out) or ("uniform", "range")
