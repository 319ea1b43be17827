"""One share-partition (KIP-932's ``SharePartition``): which records of a partition a share
group has delivered, to whom, how often, and what became of them.

Pure: every event carries ``now_ms``, a reading of the *monotonic* clock (the only use of
time here is the acquisition locks, which Kafka times on ``hiResClockMs``: its
``AcquisitionLockTimerTask`` and the renewal's remaining delay), so a step of the wall
clock neither expires every lock nor stretches one; nothing reads a clock or the log (the
caller says which offsets the log holds).

Offsets:

- **start offset** (SPSO): every record before it is done (acknowledged or archived);
- **end offset** (SPEO): the first offset never acquired; the in-flight records lie in
  ``[start_offset, end_offset)``.

Record states (Kafka's ``RecordState`` ids, also what ShareSnapshot stores): AVAILABLE (0)
may be acquired; ACQUIRED (1) is locked to one member until its acquisition lock expires
(``group.share.record.lock.duration.ms`` / GROUP ``share.record.lock.duration.ms``);
ACKNOWLEDGED (2) and ARCHIVED (4) are final.

Each acquisition increments the record's **delivery count**. A record released (by the
member, by lock expiry or by the member leaving) becomes AVAILABLE again unless its count
has reached ``group.share.delivery.count.limit``: then it is ARCHIVED.

Acknowledgement types (ShareFetch/ShareAcknowledge): 0 gap (the offset holds no record —
archived), 1 accept, 2 release, 3 reject (archived, never redelivered). Acknowledging a
record the member does not hold is ``INVALID_RECORD_STATE``.

Offsets archived for good — the delivery count limit reached, or rejected — are kept as dead
letters (:meth:`SharePartition.take_dead_letters`) for the group's dead-letter queue
(KIP-1191, ``kbroker/share/dlq.py``).

At most ``group.share.partition.max.record.locks`` records are in flight; acquisition stops
there until the start offset moves on.

The state is kept per offset (a dict of in-flight offsets), bounded by that limit.
:meth:`SharePartition.state_batches` and :meth:`SharePartition.from_state` are the
persisted form (the ShareSnapshot's ``StateBatches``: runs of equal state and delivery
count; ACQUIRED is persisted as AVAILABLE, as Kafka does: a lock does not survive a restart).

What is written lags one write behind the start offset, as Kafka 4.4's ``SharePartition``
writes it (F-970): a WriteShareGroupState carries the start offset from *before* the change
that caused it (Kafka moves its start offset only once the write completed,
``rollbackOrProcessStateUpdates`` then ``maybeUpdateCachedStateAndOffsets``), with the
acknowledged/archived records the change settled as state batches above it. The next write
carries the moved start offset. :meth:`SharePartition.take_snapshot` gives that form;
``written_start``/``written_complete`` are what the last one said (what the share
coordinator holds, and what DescribeShareGroupOffsets reports).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable

from kbroker.wire.error_codes import ErrorCode as E


# why an offset was archived for good (KIP-1191's DLQ ``__dlq.errors.message``, Kafka's words)
DELIVERY_LIMIT = "Offset delivery count exceeded the threshold."
REJECTED = "Offset rejected by client."


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4           # KIP-1222: keep the records acquired, restart their lock


@dataclass
class InFlight:
    """An in-flight record's state, delivery count, holder and lock deadline."""
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: int = 0


