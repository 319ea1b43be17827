"""Partition changes and replica reassignment (KIP-455), as Kafka's controller makes them.

``build_change`` is Kafka 4.4's ``PartitionChangeBuilder`` (unclean elections aside): from a
partition's state and the targets a caller sets (ISR, replicas, adding/removing replicas) it
builds the one ``PartitionChangeRecord`` that gets there, or ``None`` when nothing changes.
In Kafka's order:

1. an ongoing reassignment completes when the target ISR, without the replicas being
   removed, still holds every replica that stays: replicas and ISR lose the removed ones,
   adding/removing are cleared;
2. with ELR on (``min_isr`` given, KIP-966; ``target_elr``): a target ISR below the minimum ISR
   keeps every member of the current ISR or ELR it does not hold as an eligible leader
   replica (ELR), except brokers that restarted uncleanly (``unclean_shutdown``); an ISR at
   the minimum clears the ELR;
3. the leader is elected: ``ONLINE`` keeps the current leader if it is still valid -- in the
   target ISR, or in the ELR while that ISR is empty (a clean election: its log holds every
   committed record), and acceptable (live, not shutting down, its directory online) -- else
   the first valid replica in replica order; ``PREFERRED`` tries the first replica before
   the current leader. Failing that, with ELR on, the *last known leader* (KIP-966's balanced
   recovery, on in Kafka 4.4): when ISR and ELR are both empty and the last known ELR names
   one broker that is acceptable, it is elected and becomes the ISR. None gives -1. An ELR
   member elected becomes the ISR and leaves the ELR;
4. a replica set that loses a member bumps the leader epoch even when the leader stays
   (the leader field is set to the current leader);
5. the ELR where it changes (emptied with ELR off, or when the last known leader was
   elected); an empty target ISR is written only with ELR on (without it the last member
   stays);
6. the last known ELR holds the *last known leader* (Kafka 4.4): a change that leaves the
   partition without a leader records the leader it had (if none is recorded yet), and one
   that elects a leader clears it;
7. with the image's directory rules (``dirs``, from ``metadata.version`` 3.7-IV2, KIP-858):
   a replica whose directory is offline is never elected (Kafka's ``LeaderAcceptor``), and
   ``Directories`` is written when the target replicas' directories differ from the
   current ones -- a staying replica keeps its directory, ``set_dirs`` overrides one
   (AssignReplicasToDirs), an added replica gets its broker's default
   (``directories.DirRules.default_dir``).

Reassignment (``alter_reassignment``; Kafka's ``changePartitionReassignment`` /
``cancelPartitionReassignment``): a target ``T`` on current replicas ``C`` writes
``replicas = T + sorted(C - T)``, ``removing = sorted(C - T)``, ``adding = sorted(T - C)``;
the new replicas open their logs and fetch (the replica manager follows ``replicas``), the
leader adds them to the ISR once caught up, and that AlterPartition completes the
reassignment through step 1. Cancelling (null target) reverts to the original replicas
(``replicas - adding``) and an ISR without the added ones; if nothing of the ISR would be
left, the first original replica becomes the ISR, allowed only when the topic's
``unclean.leader.election.enable`` is true, as Kafka. ``ongoing_reassignments`` is what
ListPartitionReassignments lists.

Not implemented: unclean elections (``election=UNCLEAN`` is refused by the callers, see
``elect.py``) and the ``LeaderRecoveryState`` an election of the last known leader writes in
Kafka (RECOVERING, until that leader reports it recovered): kbroker keeps no recovery state,
its elected leader serves at once.
"""
from __future__ import annotations

import uuid
from typing import Callable, Iterable, Mapping, Sequence

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from . import directories, elr
from .directories import DirRules
from .image import MetadataImage, PartitionImage

NO_LEADER = -1
NO_LEADER_CHANGE = -2

ONLINE = "online"
PREFERRED = "preferred"


