"""In-memory model of the replicated log as the Raft core reasons about it.

``RaftLog`` holds the records after the latest snapshot, an epoch index (Kafka's
``LeaderEpochFileCache``: the first offset of every epoch present), and ``durable_end`` — the
end of the prefix the driver has confirmed persisted and that still agrees with memory. The
driver's real log store mirrors this model by applying each ``Ready`` (see ``core``); the core
never reads the disk.

Rules kept:
- offsets are contiguous from ``start_offset`` (the snapshot's end offset, or 0);
- epochs never decrease along the log;
- truncation never enters the snapshot (the core asserts it never goes below the high
  watermark either).
"""
from __future__ import annotations

import bisect
import enum
from typing import Iterable

from .messages import Entry, OffsetAndEpoch
from .state import Snapshot


class FetchValidation(enum.Enum):
    VALID = "valid"
    DIVERGING = "diverging"
    SNAPSHOT = "snapshot"


def joined_to_next(e: Entry) -> bool:
    """``e`` is written in one batch with the entry after it (a KRaftVersionRecord, control
    type 5, always precedes the VotersRecord of the same change)."""
    return e.control and e.control_type == 5


class RaftLog:
    """Records ``[start_offset, end_offset)`` plus the latest snapshot (covering everything
    below ``start_offset``)."""

    def __init__(self, snapshot: Snapshot | None = None, entries: Iterable[Entry] = ()) -> None:
        self.snapshot = snapshot
        self.start_offset = snapshot.snapshot_id.end_offset if snapshot else 0
        self._entries: list[Entry] = []
        # Set when the stored records could not be used as they are (a crash between writing
        # a snapshot and resetting/compacting the log): the driver must rewrite the log.
        self.inconsistent_on_load = False
        stored_end = None
        for e in entries:
            stored_end = e.offset + 1
            if e.offset < self.start_offset:
                continue  # a crash between writing the snapshot and deleting the prefix
            if e.offset != self.end_offset or (snapshot is not None and e.epoch < snapshot.snapshot_id.epoch):
                # the records do not continue the snapshot: they are an uncommitted tail that
                # the leader will send again; start from the snapshot alone
                if not self._entries:
                    self.inconsistent_on_load = True
                    break
                raise ValueError(f"log not contiguous at {e.offset}, expected {self.end_offset}")
            self._entries.append(e)
        if not self._entries and stored_end is not None and stored_end < self.start_offset:
            # every stored record lies below a snapshot that ends past them (a crash while a
            # fetched snapshot was installed, before the log was reset): appends would leave a
            # gap, so the driver must reset the log to the snapshot's end first (soak seed 2437
            # of the dynamic profile)
            self.inconsistent_on_load = True
        self._rebuild_epochs()
        self.durable_end = self.end_offset

    # --- queries ------------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        return self.start_offset + len(self._entries)

    @property
    def last_epoch(self) -> int:
        if self._entries:
            return self._entries[-1].epoch
        return self.snapshot.snapshot_id.epoch if self.snapshot else 0

    def last_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.end_offset, self.last_epoch)

    def entry(self, offset: int) -> Entry:
        return self._entries[offset - self.start_offset]

    def epoch_before(self, offset: int) -> int:
        """Epoch of the record at ``offset - 1`` (the snapshot's epoch at the start)."""
        if offset == self.start_offset:
            return self.snapshot.snapshot_id.epoch if self.snapshot else 0
        return self._entries[offset - 1 - self.start_offset].epoch

    def entries(self, start: int, end: int) -> list[Entry]:
        s = max(start, self.start_offset) - self.start_offset
        return self._entries[s:max(s, end - self.start_offset)]

    def read(self, start: int, end: int, max_bytes: int) -> tuple[Entry, ...]:
        """Records from ``start`` below ``end``; at least one if any, then up to ``max_bytes``.
        A ``KRaftVersionRecord`` is never the last one returned: it and the ``VotersRecord``
        after it are one control batch in Kafka's log (an upgrade, KIP-853), which replicas
        receive, and so commit, whole."""
        out: list[Entry] = []
        size = 0
        stop = min(end, self.end_offset)
        for off in range(start, stop):
            e = self._entries[off - self.start_offset]
            size += e.size
            if out and size > max_bytes and not joined_to_next(out[-1]):
                break
            out.append(e)
        while out and joined_to_next(out[-1]):
            out.pop()            # its partner is not readable yet
        return tuple(out)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= ``epoch`` present here and the offset where it ends
        (Kafka's ``endOffsetForEpoch``)."""
        last = self.last_epoch
        if epoch >= last or not self._epochs:
            return OffsetAndEpoch(self.end_offset, last)
        i = bisect.bisect_right(self._epoch_keys, epoch) - 1
        if i < 0:
            return OffsetAndEpoch(self._epochs[0][1], epoch)
        return OffsetAndEpoch(self._epochs[i + 1][1], self._epochs[i][0])

    def validate_fetch(self, fetch_offset: int, last_fetched_epoch: int
                       ) -> tuple[FetchValidation, OffsetAndEpoch | None]:
        """Leader side: does a follower whose log ends at ``fetch_offset`` with
        ``last_fetched_epoch`` agree with this log? (Kafka's ``validateOffsetAndEpoch``.)"""
        snap = self.snapshot
        if snap is not None:
            sid = snap.snapshot_id
            if (fetch_offset < self.start_offset
                    or (fetch_offset == self.start_offset and last_fetched_epoch != sid.epoch)
                    or last_fetched_epoch < sid.epoch):
                return FetchValidation.SNAPSHOT, sid
        ends = self.end_offset_for_epoch(last_fetched_epoch)
        if ends.epoch != last_fetched_epoch or fetch_offset > ends.end_offset:
            return FetchValidation.DIVERGING, ends
        return FetchValidation.VALID, None

    def truncation_point(self, diverging: OffsetAndEpoch) -> int:
        """Follower side: where to cut after the leader reported ``diverging``."""
        own = self.end_offset_for_epoch(diverging.epoch)
        return min(diverging.end_offset, own.end_offset)

    # --- mutations (the core mirrors each one into the next Ready) -----------------------

    def append(self, entry: Entry) -> None:
        if entry.offset != self.end_offset:
            raise ValueError(f"append at {entry.offset}, log ends at {self.end_offset}")
        if entry.epoch < self.last_epoch:
            raise ValueError(f"epoch {entry.epoch} after {self.last_epoch}")
        if not self._epochs or self._epochs[-1][0] != entry.epoch:
            self._epochs.append((entry.epoch, entry.offset))
            self._epoch_keys.append(entry.epoch)
        self._entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        if offset < self.start_offset:
            raise ValueError(f"truncation to {offset} would enter the snapshot ending at {self.start_offset}")
        if offset >= self.end_offset:
            return
        del self._entries[offset - self.start_offset:]
        while self._epochs and self._epochs[-1][1] >= offset:
            self._epochs.pop()
            self._epoch_keys.pop()
        if not self._epochs and self.snapshot is not None:
            self._epochs.append((self.snapshot.snapshot_id.epoch, self.start_offset))
            self._epoch_keys.append(self.snapshot.snapshot_id.epoch)
        self.durable_end = min(self.durable_end, offset)

    def compact(self, snapshot: Snapshot) -> None:
        """A local snapshot now covers everything below its end offset: drop that prefix."""
        end = snapshot.snapshot_id.end_offset
        if not (self.start_offset <= end <= self.end_offset):
            raise ValueError(f"snapshot end {end} outside [{self.start_offset}, {self.end_offset}]")
        del self._entries[:end - self.start_offset]
        self.start_offset = end
        self.snapshot = snapshot
        self._rebuild_epochs()

    def install(self, snapshot: Snapshot) -> None:
        """A snapshot fetched from the leader replaces the whole log."""
        self._entries = []
        self.snapshot = snapshot
        self.start_offset = snapshot.snapshot_id.end_offset
        self.durable_end = self.start_offset
        self._rebuild_epochs()

    def _rebuild_epochs(self) -> None:
        self._epochs: list[tuple[int, int]] = []
        if self.snapshot is not None:
            self._epochs.append((self.snapshot.snapshot_id.epoch, self.start_offset))
        for e in self._entries:
            if not self._epochs or self._epochs[-1][0] != e.epoch:
                self._epochs.append((e.epoch, e.offset))
        self._epoch_keys = [ep for ep, _ in self._epochs]

    def statistics(self) -> dict:
        return {"log_start_offset": self.start_offset, "log_end_offset": self.end_offset,
                "durable_end_offset": self.durable_end, "last_epoch": self.last_epoch,
                "epochs": len(self._epochs),
                "snapshot_end_offset": self.snapshot.snapshot_id.end_offset if self.snapshot else None}
