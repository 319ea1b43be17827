"""The streams-group settings: Kafka 4.4's broker keys (``group.streams.*``) and defaults, and
the per-group overrides of the GROUP config resource (``streams.*``, validated against the
broker's bounds by :mod:`kbroker.metadata.group_configs`).

Task assignors (KIP-1357): ``group.streams.assignors`` lists the assignors a group may use
(:mod:`kbroker.config.streams_assignors`), the first being the default; the GROUP config
``streams.assignor.name`` picks one of them. A group whose configured name is no longer
among the broker's (the list changed since the config was set) uses the default, as Kafka
does (with a warning in its log). A change of assignor does not start a rebalance: it is
used by the next target assignment.

Warm-up tasks (KIP-1071): ``group.streams.num.warmup.replicas`` (GROUP
``streams.num.warmup.replicas``, at most ``group.streams.max.warmup.replicas``) bounds the
warm-up tasks a group runs at once; ``group.streams.acceptable.recovery.lag`` is the lag at
which one counts as caught up; members report their restore progress every
``group.streams.task.offset.interval.ms``. Kafka 4.4.0 hands out no warm-up task (its
refinement is a no-op); kbroker derives them (:mod:`.warmup`) when
``kbroker.streams.warmup.tasks.enable`` is true."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from kbroker.config.streams_assignors import assignor_names


@dataclass(frozen=True)
class StreamsGroupConfig:
    """The broker's ``group.streams.*`` settings (and a group's own ``streams.*`` configs)."""
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
    min_task_offset_interval_ms: int = 15_000  # group.streams.min.task.offset.interval.ms
    num_warmup_replicas: int = 2              # group.streams.num.warmup.replicas
    max_warmup_replicas: int = 20             # group.streams.max.warmup.replicas
    assignors: tuple[str, ...] = ("sticky",)  # group.streams.assignors (KIP-1357)
    assignor_name: str | None = None          # GROUP streams.assignor.name
    warmup_tasks_enabled: bool = False        # kbroker.streams.warmup.tasks.enable
    # group.streams.rack.aware.assignment.tags: told to assignors (Kafka 4.4's sticky one
    # does not use them); members lacking one hear MISSING_CLIENT_TAGS
    rack_aware_assignment_tags: tuple[str, ...] = ()

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
                                            d.task_offset_interval_ms)),
            min_task_offset_interval_ms=int(get("group.streams.min.task.offset.interval.ms",
                                                d.min_task_offset_interval_ms)),
            num_warmup_replicas=int(get("group.streams.num.warmup.replicas",
                                        d.num_warmup_replicas)),
            max_warmup_replicas=int(get("group.streams.max.warmup.replicas",
                                        d.max_warmup_replicas)),
            assignors=assignor_names(get("group.streams.assignors", list(d.assignors))),
            warmup_tasks_enabled=str(get("kbroker.streams.warmup.tasks.enable",
                                         d.warmup_tasks_enabled)).lower() == "true",
            rack_aware_assignment_tags=_tags(get("group.streams.rack.aware.assignment.tags", [])))

    def assignor(self) -> str:
        """The assignor of the group's next target assignment: its configured one if the
        broker has it, else the broker's first."""
        if self.assignor_name in self.assignors:
            return self.assignor_name
        return self.assignors[0]

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
            # Kafka evaluates a group's value within the broker's current bounds
            task_offset_interval_ms=max(int(g.get("streams.task.offset.interval.ms",
                                                  self.task_offset_interval_ms)),
                                        self.min_task_offset_interval_ms),
            num_warmup_replicas=min(int(g.get("streams.num.warmup.replicas",
                                              self.num_warmup_replicas)),
                                    self.max_warmup_replicas),
            assignor_name=g.get("streams.assignor.name", self.assignor_name),
            rack_aware_assignment_tags=_tags(g.get("streams.rack.aware.assignment.tags",
                                                   self.rack_aware_assignment_tags)))

    def assignment_configs(self) -> tuple[tuple[str, str], ...]:
        """What the group's target assignment depends on (``LastAssignmentConfigs``, sorted
        by key as Kafka's): a change starts a rebalance at the next heartbeat."""
        out = (("num.standby.replicas", str(self.num_standby_replicas)),)
        if self.rack_aware_assignment_tags:
            out += (("rack.aware.assignment.tags", ",".join(self.rack_aware_assignment_tags)),)
        return out


def _tags(value) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value or ())
    return tuple(t.strip() for t in items if t.strip())
