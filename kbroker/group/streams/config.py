"""The streams-group settings: Kafka 4.4's broker keys (``group.streams.*``) and defaults, and
the per-group overrides of the GROUP config resource (``streams.*``, validated against the
broker's bounds by :mod:`kbroker.metadata.group_configs`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping


@dataclass(frozen=True)
class StreamsGroupConfig:
    session_timeout_ms: int = 45_000          # group.streams.session.timeout.ms
    heartbeat_interval_ms: int = 5_000        # group.streams.heartbeat.interval.ms
    max_size: int = 2**31 - 1                 # group.streams.max.size
    num_standby_replicas: int = 0             # group.streams.num.standby.replicas
    max_standby_replicas: int = 2             # group.streams.max.standby.replicas
    initial_rebalance_delay_ms: int = 3_000   # group.streams.initial.rebalance.delay.ms
    assignment_interval_ms: int = 1_000       # group.streams.assignment.interval.ms
    # Kafka 4.4 (KIP-1071's second part): told to members in every successful heartbeat
    acceptable_recovery_lag: int = 10_000     # group.streams.acceptable.recovery.lag
    task_offset_interval_ms: int = 60_000     # group.streams.task.offset.interval.ms

    @classmethod
    def from_broker(cls, get) -> "StreamsGroupConfig":
        """``get(key, default)`` reads the broker's configuration."""
        d = cls()
        return cls(
            session_timeout_ms=int(get("group.streams.session.timeout.ms", d.session_timeout_ms)),
            heartbeat_interval_ms=int(get("group.streams.heartbeat.interval.ms",
                                          d.heartbeat_interval_ms)),
            max_size=int(get("group.streams.max.size", d.max_size)),
            num_standby_replicas=int(get("group.streams.num.standby.replicas",
                                         d.num_standby_replicas)),
            max_standby_replicas=int(get("group.streams.max.standby.replicas",
                                         d.max_standby_replicas)),
            initial_rebalance_delay_ms=int(get("group.streams.initial.rebalance.delay.ms",
                                               d.initial_rebalance_delay_ms)),
            assignment_interval_ms=int(get("group.streams.assignment.interval.ms",
                                           d.assignment_interval_ms)),
            acceptable_recovery_lag=int(get("group.streams.acceptable.recovery.lag",
                                            d.acceptable_recovery_lag)),
            task_offset_interval_ms=int(get("group.streams.task.offset.interval.ms",
                                            d.task_offset_interval_ms)))

    def for_group(self, g: Mapping[str, str] | None) -> "StreamsGroupConfig":
        """This configuration with a group's GROUP config overrides applied."""
        if not g:
            return self
        return replace(
            self,
            session_timeout_ms=int(g.get("streams.session.timeout.ms", self.session_timeout_ms)),
            heartbeat_interval_ms=int(g.get("streams.heartbeat.interval.ms",
                                            self.heartbeat_interval_ms)),
            num_standby_replicas=min(int(g.get("streams.num.standby.replicas",
                                               self.num_standby_replicas)),
                                     self.max_standby_replicas),
            initial_rebalance_delay_ms=int(g.get("streams.initial.rebalance.delay.ms",
                                                 self.initial_rebalance_delay_ms)),
            assignment_interval_ms=int(g.get("streams.assignment.interval.ms",
                                             self.assignment_interval_ms)),
            acceptable_recovery_lag=int(g.get("streams.acceptable.recovery.lag",
                                              self.acceptable_recovery_lag)),
            task_offset_interval_ms=int(g.get("streams.task.offset.interval.ms",
                                              self.task_offset_interval_ms)))
