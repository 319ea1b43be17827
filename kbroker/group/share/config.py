"""Whether share groups are on (the ``share.version`` feature), and the share-group
settings: Kafka's broker keys (``group.share.*``) and defaults (4.3.1),
and the per-group overrides of the GROUP config resource (``share.*``, KIP-932/KIP-848's
group configs).

A GROUP config value, when set, wins over the broker's; the broker's min/max bounds are
Kafka's validation of those overrides (``GroupConfig``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

SHARE_VERSION = "share.version"


def share_groups_enabled(image) -> bool:
    """Kafka 4.3: share groups are served only while the finalized ``share.version`` is at
    least 1 (a new cluster is formatted with 1; absent = 0). Otherwise ShareGroupHeartbeat,
    ShareGroupDescribe, ShareFetch, ShareAcknowledge, AlterShareGroupOffsets and
    DeleteShareGroupOffsets answer UNSUPPORTED_VERSION, as Kafka's request handlers do."""
    features = getattr(image, "features", None) or {}
    if "metadata.version" not in features:
        # this node's image has not replayed the cluster's first records yet (a node that
        # just joined): not "off" -- the coordinator and partition checks answer retriable
        # errors until it has caught up
        return True
    return int(features.get(SHARE_VERSION, 0)) >= 1


@dataclass(frozen=True)
class ShareGroupConfig:
    """The broker's ``group.share.*`` settings (and a group's own ``share.*`` configs)."""
    session_timeout_ms: int = 45_000            # group.share.session.timeout.ms
    heartbeat_interval_ms: int = 5_000          # group.share.heartbeat.interval.ms
    max_size: int = 200                         # group.share.max.size
    record_lock_duration_ms: int = 30_000       # group.share.record.lock.duration.ms
    delivery_count_limit: int = 5               # group.share.delivery.count.limit
    partition_max_record_locks: int = 2_000     # group.share.partition.max.record.locks
    assignment_interval_ms: int = 1_000         # group.share.assignment.interval.ms
    auto_offset_reset: str = "latest"           # share.auto.offset.reset (GROUP only)
    isolation_level: str = "read_uncommitted"   # share.isolation.level (GROUP only)
    renew_acknowledge_enable: bool = True       # share.renew.acknowledge.enable (GROUP only)

    @classmethod
    def from_broker(cls, get) -> "ShareGroupConfig":
        """``get(key, default)`` reads the broker's configuration."""
        d = cls()
        if not callable(get):
            values = get
            get = lambda k, default: values.get(k, default)      # noqa: E731
        return cls(
            session_timeout_ms=int(get("group.share.session.timeout.ms", d.session_timeout_ms)),
            heartbeat_interval_ms=int(get("group.share.heartbeat.interval.ms", d.heartbeat_interval_ms)),
            max_size=int(get("group.share.max.size", d.max_size)),
            record_lock_duration_ms=int(get("group.share.record.lock.duration.ms",
                                            d.record_lock_duration_ms)),
            delivery_count_limit=int(get("group.share.delivery.count.limit", d.delivery_count_limit)),
            partition_max_record_locks=int(get("group.share.partition.max.record.locks",
                                               d.partition_max_record_locks)),
            assignment_interval_ms=int(get("group.share.assignment.interval.ms",
                                           d.assignment_interval_ms)))

    def for_group(self, group_configs: Mapping[str, str] | None) -> "ShareGroupConfig":
        """This configuration with a group's GROUP config overrides applied."""
        if not group_configs:
            return self
        g = group_configs
        from dataclasses import replace
        return replace(
            self,
            session_timeout_ms=int(g.get("share.session.timeout.ms", self.session_timeout_ms)),
            heartbeat_interval_ms=int(g.get("share.heartbeat.interval.ms", self.heartbeat_interval_ms)),
            record_lock_duration_ms=int(g.get("share.record.lock.duration.ms",
                                              self.record_lock_duration_ms)),
            delivery_count_limit=int(g.get("share.delivery.count.limit", self.delivery_count_limit)),
            partition_max_record_locks=int(g.get("share.partition.max.record.locks",
                                                 self.partition_max_record_locks)),
            auto_offset_reset=str(g.get("share.auto.offset.reset", self.auto_offset_reset)),
            isolation_level=str(g.get("share.isolation.level", self.isolation_level)),
            renew_acknowledge_enable=str(g.get("share.renew.acknowledge.enable",
                                               self.renew_acknowledge_enable)).lower() == "true")