def build_change(p: PartitionImage, topic_id, acceptable: Callable[[int], bool], *,
                 isr: Sequence[int] | None = None, replicas: Sequence[int] | None = None,
                 removing: Sequence[int] | None = None, adding: Sequence[int] | None = None,
                 election: str = ONLINE, dirs: DirRules | None = None,
                 set_dirs: Mapping[int, uuid.UUID] | None = None,
                 min_isr: int | None = None,
                 unclean_shutdown: Sequence[int] = ()) -> messages.PartitionChangeRecord | None:
    """The record taking ``p`` to the targets (unset targets: as they are), or None.
    ``dirs``: the image's directory rules (None below metadata.version 3.7-IV2).
    ``min_isr``: the partition's effective minimum ISR when ELR is on (``elr.topic_min_isr``),
    None when it is off; ``unclean_shutdown``: brokers that lost their log's tail, never kept
    as eligible leaders."""
    if dirs is not None:
        leader_ok = acceptable

        def acceptable(r: int) -> bool:
            return leader_ok(r) and dirs.online(r, p.directory(r))
    t_isr = list(p.isr if isr is None else isr)
    t_replicas = list(p.replicas if replicas is None else replicas)
    t_removing = list(p.removing_replicas if removing is None else removing)
    t_adding = list(p.adding_replicas if adding is None else adding)

    # 1. complete an ongoing reassignment
    done = _completed(t_replicas, t_removing, t_adding, t_isr)
    if done is not None:
        t_replicas, t_isr = done
        t_removing, t_adding = [], []

    rec = messages.PartitionChangeRecord(partition_id=p.partition, topic_id=topic_id,
                                         leader=NO_LEADER_CHANGE)

    # 2. the eligible leader replicas (KIP-966)
    enabled = min_isr is not None
    t_elr = target_elr(p, t_isr, min_isr, unclean_shutdown) if enabled else list(p.elr)

    # 3. elect: from the ISR, or from the ELR while the ISR is empty, or the last known leader
    def valid(r: int) -> bool:
        return (r in t_isr or (not t_isr and r in t_elr)) and acceptable(r)

    def last_known_leader() -> int | None:
        if (enabled and not t_elr and not t_isr and len(p.last_known_elr) == 1
                and acceptable(p.last_known_elr[0])):
            return p.last_known_elr[0]
        return None

    leader, recovered = _elect(p.leader, t_replicas, valid, election, last_known_leader)
    if leader != p.leader:
        rec.leader = leader
        if leader in t_elr:         # a clean election out of the ELR: it is the ISR now
            t_isr = [leader]
            t_elr = [r for r in t_elr if r != leader]
        elif recovered:             # the last known leader: it alone is the ISR
            t_isr = [leader]
            rec.isr = t_isr

    # 4. a shrinking replica set bumps the leader epoch
    if rec.leader == NO_LEADER_CHANGE and not set(p.replicas) <= set(t_replicas):
        rec.leader = p.leader

    # 5. the ELR where it changes (emptied with ELR off or after a last-known-leader election)
    if rec.isr is not None or not enabled:
        t_elr = []
    if t_elr != list(p.elr):
        rec.eligible_leader_replicas = t_elr

    # the ISR: empty only with ELR on
    if rec.isr is None and (t_isr or enabled) and t_isr != list(p.isr):
        rec.isr = t_isr
    if t_replicas and t_replicas != list(p.replicas):
        rec.replicas = t_replicas
    if t_removing != list(p.removing_replicas):
        rec.removing_replicas = t_removing
    if t_adding != list(p.adding_replicas):
        rec.adding_replicas = t_adding

    # 6. the last known leader (Kafka 4.4's maybeUpdateLastKnownLeader)
    if enabled:
        if rec.leader == NO_LEADER and not p.last_known_elr:
            rec.last_known_elr = [p.leader]
        elif rec.leader >= 0 and p.last_known_elr:
            rec.last_known_elr = []

    # 7. directories of the target replicas
    if dirs is not None and t_replicas:
        current = dict(zip(p.replicas, p.directory_list()))
        current.update(set_dirs or {})
        target = [current[r] if r in current else dirs.default_dir(r) for r in t_replicas]
        if target != p.directory_list():
            rec.directories = target

    if (rec.leader == NO_LEADER_CHANGE and rec.isr is None and rec.replicas is None
            and rec.removing_replicas is None and rec.adding_replicas is None
            and rec.directories is None and rec.eligible_leader_replicas is None
            and rec.last_known_elr is None):
        return None
    return rec


def target_elr(p: PartitionImage, t_isr: Sequence[int], min_isr: int,
               unclean_shutdown: Sequence[int] = ()) -> list[int]:
    """Kafka's ``maybePopulateTargetElr``: the ELR for the target ISR. An ISR of ``min_isr``
    or more members clears it. A smaller one keeps every member of the current ISR or ELR
    that is not in it, brokers with an unclean shutdown excepted."""
    if len(t_isr) >= min_isr:
        return []
    in_isr = set(t_isr)
    return sorted(r for r in set(p.elr) | set(p.isr) if r not in in_isr and r not in unclean_shutdown)


def _elect(current: int, replicas: list[int], valid: Callable[[int], bool], election: str,
           last_known_leader: Callable[[], int | None]) -> tuple[int, bool]:
    """Kafka's ``electLeader``: ``(leader, whether it is the last known leader)``."""
    if election == PREFERRED:
        if replicas and valid(replicas[0]):
            return replicas[0], False
        if valid(current):
            return current, False
        found = next((r for r in replicas[1:] if valid(r)), None)
    else:
        if valid(current):
            return current, False
        found = next((r for r in replicas if valid(r)), None)
    if found is not None:
        return found, False
    last = last_known_leader()
    if last is not None:
        return last, True
    return NO_LEADER, False