@dataclass(frozen=True)
class AcquiredRange:
    """Offsets handed to a consumer in one acquisition, with their delivery count."""
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class StateBatch:
    """A run of offsets sharing one delivery state and count (persisted form)."""
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class SharePartition:
    def __init__(self, start_offset: int, *, lock_duration_ms: int = 30_000,
                 delivery_count_limit: int = 5, max_in_flight: int = 2_000,
                 state_epoch: int = 0) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.lock_duration_ms = lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.state_epoch = state_epoch
        self.in_flight: dict[int, InFlight] = {}
        # offsets archived for good since the owner last took them (KIP-1191 dead letters):
        # (offset, delivery count, cause), drained by the manager with take_dead_letters()
        self.dead_letters: list[tuple[int, int, str]] = []
        # the persisted view (F-970): the start offset the next snapshot carries (where the
        # start offset stood at the last advancing one), the records the start offset moved
        # past at or above the start offset last written (offset -> final state, delivery
        # count: they are written until a snapshot's start offset passes them), and what the
        # last snapshot said
        self._write_start = start_offset
        self._retired: dict[int, InFlight] = {}
        self.written_start = start_offset
        self.written_complete = 0

    # ------------------------------------------------------------------ acquisition
    def acquire(self, member_id: str, available_end: int, max_records: int, now_ms: int,
                skip: Iterable[int] = (), limit_offset: int | None = None,
                batch_ends: Iterable[int] | None = None) -> list[AcquiredRange]:
        """Acquire up to ``max_records`` records for ``member_id``: first the AVAILABLE
        in-flight ones in offset order, then new offsets from the end offset up to
        ``available_end`` (exclusive: the high watermark, or the last stable offset under
        read_committed). ``skip`` are offsets that hold no deliverable record (control
        records, records of aborted transactions): they are archived, not delivered.
        ``limit_offset`` (exclusive) bounds what this call looks at (the fetched data).
        ``batch_ends`` (the last offsets of the fetched record batches): new records are
        acquired in whole batches, as Kafka 4.4 does — ``max_records`` is reached at a batch's
        end, so the last batch may take the count past it."""
        self.expire_locks(now_ms)
        if max_records <= 0:
            return []
        skip = set(skip)
        upto = available_end if limit_offset is None else min(available_end, limit_offset)
        taken: list[tuple[int, int]] = []
        for off in sorted(o for o, r in self.in_flight.items() if r.state is RecordState.AVAILABLE):
            if len(taken) >= max_records or off >= upto:
                break
            if off in skip:
                self.in_flight[off].state = RecordState.ARCHIVED
                continue
            taken.append((off, self._lock(off, member_id, now_ms)))
        off = max(self.end_offset, self.start_offset)
        first_new = off
        ends = None if batch_ends is None else set(batch_ends)
        while off < upto and len(self.in_flight) < self.max_in_flight:
            if len(taken) >= max_records and (ends is None or off == first_new or off - 1 in ends):
                break
            if off in skip:
                self.in_flight[off] = InFlight(RecordState.ARCHIVED)
            else:
                self.in_flight[off] = InFlight(RecordState.AVAILABLE)
                taken.append((off, self._lock(off, member_id, now_ms)))
            off += 1
            self.end_offset = off
        self._maybe_advance_start()
        return _ranges(sorted(taken))

    def _lock(self, off: int, member_id: str, now_ms: int) -> int:
        r = self.in_flight[off]
        r.state = RecordState.ACQUIRED
        r.delivery_count += 1
        r.member_id = member_id
        r.lock_deadline_ms = now_ms + self.lock_duration_ms
        return r.delivery_count

    # ------------------------------------------------------------------ acknowledgement
    def acknowledge(self, member_id: str, first_offset: int, last_offset: int,
                    types: list[int], now_ms: int, *, renew_enabled: bool = True) -> int:
        """Apply one AcknowledgementBatch: ``types`` has one type for the whole range or
        one per offset. Checks the whole batch first: all or nothing. RENEW (KIP-1222)
        restarts the acquisition lock of records the member holds (state and delivery count
        unchanged); with the GROUP config ``share.renew.acknowledge.enable=false`` it is
        INVALID_RECORD_STATE, as Kafka."""
        n = last_offset - first_offset + 1
        if n <= 0 or len(types) not in (1, n) or any(t not in (0, 1, 2, 3, 4) for t in types):
            return E.INVALID_REQUEST
        if not renew_enabled and AcknowledgeType.RENEW in types:
            return E.INVALID_RECORD_STATE
        self.expire_locks(now_ms)
        for off in range(first_offset, last_offset + 1):
            t = types[0] if len(types) == 1 else types[off - first_offset]
            r = self.in_flight.get(off)
            if r is None:
                if off < self.start_offset and t == AcknowledgeType.GAP:
                    continue
                return E.INVALID_RECORD_STATE
            if t == AcknowledgeType.GAP and r.state is RecordState.ARCHIVED:
                continue
            if r.state is not RecordState.ACQUIRED or r.member_id != member_id:
                return E.INVALID_RECORD_STATE
        for off in range(first_offset, last_offset + 1):
            t = types[0] if len(types) == 1 else types[off - first_offset]
            r = self.in_flight.get(off)
            if r is None or r.state is not RecordState.ACQUIRED:
                continue
            if t == AcknowledgeType.ACCEPT:
                self._settle(r, RecordState.ACKNOWLEDGED)
            elif t == AcknowledgeType.RELEASE:
                self._release(r, off)
            elif t == AcknowledgeType.RENEW:
                r.lock_deadline_ms = now_ms + self.lock_duration_ms
            else:                                      # reject, gap
                if t == AcknowledgeType.REJECT:
                    self.dead_letters.append((off, r.delivery_count, REJECTED))
                self._settle(r, RecordState.ARCHIVED)
        self._maybe_advance_start()
        return E.NONE

    def _settle(self, r: InFlight, state: RecordState) -> None:
        r.state = state
        r.member_id = None
        r.lock_deadline_ms = 0

    def _release(self, r: InFlight, off: int) -> None:
        if r.delivery_count >= self.delivery_count_limit:
            self.dead_letters.append((off, r.delivery_count, DELIVERY_LIMIT))
            self._settle(r, RecordState.ARCHIVED)
        else:
            self._settle(r, RecordState.AVAILABLE)

    def take_dead_letters(self) -> list[tuple[int, int, str]]:
        """The offsets archived for good (delivery count limit reached, or rejected) since the
        last call: (offset, delivery count, cause), in the order they were archived."""
        out, self.dead_letters = self.dead_letters, []
        return out

    def release_member(self, member_id: str) -> int:
        """The member left or its share session closed: its records are released."""
        n = 0
        for off, r in self.in_flight.items():
            if r.state is RecordState.ACQUIRED and r.member_id == member_id:
                self._release(r, off)
                n += 1
        self._maybe_advance_start()
        return n

    def expire_locks(self, now_ms: int) -> int:
        n = 0
        for off, r in self.in_flight.items():
            if r.state is RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms:
                self._release(r, off)
                n += 1
        if n:
            self._maybe_advance_start()
        return n

    def next_lock_deadline_ms(self) -> int | None:
        return min((r.lock_deadline_ms for r in self.in_flight.values()
                    if r.state is RecordState.ACQUIRED), default=None)

    # ------------------------------------------------------------------ offsets
    def _maybe_advance_start(self) -> None:
        while True:
            r = self.in_flight.get(self.start_offset)
            if r is None or r.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self.in_flight[self.start_offset]
            if self.start_offset >= self.written_start:
                self._retired[self.start_offset] = r
            self.start_offset += 1
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    def advance_start_to(self, log_start_offset: int) -> None:
        """Records before the log start offset are gone (retention, DeleteRecords): they
        can never be delivered, so the share-partition moves past them."""
        if log_start_offset <= self.start_offset:
            return
        for off in [o for o in self.in_flight if o < log_start_offset]:
            del self.in_flight[off]
        # records gone from the log are not written back: the next snapshot starts there
        self._retired = {o: r for o, r in self._retired.items() if o >= log_start_offset}
        self._write_start = max(self._write_start, log_start_offset)
        self.written_start = max(self.written_start, log_start_offset)
        self.start_offset = log_start_offset
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset
        self._maybe_advance_start()

    def reset_to(self, offset: int) -> None:
        """AlterShareGroupOffsets: start again at ``offset`` with nothing in flight."""
        self.in_flight.clear()
        self._retired.clear()
        self.start_offset = self.end_offset = offset
        self._write_start = self.written_start = offset
        self.written_complete = 0

    # ------------------------------------------------------------------ persistence
    def state_batches(self) -> list[StateBatch]:
        out: list[StateBatch] = []
        for off in sorted(self.in_flight):
            r = self.in_flight[off]
            st = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
            if out and out[-1].last_offset == off - 1 and out[-1].delivery_state == st \
                    and out[-1].delivery_count == r.delivery_count:
                out[-1] = StateBatch(out[-1].first_offset, off, int(st), r.delivery_count)
            else:
                out.append(StateBatch(off, off, int(st), r.delivery_count))
        return out

    def take_snapshot(self, *, advance: bool = True) -> tuple[int, list[StateBatch]]:
        """(start offset, state batches) to write now, one write behind as Kafka 4.4 (see
        the module docstring): the start offset from before the changes since the last
        advancing snapshot, the records settled since it stood there, then the records in
        flight. ``advance`` False (a write Kafka does not make: kbroker also persists
        acquisitions, so that delivery counts outlive a restart) repeats the start offset
        last written and moves nothing on. Remembers what it returned as
        ``written_start``/``written_complete``."""
        start = self._write_start if advance else self.written_start
        retired = sorted((o, r) for o, r in self._retired.items() if o >= start)
        out = _runs(retired)
        for b in self.state_batches():
            if out and out[-1].last_offset == b.first_offset - 1 \
                    and out[-1].delivery_state == b.delivery_state \
                    and out[-1].delivery_count == b.delivery_count:
                out[-1] = StateBatch(out[-1].first_offset, b.last_offset, b.delivery_state,
                                     b.delivery_count)
            else:
                out.append(b)
        if advance:
            self._retired = dict(retired)
            self._write_start = self.start_offset
        self.written_start = start
        self.written_complete = sum(b.last_offset - b.first_offset + 1 for b in out
                                    if b.delivery_state in (RecordState.ACKNOWLEDGED,
                                                            RecordState.ARCHIVED))
        return start, out

    @classmethod
    def from_state(cls, start_offset: int, batches: Iterable[StateBatch], **kw) -> "SharePartition":
        sp = cls(start_offset, **kw)
        for b in batches:
            st = RecordState(b.delivery_state)
            if st is RecordState.ACQUIRED:
                st = RecordState.AVAILABLE
            for off in range(max(b.first_offset, start_offset), b.last_offset + 1):
                sp.in_flight[off] = InFlight(st, b.delivery_count)
                sp.end_offset = max(sp.end_offset, off + 1)
        sp._maybe_advance_start()
        # what was read back is what the coordinator holds until the next write, which
        # carries the start offset moved past the settled records (Kafka's reload,
        # ``maybeInitialize``)
        sp.written_complete = len(sp._retired) + sum(
            1 for r in sp.in_flight.values()
            if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))
        sp._write_start = sp.start_offset
        return sp

    def statistics(self) -> dict:
        counts = {s.name.lower(): 0 for s in RecordState}
        for r in self.in_flight.values():
            counts[r.state.name.lower()] += 1
        return {"start_offset": self.start_offset, "end_offset": self.end_offset,
                "in_flight": len(self.in_flight), **counts}


def _runs(records: list[tuple[int, InFlight]]) -> list[StateBatch]:
    """Runs of neighbouring offsets with equal state and delivery count."""
    out: list[StateBatch] = []
    for off, r in records:
        st = int(RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state)
        if out and out[-1].last_offset == off - 1 and out[-1].delivery_state == st \
                and out[-1].delivery_count == r.delivery_count:
            out[-1] = StateBatch(out[-1].first_offset, off, st, r.delivery_count)
        else:
            out.append(StateBatch(off, off, st, r.delivery_count))
    return out


def _ranges(taken: list[tuple[int, int]]) -> list[AcquiredRange]:
    out: list[AcquiredRange] = []
    for off, dc in taken:
        if out and out[-1].last_offset == off - 1 and out[-1].delivery_count == dc:
            out[-1] = AcquiredRange(out[-1].first_offset, off, dc)
        else:
            out.append(AcquiredRange(off, off, dc))
    return out
