"""Warm-up tasks and the restore progress members report (KIP-1071's second part).

**Task offsets.** A member of a streams group reports, in StreamsGroupHeartbeat v1's
``TaskOffsets`` and ``TaskEndOffsets``, the sum of the changelog offsets of every task whose
state it holds and the sum of their end offsets: on joining, when its tasks change, every
``task.offset.interval.ms`` (the heartbeat answer's ``TaskOffsetIntervalMs``) and as soon as a
warm-up task is within ``AcceptableRecoveryLag`` of the end. A list replaces the member's
previous report, a null list keeps it; a task twice in one list is INVALID_REQUEST ("Task
offsets contain a duplicate entry for subtopology S and partition P."). Reports are kept in
memory only, per member, and dropped when the member goes (Kafka's ``MemberTaskOffsets``).
A running active task's offset sum is Kafka Streams' ``LATEST_OFFSET`` (-2): caught up.

**Refinement.** The assignor decides where each task belongs (:mod:`.assignor`); the
refinement decides how the group gets there. Members reconcile towards the refined
assignment, derived from the target for the whole group at once:

- a *stateful* task (its subtopology has changelog topics) whose target owner is not the
  member running it now, and whose target owner's process has not caught up on its state
  (no member of that process reports a lag ≤ ``acceptable.recovery.lag`` for it), stays
  with the member running it (which loses a standby of it the target gave it, if any);
- the target owner gets a **warm-up task** for it instead, up to ``num.warmup.replicas``
  warm-up tasks in the group (migrations whose target owner already warms the task first,
  then in task order); one already holding the task as a standby keeps that standby;
- every other task goes where the target puts it: a stateless task, a task nobody runs, a
  task moving inside one process (its members share the state on disk), a task whose
  target owner has caught up.

The refined assignment hands out exactly the target's active tasks, only some to other
members. It is computed once per assignment epoch (a coordinator keeps it in memory and
derives it again after a failover, when no member has reported yet: every migration is then
staged again — the safe direction). Once a warm-up member reports it has caught up, its next
heartbeat in a Stable group finds its refined tasks changed: the group epoch is bumped
without a new target and the task moves (revocation before assignment).

Kafka 4.4.0 ships the hooks of this (task offsets in the heartbeat and in
StreamsGroupDescribe, ``num.warmup.replicas``, the reconciliation of warm-up tasks) with a
refinement that returns the target unchanged, so it hands out no warm-up task; kbroker does
the same unless ``kbroker.streams.warmup.tasks.enable`` is true.

Pure: no clock, no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kbroker.wire.error_codes import ErrorCode as E

from ..epoch_state import GroupError
from .state import StreamsGroupMember, TaskSet, norm, pairs_of, tasks_of

Task = tuple[str, int]
LATEST_OFFSET = -2                   # a running active task (Kafka Streams' Task.LATEST_OFFSET)
_UNKNOWN = (1 << 63) - 1             # Long.MAX_VALUE: an offset the client does not know


def offsets_of(entries: Iterable[tuple[str, int, int]] | None) -> dict[Task, int] | None:
    """A reported list ``[(subtopology, partition, offset)]`` as a map; None stays None."""
    if entries is None:
        return None
    out: dict[Task, int] = {}
    for sid, p, off in entries:
        if (sid, p) in out:
            raise GroupError(E.INVALID_REQUEST, f"Task offsets contain a duplicate entry for "
                             f"subtopology {sid} and partition {p}.")
        out[(sid, p)] = off
    return out


@dataclass(frozen=True)
class TaskOffsets:
    """One member's last report: changelog offset sums and end offset sums by task."""
    offsets: Mapping[Task, int] = field(default_factory=dict)
    end_offsets: Mapping[Task, int] = field(default_factory=dict)

    def update(self, offsets: dict[Task, int] | None,
               end_offsets: dict[Task, int] | None) -> "TaskOffsets":
        return TaskOffsets(self.offsets if offsets is None else offsets,
                           self.end_offsets if end_offsets is None else end_offsets)

    def lag(self, task: Task) -> int | None:
        """How far the member's state of ``task`` is behind, if it reported both sums."""
        off, end = self.offsets.get(task), self.end_offsets.get(task)
        if off == LATEST_OFFSET:
            return 0
        if off is None or end is None or off < 0 or end < 0 or _UNKNOWN in (off, end):
            return None
        return max(end - off, 0)


EMPTY_OFFSETS = TaskOffsets()


def refine(target: Mapping[str, TaskSet], members: Mapping[str, StreamsGroupMember],
           reports: Mapping[str, TaskOffsets], stateful: frozenset[str],
           num_warmup_replicas: int, acceptable_recovery_lag: int) -> dict[str, TaskSet]:
    """The refined assignment of the group (see the module docstring)."""
    out = {mid: target.get(mid, TaskSet()).normalized() for mid in set(target) | set(members)}
    if num_warmup_replicas <= 0:
        return out
    sets = {mid: {k: pairs_of(getattr(ts, k)) for k in ("active", "standby", "warmup")}
            for mid, ts in out.items()}
    for s in sets.values():
        s["warmup"] = set()
    runs = {task: mid for mid, m in members.items() for task in pairs_of(norm(m.assigned.active))}
    process = {mid: m.process_id for mid, m in members.items()}

    def caught_up(task: Task, proc: str) -> bool:
        for mid, p in process.items():
            if p == proc:
                lag = reports.get(mid, EMPTY_OFFSETS).lag(task)
                if lag is not None and lag <= acceptable_recovery_lag:
                    return True
        return False

    staged: list[tuple[Task, str, str]] = []
    for to in sorted(sets):
        for task in sorted(sets[to]["active"]):
            holder = runs.get(task)
            if task[0] not in stateful or holder is None or holder == to or to not in members:
                continue
            if process[holder] == process[to] or caught_up(task, process[to]):
                continue
            staged.append((task, holder, to))
    for task, holder, to in staged:
        sets[to]["active"].discard(task)
        sets[holder]["active"].add(task)
        sets[holder]["standby"].discard(task)
    warming = {(mid, task) for mid, m in members.items() for task in pairs_of(norm(m.assigned.warmup))}
    staged.sort(key=lambda s: ((s[2], s[0]) not in warming, s[0]))
    budget = num_warmup_replicas
    for task, _holder, to in staged:
        if budget == 0:
            break
        if task not in sets[to]["standby"]:
            sets[to]["warmup"].add(task)
            budget -= 1
    return {mid: TaskSet(**{k: tasks_of(v) for k, v in s.items()}) for mid, s in sets.items()}


def stateful_subtopologies(topology) -> frozenset[str]:
    """The subtopologies with state changelog topics."""
    if topology is None:
        return frozenset()
    return frozenset(s.subtopology_id for s in topology.subtopologies if s.state_changelog_topics)
