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
        )