def _completed(replicas: list[int], removing: list[int], adding: list[int],
               isr: list[int]) -> tuple[list[int], list[int]] | None:
    """Kafka's ``maybeCompleteReassignment``: the (replicas, ISR) after completion, or None."""
    if not removing and not adding:
        return None
    new_isr, new_replicas = list(isr), list(replicas)
    if removing:
        new_isr = [r for r in isr if r not in removing]
        new_replicas = [r for r in replicas if r not in removing]
        if not new_isr or not new_replicas:
            return None
    if not set(new_replicas) <= set(new_isr):
        return None
    return new_replicas, new_isr


# ---------------------------------------------------------------------- reassignment

def target_replicas(current: Sequence[int], target: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """Kafka's ``PartitionReassignmentReplicas``: ``(replicas, removing, adding)``."""
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    return list(target) + removing, removing, adding


def validate_assignment(image: MetadataImage, replicas: Sequence[int]) -> str | None:
    """Kafka's ``validateManualPartitionAssignment`` (without a replication factor): the
    reason a target replica list is refused (``INVALID_REPLICA_ASSIGNMENT``), or None."""
    if not replicas:
        return "The target replica list is empty."
    seen: set[int] = set()
    for b in sorted(replicas):
        if b not in image.brokers:
            return f"The target replica list names broker {b}, which is not registered."
        if b in seen:
            return f"The target replica list names broker {b} twice."
        seen.add(b)
    return None


def alter_reassignment(image: MetadataImage, topic: str, partition: int, target: Sequence[int] | None,
                       acceptable: Callable[[int], bool], unclean_allowed: Callable[[str], bool],
                       allow_replication_factor_change: bool = True
                       ) -> tuple[int, str | None, messages.PartitionChangeRecord | None]:
    """One partition of AlterPartitionReassignments: ``(error code, message, record)``;
    ``target`` None cancels the ongoing reassignment. Without
    ``allow_replication_factor_change`` (v1, KIP-860) a target whose size differs from the
    replication factor the partition has — or will have, when a reassignment is running —
    is INVALID_REPLICATION_FACTOR."""
    t = image.topics.get(topic)
    if t is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist.", None
    p = t.partitions.get(partition)
    if p is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION, f"Partition {topic}:{partition} does not exist.", None
    if target is None:
        if not p.reassigning:
            return E.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is running.", None
        original = [r for r in p.replicas if r not in p.adding_replicas]
        isr = [r for r in p.isr if r not in p.adding_replicas]
        if not isr:
            if not original:
                return E.INVALID_REPLICA_ASSIGNMENT, "The reassignment added every replica.", None
            if not unclean_allowed(topic):
                return (E.INVALID_REPLICA_ASSIGNMENT,
                        f"Cancelling the reassignment of {topic}:{partition} needs an unclean "
                        "leader election (every in-sync replica was being added).", None)
            isr = [original[0]]
        rec = build_change(p, t.topic_id, acceptable, isr=isr, replicas=original, removing=[], adding=[],
                           dirs=directories.rules(image), min_isr=elr.topic_min_isr(image, t))
        return E.NONE, None, rec
    target = [int(r) for r in target]
    msg = validate_assignment(image, target)
    if msg:
        return E.INVALID_REPLICA_ASSIGNMENT, msg, None
    if not allow_replication_factor_change:
        current = len((set(p.replicas) | set(p.adding_replicas)) - set(p.removing_replicas)) \
            if p.reassigning else len(p.replicas)
        if current != len(target):
            return (E.INVALID_REPLICATION_FACTOR,
                    f"The replication factor is changed from {current} to {len(target)}", None)
    replicas, removing, adding = target_replicas(p.replicas, target)
    rec = build_change(p, t.topic_id, acceptable,
                       replicas=replicas if replicas != list(p.replicas) else None,
                       removing=removing or None, adding=adding or None, dirs=directories.rules(image),
                       min_isr=elr.topic_min_isr(image, t))
    return E.NONE, None, rec


def ongoing_reassignments(image: MetadataImage, topics: Iterable[tuple[str, Sequence[int]]] | None
                          ) -> list[tuple[str, list[PartitionImage]]]:
    """ListPartitionReassignments: ``[(topic, [partitions being reassigned])]`` for the
    asked partitions (None: every topic); topics with none are left out, as Kafka."""
    if topics is None:
        asked = [(name, sorted(t.partitions)) for name, t in sorted(image.topics.items())]
    else:
        asked = [(name, list(parts)) for name, parts in topics]
    out = []
    for name, parts in asked:
        t = image.topics.get(name)
        if t is None:
            continue
        found = [t.partitions[i] for i in parts if i in t.partitions and t.partitions[i].reassigning]
        if found:
            out.append((name, found))
    return out
