"""The ``sticky`` task assignor of streams groups (Kafka 4.4's default streams assignor).

Input: the tasks (subtopology id → number of partitions), the stateful subtopologies (those
with state changelog topics), the members with their process id, the tasks they currently
hold and the changelog offsets they reported (KIP-1071's task offsets), and
``num.standby.replicas``. Output: each member's target active and standby tasks (an assignor
hands out no warm-up tasks: :mod:`.warmup` derives them from its result).

Rules (Kafka's ``StickyTaskAssignor``):

1. **Active tasks** are balanced over the members: each member may hold at most
   ``ceil(tasks / members)`` active tasks. A task first stays with the member that holds it
   (stickiness), up to that bound; a task whose holder left or is full goes to a member of the
   process that held it as a standby if it has room, else to the least loaded member.
2. **Standby tasks**: ``num.standby.replicas`` copies of each *stateful* task (a stateless
   task has no state to keep warm), never on the process that runs the task actively, nor
   twice on one process; the previous active and standby holders first, then the members
   that reported changelog offsets for the task (its state is on their disk; the largest
   offset sum first, as Kafka 4.4 ranks its standby candidates), then the least loaded
   members (active + standby). A task gets fewer standbys when there are not enough
   processes.

Deterministic: members, tasks and ties are taken in sorted order.

``ASSIGNORS`` names the assignors a group may be given (KIP-1357's ``group.streams.assignors``
and ``streams.assignor.name``): Kafka 4.4's one built-in ``sticky``, and ``mock`` — the
test assignor Kafka's jar ships (``MockAssignor``), which a broker may list by its class name:
every member keeps the active tasks it holds, each free task goes to the member holding the
fewest (ties by member id), and no standby task is ever given.
"""
from __future__ import annotations

from dataclasses import dataclass, field

Task = tuple[str, int]


@dataclass(frozen=True)
class AssignorMember:
    """One streams member as the task assignor sees it: its process, held tasks and reported
    offsets."""
    member_id: str
    process_id: str
    active: frozenset[Task] = frozenset()      # held now (active, or pending revocation)
    standby: frozenset[Task] = frozenset()
    offsets: tuple[tuple[Task, int], ...] = ()  # reported changelog offset sums


@dataclass
class MemberTarget:
    """The active and standby tasks the assignor gives one member."""
    active: set[Task] = field(default_factory=set)
    standby: set[Task] = field(default_factory=set)


def all_tasks(tasks: dict[str, int]) -> list[Task]:
    return [(sid, p) for sid in sorted(tasks) for p in range(tasks[sid])]


def assign(tasks: dict[str, int], members: list[AssignorMember],
           num_standby_replicas: int = 0,
           stateful: frozenset[str] | None = None) -> dict[str, MemberTarget]:
    """``stateful``: the subtopologies that get standby tasks (None: all of them)."""
    members = sorted(members, key=lambda m: m.member_id)
    out = {m.member_id: MemberTarget() for m in members}
    if not members:
        return out
    todo = all_tasks(tasks)
    cap = -(-len(todo) // len(members))
    by_id = {m.member_id: m for m in members}

    def load(mid: str) -> tuple:
        t = out[mid]
        return (len(t.active), len(t.active) + len(t.standby), mid)

    # 1. active: sticky, then standby holders, then least loaded
    owner: dict[Task, str] = {}
    valid = set(todo)
    for m in members:
        for task in sorted(m.active):
            if task in owner or task not in valid:
                continue
            if len(out[m.member_id].active) < cap:
                out[m.member_id].active.add(task)
                owner[task] = m.member_id
    for task in todo:
        if task in owner:
            continue
        prev_standby = [m.member_id for m in members
                        if task in m.standby and len(out[m.member_id].active) < cap]
        pool = prev_standby or [m.member_id for m in members if len(out[m.member_id].active) < cap]
        best = min(pool or list(out), key=load)
        out[best].active.add(task)
        owner[task] = best

    # 2. standby replicas on other processes
    if num_standby_replicas > 0:
        reported = {m.member_id: dict(m.offsets) for m in members}
        for task in todo:
            if stateful is not None and task[0] not in stateful:
                continue
            used = {by_id[owner[task]].process_id}
            for _ in range(num_standby_replicas):
                cands = [m for m in members if m.process_id not in used]
                if not cands:
                    break
                prev = [m for m in cands if task in m.standby or task in m.active]
                on_disk = [m for m in cands if task in reported[m.member_id]]
                if prev:
                    best = min(prev, key=lambda m: load(m.member_id))
                elif on_disk:
                    best = min(on_disk, key=lambda m: (-reported[m.member_id][task],
                                                       load(m.member_id)))
                else:
                    best = min(cands, key=lambda m: load(m.member_id))
                out[best.member_id].standby.add(task)
                used.add(best.process_id)
    return out


def assign_mock(tasks: dict[str, int], members: list[AssignorMember],
                num_standby_replicas: int = 0,
                stateful: frozenset[str] | None = None) -> dict[str, MemberTarget]:
    """Kafka's ``MockAssignor``: nothing moves, free tasks fill the least loaded members."""
    members = sorted(members, key=lambda m: m.member_id)
    out = {m.member_id: MemberTarget() for m in members}
    valid = set(all_tasks(tasks))
    owner: dict[Task, str] = {}
    for m in members:
        for task in sorted(m.active):
            if task in valid and task not in owner:
                out[m.member_id].active.add(task)
                owner[task] = m.member_id
    if not members:
        return out
    for task in all_tasks(tasks):
        if task not in owner:
            best = min(out, key=lambda mid: (len(out[mid].active), mid))
            out[best].active.add(task)
            owner[task] = best
    return out


# the task assignors by name (kbroker.config.streams_assignors)
ASSIGNORS = {"sticky": assign, "mock": assign_mock}
