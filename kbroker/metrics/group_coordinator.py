"""The group coordinator's families of ``/metrics``: Kafka 4.4's ``GroupCoordinatorMetrics``
and the partition counts of its ``GroupCoordinatorRuntimeMetrics`` (KIP-848), read from this
node's coordinator shard (``kbroker.group.manager.GroupManager``).

Names are the Prometheus JMX exporter's for Kafka's MBeans (see :mod:`kbroker.metrics`):

- the Kafka metrics of group ``group-coordinator-metrics`` (MBean
  ``kafka.server:type=group-coordinator-metrics,<tags>``, attribute ``<name>``) become
  ``kafka_server_group_coordinator_metrics_<name>{<tags>}``: ``group_count{protocol}``
  (classic, consumer, share, streams), ``classic_group_count{state}``,
  ``consumer_group_count{state}``, ``share_group_count{state}``,
  ``streams_group_count{state}`` — every state Kafka registers, with its spelling
  (``PreparingRebalance``, ``NotReady``...), zeros included — ``offset_count``, and
  ``num_partitions{state}`` (``__consumer_offsets`` partitions loading, active; ``failed`` is
  always 0: a partition kbroker cannot load stays unloaded and is tried again);
- Kafka's sensors keep their cumulative ``-count`` attribute as a counter (its ``-rate`` is
  Prometheus' ``rate()``): ``offset_commit_count`` (offsets committed, transactional ones
  when written), ``offset_expiration_count``, ``offset_deletion_count`` (OffsetDelete),
  ``group_completed_rebalance_count`` (classic groups: a leader's assignment written),
  ``consumer_group_rebalance_count``, ``share_group_rebalance_count``,
  ``streams_group_rebalance_count`` (a heartbeat bumped the group epoch);
- the Yammer gauges of ``kafka.coordinator.group:type=GroupMetadataManager`` become
  ``kafka_coordinator_group_groupmetadatamanager_<name>``: ``numoffsets``, and
  ``numgroups`` with ``numgroups{preparingrebalance,completingrebalance,stable,dead,empty}``,
  which count classic groups only, as Kafka 4's do.

Rules: read-only; the counters are the shard's integers (``GroupManager.counters``, added
to where Kafka records its sensors); the gauges are one pass over the group table, with a
trio checkpoint every ``YIELD_EVERY`` groups through the caller's slicer. Like Kafka's
shard metrics they cover the groups this node coordinates now, and the counters restart
with the process.
"""
from __future__ import annotations

from .exposition import Family

PREFIX = "kafka_server_group_coordinator_metrics_"
YAMMER = "kafka_coordinator_group_groupmetadatamanager_"

# group type -> the states Kafka registers a gauge for, in its order
STATES = {
    "classic": ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"),
    "consumer": ("Empty", "Assigning", "Reconciling", "Stable", "Dead"),
    "share": ("Empty", "Stable", "Dead"),
    "streams": ("Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead"),
}

# (counter of GroupManager.counters, metric name, help)
SENSORS = (
    ("offset_commits", "offset_commit_count", "Offsets committed (OffsetCommits)."),
    ("offsets_expired", "offset_expiration_count", "Committed offsets expired (OffsetExpired)."),
    ("offset_deletions", "offset_deletion_count",
     "Committed offsets deleted by OffsetDelete (OffsetDeletions)."),
    ("classic_rebalances_completed", "group_completed_rebalance_count",
     "Classic group rebalances completed: the leader's assignment written (CompletedRebalances)."),
    ("consumer_rebalances", "consumer_group_rebalance_count",
     "Consumer group rebalances: group epoch bumps (ConsumerGroupRebalances)."),
    ("share_rebalances", "share_group_rebalance_count",
     "Share group rebalances: group epoch bumps (ShareGroupRebalances)."),
    ("streams_rebalances", "streams_group_rebalance_count",
     "Streams group rebalances: group epoch bumps (StreamsGroupRebalances)."),
)


def group_state(g) -> str:
    """A group's state name, every type: a share group has no ``state`` attribute (its state
    follows from its members, ``state_name()``)."""
    name = getattr(g, "state_name", None)
    if callable(name):
        return str(name())
    st = getattr(g, "state", None)
    return str(getattr(st, "value", st))


async def families(manager, slicer) -> list[Family]:
    """The families of one coordinator shard; ``slicer.tick()`` yields to trio now and then."""
    by_type = {t: dict.fromkeys(states, 0) for t, states in STATES.items()}
    totals = dict.fromkeys(STATES, 0)
    for _gid, g in list(manager.groups.items()):
        kind = getattr(g, "group_type", "classic")
        if kind in totals:
            totals[kind] += 1
            states = by_type[kind]
            state = group_state(g)
            if state in states:
                states[state] += 1
        await slicer.tick()
    offsets = 0
    for _gid, per_group in list(manager.offsets.items()):
        offsets += len(per_group)
        await slicer.tick()

    out = []
    count = Family(PREFIX + "group_count", "gauge",
                   "Groups this node coordinates, per rebalance protocol (group-count).")
    for kind, n in totals.items():
        count.add(n, protocol=kind)
    out.append(count)
    for kind, states in by_type.items():
        fam = Family(f"{PREFIX}{kind}_group_count", "gauge",
                     f"{kind.capitalize()} groups this node coordinates, per state "
                     f"({kind}-group-count).")
        for state, n in states.items():
            fam.add(n, state=state)
        out.append(fam)
    out.append(Family(PREFIX + "offset_count", "gauge",
                      "Committed offsets retained for the groups this node coordinates "
                      "(offset-count).").add(offsets))
    parts = Family(PREFIX + "num_partitions", "gauge",
                   "__consumer_offsets partitions of this coordinator, per state (num-partitions).")
    parts.add(len(manager.loading), state="loading")
    parts.add(len(manager.loaded), state="active")
    parts.add(0, state="failed")
    out.append(parts)
    counters = manager.counters
    for key, name, help_ in SENSORS:
        out.append(Family(PREFIX + name, "counter", help_).add(counters.get(key, 0)))

    out.append(Family(YAMMER + "numoffsets", "gauge",
                      "Committed offsets retained (GroupMetadataManager NumOffsets).").add(offsets))
    classic = by_type["classic"]
    out.append(Family(YAMMER + "numgroups", "gauge",
                      "Classic groups this node coordinates (GroupMetadataManager NumGroups: "
                      "classic groups only, as in Kafka 4).").add(totals["classic"]))
    for state in STATES["classic"]:
        out.append(Family(f"{YAMMER}numgroups{state.lower()}", "gauge",
                          f"Classic groups in state {state} (NumGroups{state}).")
                   .add(classic[state]))
    return out
