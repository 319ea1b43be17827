"""Server-side assignors of the consumer group protocol (KIP-848): ``uniform`` and
``range`` (``group.consumer.assignors``; a member picks one with ``ServerAssignor``,
``group.remote.assignor`` in the clients). Pure functions over a :class:`GroupSpec`.

- **range** (Kafka's ``RangeAssignor``): per topic, the members subscribed to it in order —
  static members by instance id first, then the others by member id — each take a
  contiguous range; the first ``partitions % members`` take one more. Not sticky; topics
  with the same partition count are co-partitioned.
- **uniform** (Kafka's ``UniformAssignor``): every member gets ``total / members`` or one
  more partition (homogeneous subscriptions), keeping what it already has where the quota
  allows (sticky), then filling the members under quota with the free partitions. For
  heterogeneous subscriptions each partition may only go to a subscriber: keep, then give
  free partitions to the least-loaded subscriber, then move partitions from members that
  have at least two more than another subscriber of the topic until no such move exists.

Kafka iterates hash maps where ties are decided, so two implementations agree on the
balance and stickiness properties, not partition for partition; here every tie is decided
by sorted member id, topic name and partition number (deterministic, table-testable).
Rack-aware placement is not done (Kafka 4.3's uniform assignor does not use racks either).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Mapping

Target = dict[uuid.UUID, frozenset[int]]


class AssignorError(Exception):
    """Kafka's ``PartitionAssignorException`` (the assignment is not changed)."""


@dataclass(frozen=True)
class MemberSpec:
    """One member as an assignor sees it: its subscribed topic ids and its current target."""
    member_id: str
    instance_id: str | None
    topics: frozenset[uuid.UUID]              # subscribed topic ids (existing topics only)
    current: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)  # last target


@dataclass(frozen=True)
class GroupSpec:
    """What a server-side assignor (KIP-848) assigns from: the members and the partition count
    of each subscribed topic."""
    members: tuple[MemberSpec, ...]
    partitions: Mapping[uuid.UUID, int]       # topic id -> partition count
    names: Mapping[uuid.UUID, str] = field(default_factory=dict)   # for deterministic order

    def homogeneous(self) -> bool:
        return len({m.topics for m in self.members}) <= 1

    def topic_order(self, ids) -> list[uuid.UUID]:
        return sorted(ids, key=lambda t: (self.names.get(t, ""), str(t)))


def _num_partitions(spec: GroupSpec, topic_id: uuid.UUID) -> int:
    n = spec.partitions.get(topic_id, -1)
    if n < 0:
        raise AssignorError(f"Members are subscribed to topic {topic_id} which doesn't exist")
    return n


# --------------------------------------------------------------------------- range
def range_assign(spec: GroupSpec) -> dict[str, Target]:
    members = sorted(spec.members, key=lambda m: (0, m.instance_id, "") if m.instance_id is not None
                     else (1, "", m.member_id))
    out: dict[str, dict[uuid.UUID, frozenset[int]]] = {m.member_id: {} for m in members}
    topics: dict[uuid.UUID, list[MemberSpec]] = {}
    for m in members:
        for t in m.topics:
            topics.setdefault(t, []).append(m)
    for t, subs in topics.items():
        n = _num_partitions(spec, t)
        quota, extra = divmod(n, len(subs))
        start = 0
        for i, m in enumerate(subs):
            end = min(start + quota + (1 if i < extra else 0), n)
            if start < end:
                out[m.member_id][t] = frozenset(range(start, end))
            start = end
    return out


# --------------------------------------------------------------------------- uniform
def uniform_assign(spec: GroupSpec) -> dict[str, Target]:
    if not spec.members:
        return {}
    if spec.homogeneous():
        return _uniform_homogeneous(spec)
    return _uniform_heterogeneous(spec)


