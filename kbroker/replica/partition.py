"""One partition replica on this node (leader, follower or leaderless) and the waiters parked
on it: the object every other module of the replica layer works on.

A :class:`Partition` holds the log, the topic config, the assignment from the last metadata
image and, on the leader, the view of each follower (:class:`FollowerState`). Parked fetches
and produces wait on it with :meth:`Partition.wait_for_change`; :meth:`Partition.wake` sets
them all (leadership and epoch changes, truncation, markers, log start moves...).

Two narrower wake-ups keep a replication round free of wake-ups that cannot complete
anything (as Kafka's DelayedFetch, whose follower fetches wait for the log end offset and
consumer fetches for the high watermark): an append that leaves the high watermark where it
was wakes only the parked follower fetches (:meth:`Partition.wake_log_end`: nothing a
consumer, an acks=all produce or a DeleteRecords waits for has changed), and a high-watermark
move wakes everything but them (:meth:`Partition.wake_high_watermark`: a follower fetch
answers with new records, not with a new high watermark, so woken it would only read again
and park again).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import trio

from kbroker.log.config import LogConfig
from kbroker.replica.results import ReplicaError
from kbroker.replica.state import FollowerState, ReplicationState
from kbroker.wire.error_codes import ErrorCode

__all__ = ["Partition", "FollowerState", "check_leader_epoch"]


@dataclass
class Partition:
    """One partition this node holds a replica of: leader, follower, or leaderless.

    Invariants: ``high_watermark <= log_end_offset``; ``last_stable_offset <=
    high_watermark``; on the leader the high watermark never goes down and is at most the
    smallest log end offset over the maximal ISR (committed ISR + a pending expansion).
    ``leader_generation`` grows each time this node becomes leader, so a waiter can tell
    that leadership was lost in between even if it came back. Waiters are trio Events owned
    by parked fetches and produces; ``wake`` sets and forgets all of them (each re-registers
    if it keeps waiting).
    """

    topic: str
    index: int
    topic_id: Any
    log: Any                                   # kbroker.log PartitionLog
    leader_epoch: int
    config: LogConfig
    props: dict                                # effective topic-level properties (strings)
    replication: ReplicationState              # ISR, followers, pending AlterPartition (pure)
    leader: int = -1                           # leader id from the image
    replicas: tuple = ()
    is_leader: bool = False
    leader_generation: int = 0
    waiters: set = field(default_factory=set)            # consumers, produces, DeleteRecords
    log_end_waiters: set = field(default_factory=set)    # parked follower fetches
    lso_hook: Callable | None = None
    # the partition image whose log directory was last compared with this log's (KIP-858):
    # an unchanged image needs no new comparison
    dir_checked: Any = None
    # (props, before, after): the CreateTime window of ``props`` (replica/append.py), kept
    # while ``props`` is the same object (a new configuration replaces the dict)
    timestamp_window: tuple | None = None

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        hw = self.log.last_stable_offset
        if self.lso_hook is not None:
            first_unstable = self.lso_hook(self)
            if first_unstable is not None:
                return min(hw, first_unstable)
        return hw

    # the replication state's fields, read-only here (kbroker/replica/state.py changes them)

    @property
    def isr(self) -> tuple:
        """The committed ISR (from the image or an AlterPartition answer)."""
        return self.replication.isr

    @property
    def pending_isr(self) -> tuple | None:
        """The ISR proposed by the AlterPartition in flight, if any."""
        return self.replication.pending_isr

    @property
    def partition_epoch(self) -> int:
        return self.replication.partition_epoch

    @property
    def leader_epoch_start(self) -> int:
        """The log end offset when this node's current leader epoch began (-1: not leader)."""
        return self.replication.leader_epoch_start

    @property
    def followers(self) -> dict:
        return self.replication.followers

    @property
    def maximal_isr(self) -> tuple:
        return self.replication.maximal_isr

    def wake(self) -> None:
        """Wake every waiter (each re-checks its condition)."""
        self.wake_high_watermark()
        self.wake_log_end()

    def wake_high_watermark(self) -> None:
        """The high watermark moved: wake the waiters that read up to it or wait for it
        (consumer fetches, acks=all produces, DeleteRecords), not the follower fetches."""
        if self.waiters:
            waiters, self.waiters = self.waiters, set()
            for ev in waiters:
                ev.set()

    def wake_log_end(self) -> None:
        """Records were appended: wake the parked follower fetches, which read up to the
        log end offset."""
        if self.log_end_waiters:
            waiters, self.log_end_waiters = self.log_end_waiters, set()
            for ev in waiters:
                ev.set()

    async def wait_for_change(self, deadline: float) -> None:
        """Park until the next :meth:`wake` (an append, a HW or leadership change...) or
        the trio-clock ``deadline``, whichever comes first."""
        event = trio.Event()
        self.waiters.add(event)
        try:
            with trio.move_on_at(deadline):
                await event.wait()
        finally:
            self.waiters.discard(event)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor`` over the log's epoch cache."""
        return self.log.end_offset_for_epoch(epoch)


def check_leader_epoch(part: Partition, current_leader_epoch: int) -> None:
    """KIP-320: a client's view of the leader epoch must match ours (-1 = no check)."""
    if current_leader_epoch < 0 or current_leader_epoch == part.leader_epoch:
        return
    if current_leader_epoch < part.leader_epoch:
        raise ReplicaError(ErrorCode.FENCED_LEADER_EPOCH)
    raise ReplicaError(ErrorCode.UNKNOWN_LEADER_EPOCH)
