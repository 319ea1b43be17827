"""Per-partition log configuration, named after Kafka's topic-level keys.

``LogConfig`` is an immutable dataclass whose attribute names are Kafka's topic
config keys with dots turned into underscores (``segment.bytes`` ->
``segment_bytes``).  Build one with:

* ``LogConfig()`` -- Kafka's defaults;
* ``LogConfig.from_broker_properties(server_props)`` -- broker-level defaults taken from
  ``server.properties`` keys (``log.segment.bytes``, ``log.retention.hours``, ...), the
  way Kafka derives topic defaults from broker settings;
* ``base.with_overrides(topic_props)`` / ``LogConfig.from_properties(topic_props)`` --
  topic-level keys (``segment.bytes``, ``retention.ms``, ``cleanup.policy``...)
  layered over a base.

``to_properties()`` gives the topic-level view back (for DescribeConfigs).  Values that
Kafka spells as "no limit" (``Long.MAX_VALUE`` for ``flush.messages``/``flush.ms``/
``max.compaction.lag.ms``, ``-1`` for ``retention.*``) are kept as Kafka spells them.
Unknown keys are ignored (the broker validates topic configs before they get here);
a malformed value raises ``ValueError``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Mapping

LONG_MAX = (1 << 63) - 1

# topic key -> attribute name; the order is the order DescribeConfigs lists them in.
TOPIC_KEYS: dict[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.jitter.ms": "segment_jitter_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "cleanup.policy": "cleanup_policy",
    "delete.retention.ms": "delete_retention_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "message.timestamp.type": "message_timestamp_type",
    "max.message.bytes": "max_message_bytes",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "compression.type": "compression_type",
    "min.insync.replicas": "min_insync_replicas",
    "preallocate": "preallocate",
    "unclean.leader.election.enable": "unclean_leader_election_enable",
}

# broker key -> topic key.  Several broker keys may feed one topic key; the
# most specific (ms over minutes over hours) wins, as in Kafka's KafkaConfig.
BROKER_KEYS: dict[str, str] = {
    "log.segment.bytes": "segment.bytes",
    "log.roll.hours": "segment.ms",
    "log.roll.ms": "segment.ms",
    "log.roll.jitter.hours": "segment.jitter.ms",
    "log.roll.jitter.ms": "segment.jitter.ms",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.retention.hours": "retention.ms",
    "log.retention.minutes": "retention.ms",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.cleanup.policy": "cleanup.policy",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.message.timestamp.type": "message.timestamp.type",
    "message.max.bytes": "max.message.bytes",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "compression.type": "compression.type",
    "min.insync.replicas": "min.insync.replicas",
    "log.preallocate": "preallocate",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}
_BROKER_UNIT_MS = {
    "log.roll.hours": 3_600_000,
    "log.roll.jitter.hours": 3_600_000,
    "log.retention.hours": 3_600_000,
    "log.retention.minutes": 60_000,
}
# Lower number = more specific; a more specific key overrides a less specific one.
_BROKER_PRIORITY = {"log.roll.hours": 1, "log.roll.jitter.hours": 1, "log.retention.hours": 2,
                    "log.retention.minutes": 1}

_POLICIES = {"delete", "compact"}
_TIMESTAMP_TYPES = {"CreateTime", "LogAppendTime"}


@dataclass(frozen=True)
class LogConfig:
    """Settings of one partition log (Kafka topic-level configs, Kafka's defaults)."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3_600_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3_600_000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86_400_000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    max_message_bytes: int = 1_048_588
    file_delete_delay_ms: int = 60_000
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    preallocate: bool = False
    unclean_leader_election_enable: bool = False

    def __post_init__(self) -> None:
        policies = self.policies
        if not policies or not policies <= _POLICIES:
            raise ValueError(f"cleanup.policy {self.cleanup_policy!r}")
        if self.message_timestamp_type not in _TIMESTAMP_TYPES:
            raise ValueError(f"message.timestamp.type {self.message_timestamp_type!r}")
        if self.segment_bytes < 14 or self.index_interval_bytes < 0 or self.segment_index_bytes < 8:
            raise ValueError("segment.bytes / index sizes out of range")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError("min.cleanable.dirty.ratio must be in [0, 1]")

    # -- derived views ------------------------------------------------------------
    # computed once per (immutable) config: every append asks ``compact`` and ``log_append_time``
    @cached_property
    def policies(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.cleanup_policy.split(",") if p.strip())

    @cached_property
    def compact(self) -> bool:
        return "compact" in self.policies

    @cached_property
    def delete(self) -> bool:
        return "delete" in self.policies

    @cached_property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    # -- construction ------------------------------------------------------------
    def with_overrides(self, props: Mapping[str, str]) -> "LogConfig":
        """A copy with topic-level keys from ``props`` applied (unknown keys ignored)."""
        changes = {}
        for key, raw in props.items():
            attr = TOPIC_KEYS.get(key)
            if attr is None or raw is None:
                continue
            changes[attr] = _convert(attr, raw)
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_properties(cls, props: Mapping[str, str],
                        base: "LogConfig | None" = None) -> "LogConfig":
        """Topic-level keys over ``base`` (Kafka's defaults when omitted)."""
        return (base or cls()).with_overrides(props)

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> "LogConfig":
        """Broker-level defaults (``log.segment.bytes`` ...) from ``server.properties``."""
        chosen: dict[str, tuple[int, str]] = {}  # topic key -> (priority, value)
        for bkey, raw in props.items():
            tkey = BROKER_KEYS.get(bkey)
            if tkey is None:
                continue
            value = str(raw).strip()
            unit = _BROKER_UNIT_MS.get(bkey)
            if unit is not None:
                value = str(int(value) * unit)
            prio = _BROKER_PRIORITY.get(bkey, 0)
            if tkey not in chosen or prio < chosen[tkey][0]:
                chosen[tkey] = (prio, value)
        return cls().with_overrides({k: v for k, (_, v) in chosen.items()})

    def to_properties(self) -> dict[str, str]:
        """Topic-level view, Kafka key -> string value."""
        out = {}
        for key, attr in TOPIC_KEYS.items():
            v = getattr(self, attr)
            out[key] = str(v).lower() if isinstance(v, bool) else str(v)
        return out


def _convert(attr: str, raw) -> object:
    field_type = LogConfig.__dataclass_fields__[attr].type
    text = str(raw).strip()
    if field_type == "int":
        return int(text)
    if field_type == "float":
        return float(text)
    if field_type == "bool":
        if text.lower() not in ("true", "false"):
            raise ValueError(f"{attr}: expected true/false, got {text!r}")
        return text.lower() == "true"
    if attr == "cleanup_policy":
        return ",".join(p.strip() for p in text.split(",") if p.strip())
    return text