def _uniform_homogeneous(spec: GroupSpec) -> dict[str, Target]:
    members = sorted(spec.members, key=lambda m: m.member_id)
    topics = spec.topic_order(members[0].topics)
    if not topics:
        return {m.member_id: {} for m in members}
    all_parts = [(t, p) for t in topics for p in range(_num_partitions(spec, t))]
    total = len(all_parts)
    min_quota, extra = divmod(total, len(members))
    subscribed = set(topics)
    kept: dict[str, dict[uuid.UUID, set[int]]] = {}
    assigned: set[tuple[uuid.UUID, int]] = set()
    unfilled: list[tuple[str, int]] = []
    remaining_extra = extra
    n = len(members)
    for idx, m in enumerate(members):
        quota = min_quota
        has_extra = False
        if remaining_extra > 0:
            quota += 1
            has_extra = True
        mine: dict[uuid.UUID, set[int]] = {}
        for t in spec.topic_order(m.current):
            if t not in subscribed:
                continue
            for p in sorted(m.current[t]):
                if p >= spec.partitions.get(t, 0) or (t, p) in assigned:
                    continue
                if quota > 0:
                    quota -= 1
                    mine.setdefault(t, set()).add(p)
                    assigned.add((t, p))
        # keep the extra slot for a member that can still use it
        if quota > 0 and has_extra and n - idx > remaining_extra:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((m.member_id, quota))
        if has_extra:
            remaining_extra -= 1
        kept[m.member_id] = mine
    free = [tp for tp in all_parts if tp not in assigned]
    i = 0
    for mid, quota in unfilled:
        for _ in range(quota):
            if i >= len(free):
                break
            t, p = free[i]
            i += 1
            kept[mid].setdefault(t, set()).add(p)
    if i < len(free):
        raise AssignorError("Partitions were left unassigned")
    return {mid: {t: frozenset(ps) for t, ps in a.items() if ps} for mid, a in kept.items()}


def _uniform_heterogeneous(spec: GroupSpec) -> dict[str, Target]:
    members = sorted(spec.members, key=lambda m: m.member_id)
    by_id = {m.member_id: m for m in members}
    owner: dict[tuple[uuid.UUID, int], str] = {}
    load = {m.member_id: 0 for m in members}
    topics: set[uuid.UUID] = set()
    for m in members:
        topics |= m.topics
    counts = {t: _num_partitions(spec, t) for t in topics}
    # 1. stickiness: keep what is still subscribed and exists
    for m in members:
        for t in spec.topic_order(m.current):
            if t not in m.topics:
                continue
            for p in sorted(m.current[t]):
                if p < counts.get(t, 0) and (t, p) not in owner:
                    owner[(t, p)] = m.member_id
                    load[m.member_id] += 1
    # 2. free partitions to the least-loaded subscriber (topics with few subscribers first)
    subscribers = {t: [m.member_id for m in members if t in m.topics] for t in topics}
    order = sorted(topics, key=lambda t: (len(subscribers[t]), spec.names.get(t, ""), str(t)))
    for t in order:
        for p in range(counts[t]):
            if (t, p) in owner:
                continue
            mid = min(subscribers[t], key=lambda x: (load[x], x))
            owner[(t, p)] = mid
            load[mid] += 1
    # 3. balance: move a partition to a subscriber with at least two fewer
    for _ in range(sum(counts.values()) * max(1, len(members))):
        moved = False
        for (t, p), mid in sorted(owner.items(), key=lambda kv: (-load[kv[1]], spec.names.get(kv[0][0], ""), kv[0][1])):
            best = min(subscribers[t], key=lambda x: (load[x], x))
            if load[mid] - load[best] >= 2:
                owner[(t, p)] = best
                load[mid] -= 1
                load[best] += 1
                moved = True
                break
        if not moved:
            break
    out: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    for (t, p), mid in owner.items():
        out[mid].setdefault(t, set()).add(p)
    del by_id
    return {mid: {t: frozenset(ps) for t, ps in a.items()} for mid, a in out.items()}


ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}


def assign(name: str, spec: GroupSpec) -> dict[str, Target]:
    try:
        fn = ASSIGNORS[name]
    except KeyError:
        raise AssignorError(f"unknown assignor {name!r}") from None
    return fn(spec)
