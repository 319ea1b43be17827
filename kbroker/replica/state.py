"""Partition replication state: the rules that decide when data is committed (Kafka's
``Partition``/``Replica`` bookkeeping on the leader), as plain data and pure methods.

No I/O, no trio, no clock: the manager passes the time (``now``, milliseconds), the leader's
log offsets and what the metadata image says about brokers (as callables) and carries out
what a method returns — writing a new high watermark to the log, sending an AlterPartition,
waking parked requests. That keeps the data-loss-critical rules table-testable
(tests/replica/test_state.py) like the Raft core.

Rules (KIP-101, KIP-279, KIP-841 where they refine Kafka's ISR protocol):

- **High watermark** = the smallest log end offset over the leader and the *maximal* ISR
  (committed ISR + the replicas a pending expansion adds; a pending shrink does not count
  until committed). It only ever moves forward: :meth:`ReplicationState.high_watermark_after`
  answers None rather than a lower value. A follower that has not fetched in this leadership
  counts as log end offset -1, so it holds the high watermark until it fetches. With eligible
  leader replicas on (KIP-966), it does not move while the committed ISR is smaller than the
  effective ``min.insync.replicas``: a record is committed only once that many replicas have
  it, which is what makes an ELR member a clean leader.
- **Follower fetch state**: a fetch at offset ``o`` means the follower's log end offset is
  ``o``. ``lastCaughtUpTime`` is the time of a fetch that reached the leader's log end offset,
  or of the previous fetch when this one reached the log end offset the leader had then.
- **ISR expansion**: a follower not in the ISR joins once its log end offset reached both the
  high watermark and the offset where the current leader epoch began, its broker is eligible
  (registered, not fenced, not in controlled shutdown), and the controller has not refused it
  under its current registration. One AlterPartition in flight per partition.
- **ISR shrink**: an ISR follower leaves only when it is behind the leader's log end offset
  and was last caught up more than ``replica.lag.time.max.ms`` ago; the ISR never shrinks
  below the leader itself.
- **AlterPartition answers**: a success with a newer partition epoch in the same leader epoch
  commits the proposed ISR; a refusal (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED) remembers
  the refused brokers' registration *as the proposal saw it*, with the image's offset, so they
  are not proposed again until a newer image (a registration that changed while the request
  was in flight — the broker unfenced a moment after the controller refused — is proposed
  again at its next fetch, as Kafka's leader does; so is one fenced and unfenced again under
  the same broker epoch); any answer clears the pending proposal, and the next image decides
  otherwise.
- **Low watermark** (DeleteRecords): the smallest log start offset over the leader and every
  follower on an eligible broker, as each last reported it (-1 until it has fetched).
- **acks=all**: a produce whose last offset + 1 is ``required`` completes once the high
  watermark reaches ``required`` — NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
  committed ISR is then smaller than ``min.insync.replicas``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from kbroker.wire.error_codes import ErrorCode

# AlterPartition answers that mean "the controller will not add these replicas now".
REFUSALS = frozenset({ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED})


@dataclass
class FollowerState:
    """The leader's view of one other replica (Kafka's ``Replica``): its log end offset
    as of its last fetch (-1 = not fetched yet in this leadership) and the
    ``lastCaughtUpTime`` that decides ISR shrinking."""

    broker_id: int
    log_end_offset: int = -1
    log_start_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0


@dataclass
class ReplicationState:
    """The replication bookkeeping of one partition replica on broker ``local_id``.

    On a follower only ``isr`` and ``partition_epoch`` (from the image) mean anything; on the
    leader ``followers`` holds one :class:`FollowerState` per other assigned replica, and
    ``pending_isr`` the ISR proposed by the AlterPartition in flight. ``expand_refused`` maps
    a broker id to its registration (opaque, from the image) when the controller last
    refused to add it. Invariant: ``local_id`` is never a key of ``followers``.
    """

    local_id: int
    isr: tuple = ()
    partition_epoch: int = 0
    pending_isr: tuple | None = None
    leader_epoch_start: int = -1              # leader's log end offset when its epoch began
    followers: dict = field(default_factory=dict)      # broker id -> FollowerState
    expand_refused: dict = field(default_factory=dict)
    # broker id -> registration, of the replicas the pending proposal adds, when it was made
    pending_added: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ images

    def become_follower(self, isr: tuple, partition_epoch: int) -> None:
        """Kafka's makeFollower: the leader's bookkeeping goes."""
        self.followers = {}
        self.pending_isr = None
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch

    def apply_leader_image(self, replicas: tuple, isr: tuple, partition_epoch: int, now: int, *,
                           new_leader: bool, epoch_start: int | None) -> None:
        """Kafka's makeLeader (``epoch_start`` = the log end offset where a new leader
        epoch begins, None when the epoch is unchanged): a new epoch drops the pending
        proposal and takes the image's ISR; within one epoch the image's ISR is taken unless
        an AlterPartition answer already gave a newer partition epoch. Followers are added
        for new replicas (caught up now if in the ISR) and dropped for removed ones."""
        if epoch_start is not None:
            self.leader_epoch_start = epoch_start
            self.pending_isr = None
            if new_leader:
                self.followers = {}
            self.isr = tuple(isr)
            self.partition_epoch = partition_epoch
        elif partition_epoch >= self.partition_epoch:
            self.isr = tuple(isr)
            self.partition_epoch = partition_epoch
        me = self.local_id
        for rid in replicas:
            if rid != me and rid not in self.followers:
                self.followers[rid] = FollowerState(
                    rid, last_caught_up_ms=now if rid in self.isr else 0)
        for rid in list(self.followers):
            if rid not in replicas:
                del self.followers[rid]

    # ------------------------------------------------------------------ high watermark

    @property
    def maximal_isr(self) -> tuple:
        """Kafka's maximal ISR: a pending expansion already counts for the high watermark
        (stricter); a pending shrink does not count until committed."""
        if self.pending_isr is None:
            return self.isr
        return tuple(self.isr) + tuple(r for r in self.pending_isr if r not in self.isr)

    def high_watermark_after(self, leader_leo: int, high_watermark: int,
                             min_isr: int | None = None) -> int | None:
        """Kafka's maybeIncrementLeaderHW: the new high watermark when it moves forward
        from ``high_watermark``, else None (it never moves backwards). ``min_isr``: with
        ELR on (KIP-966), the effective minimum ISR; a committed ISR smaller than it holds
        the high watermark where it is."""
        if min_isr is not None and len(self.isr) < min_isr:
            return None
        new_hw = leader_leo
        me = self.local_id
        # (maximal_isr without its call when no AlterPartition is in flight: every append)
        for rid in self.isr if self.pending_isr is None else self.maximal_isr:
            if rid == me:
                continue
            f = self.followers.get(rid)
            leo = f.log_end_offset if f is not None else -1
            if leo < new_hw:
                new_hw = leo
        return new_hw if new_hw > high_watermark else None

    # ------------------------------------------------------------------ follower fetches

    @staticmethod
    def record_fetch(follower: FollowerState, fetch_offset: int, follower_log_start: int,
                     leader_leo: int, now: int) -> tuple[bool, bool]:
        """Kafka's updateFollowerFetchState: ``fetch_offset`` is the follower's log end
        offset; ``leader_leo`` the leader's as of before the read. Returns whether the
        follower's log start offset changed (a DeleteRecords may be waiting for the low
        watermark) and whether its log end offset moved (the high watermark may move); a
        plain pair, as this runs for every follower fetch."""
        if fetch_offset >= leader_leo:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, now)
        elif fetch_offset >= follower.last_fetch_leader_leo:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.last_fetch_leader_leo = leader_leo
        follower.last_fetch_ms = now
        start_changed = follower.log_start_offset != follower_log_start
        follower.log_start_offset = follower_log_start
        moved = follower.log_end_offset != fetch_offset
        follower.log_end_offset = fetch_offset
        return start_changed, moved

    # ------------------------------------------------------------------ ISR changes

    def isr_expansion(self, follower: FollowerState, high_watermark: int,
                      eligible: Callable[[int], bool],
                      registration: Callable[[int], Any]) -> tuple | None:
        """Kafka's maybeExpandIsr: the ISR to propose with ``follower`` added, or None."""
        rid = follower.broker_id
        if self.pending_isr is not None or rid in self.isr:
            return None
        leo = follower.log_end_offset
        if leo < high_watermark or self.leader_epoch_start < 0 or leo < self.leader_epoch_start:
            return None
        if not eligible(rid):
            return None
        refused = self.expand_refused.get(rid)
        if refused is not None:
            if refused == registration(rid):
                return None     # refused for this registration already: wait for the image
            del self.expand_refused[rid]
        return tuple(self.isr) + (rid,)

    def isr_shrink(self, leader_leo: int, now: int, lag_ms: int) -> tuple | None:
        """Kafka's maybeShrinkIsr: the ISR to propose without the followers that are behind
        ``leader_leo`` and not caught up for more than ``lag_ms``, or None."""
        if self.pending_isr is not None or len(self.isr) <= 1:
            return None
        me = self.local_id
        out = []
        for rid in self.isr:
            if rid == me:
                continue
            f = self.followers.get(rid)
            if f is None or (f.log_end_offset != leader_leo and now - f.last_caught_up_ms > lag_ms):
                out.append(rid)
        if not out:
            return None
        return tuple(r for r in self.isr if r not in out)

    def begin_alter(self, new_isr: tuple,
                    registration: Callable[[int], Any] = lambda _rid: None) -> tuple:
        """An AlterPartition goes out with ``new_isr``; it counts in the maximal ISR. The
        registrations of the replicas it adds are kept for a refusal."""
        self.pending_isr = tuple(new_isr)
        self.pending_added = {rid: registration(rid) for rid in new_isr if rid not in self.isr}
        return self.pending_isr

    def alter_refused(self, new_isr: tuple, error_code: int) -> None:
        """The controller answered ``error_code``: drop the proposal; remember refused
        additions under the registration the proposal was made with."""
        added, self.pending_added = self.pending_added, {}
        self.pending_isr = None
        if error_code in REFUSALS:
            for rid in set(new_isr) - set(self.isr):
                self.expand_refused[rid] = added.get(rid)

    def alter_committed(self, leader_epoch: int, answer_leader_epoch: int, answer_isr,
                        answer_partition_epoch: int, now: int) -> bool:
        """The controller accepted: take its ISR when it is newer and of our leader epoch
        (True); followers that join without a catch-up time count as caught up now."""
        self.pending_isr = None
        self.pending_added = {}
        if answer_leader_epoch != leader_epoch or answer_partition_epoch <= self.partition_epoch:
            return False
        self.isr = tuple(answer_isr)
        self.partition_epoch = answer_partition_epoch
        for rid in self.isr:
            f = self.followers.get(rid)
            if f is not None and f.last_caught_up_ms == 0:
                f.last_caught_up_ms = now
        return True

    # ------------------------------------------------------------------ low watermark

    def low_watermark(self, leader_log_start: int, eligible: Callable[[int], bool]) -> int:
        """Kafka's lowWatermarkIfLeader: the smallest log start offset over the leader and
        every follower on an eligible broker, as each last reported it."""
        low = leader_log_start
        for rid, f in self.followers.items():
            if f.log_start_offset < low and eligible(rid):
                low = f.log_start_offset
        return low


def acks_all_outcome(high_watermark: int, required_offset: int, isr_size: int,
                     min_insync_replicas: int) -> int | None:
    """Kafka's DelayedProduce completion: once the high watermark reaches
    ``required_offset`` the answer is NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
    committed ISR shrank below ``min.insync.replicas`` meanwhile; None = keep waiting."""
    if high_watermark >= required_offset:
        if isr_size < min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE
    return None


def min_insync_ok(isr_size: int, min_insync_replicas: int) -> bool:
    """acks=all is accepted for appending only while the committed ISR has at least
    ``min.insync.replicas`` members (else NOT_ENOUGH_REPLICAS, nothing appended)."""
    return isr_size >= min_insync_replicas
