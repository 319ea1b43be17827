"""``LeaderEpochCache``: which leader epoch wrote which offsets of one partition.

Kafka's leader-epoch cache (KIP-101, KIP-279): an ordered list of ``(epoch, start
offset)`` entries, one per leader epoch that appended to the log; epoch ``e`` covers
``[start(e), start(next epoch))`` and the latest epoch runs to the log end.  A follower
asks the leader for the end offset of its own latest epoch (OffsetForLeaderEpoch) and
truncates to it; consumers use the same answer to detect log truncation.

On disk: ``leader-epoch-checkpoint`` in the partition directory, Kafka's text format::

    0                 <- format version
    2                 <- number of entries
    3 0               <- epoch, start offset
    5 1200

Rules kept here
* entries are strictly increasing in both epoch and start offset;
* every change is written at once, atomically (``<name>.tmp``, fsync, rename, fsync of
  the directory) unless the caller defers it (``write=False``, then :meth:`write`, or
  :meth:`defer`, then :meth:`sync`: ``PartitionLog`` defers a new leader's epoch start and
  syncs before its recovery point passes data of that epoch);
* the file may claim offsets the log lost in a crash (it can be written before the data
  is fsynced): the owner (``PartitionLog``) drops entries at or after the recovered log
  end when it opens the log, and rebuilds the cache from batch headers when the file is
  missing or unreadable (``loaded`` is False then);
* so only the entries starting below the log end offset of a flush need to be durable:
  :meth:`sync` with ``below`` writes nothing when the file already holds those (the
  entries at or past it -- a leader's epoch begun at the log end, what every restart of
  a partition without new data leaves -- are dropped by the next load, and a crash's
  recovery re-reads the epochs of the batches past the recovery point from the batches
  themselves). A clean stop of 100,000 such partitions then replaces no file.

Nothing here reads the clock or the log; ``PartitionLog`` owns one cache per partition.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, NamedTuple

from kbroker.common.fileio import as_path, read_bytes, write_atomically

FILE_NAME = "leader-epoch-checkpoint"
_VERSION = 0

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class CorruptEpochCheckpoint(ValueError):
    """The checkpoint file does not parse (the owner rebuilds the cache from the log)."""


def read_epoch_file(path: Path) -> list[EpochEntry] | None:
    """Entries of a checkpoint file; ``None`` when it does not exist.

    Raises :class:`CorruptEpochCheckpoint` for a malformed file, including one whose
    entries are not increasing (a file this module never writes).
    """
    try:
        text = read_bytes(path).decode()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptEpochCheckpoint(f"{path}: {exc}") from exc
    lines = text.splitlines()
    try:
        if len(lines) < 2 or int(lines[0]) != _VERSION:
            raise CorruptEpochCheckpoint(f"{path}: bad header")
        count = int(lines[1])
        if count < 0 or len(lines) - 2 != count:
            raise CorruptEpochCheckpoint(f"{path}: {count} entries announced, {len(lines) - 2} present")
        out: list[EpochEntry] = []
        for line in lines[2:]:
            parts = line.split()
            if len(parts) != 2:
                raise CorruptEpochCheckpoint(f"{path}: bad entry {line!r}")
            entry = EpochEntry(int(parts[0]), int(parts[1]))
            if entry.epoch < 0 or entry.start_offset < 0 or (
                    out and (entry.epoch <= out[-1].epoch or entry.start_offset <= out[-1].start_offset)):
                raise CorruptEpochCheckpoint(f"{path}: entry {line!r} out of order")
            out.append(entry)
    except ValueError as exc:
        if isinstance(exc, CorruptEpochCheckpoint):
            raise
        raise CorruptEpochCheckpoint(f"{path}: {exc}") from exc
    return out


def write_epoch_file(path: Path, entries: Iterable[EpochEntry], *, sync: bool = True,
                     bulk=None, sync_dir: bool = True) -> None:
    """Replace the file atomically; ``sync`` also makes it durable before returning (with
    ``bulk``, a ``BulkSync``: at its commit, the rename with it; ``sync_dir=False``: all
    but the rename, whose directory fsync the caller makes)."""
    entries = list(entries)
    body = "%d\n%d\n" % (_VERSION, len(entries)) + "".join(f"{e} {o}\n" for e, o in entries)
    write_atomically(path, body.encode(), sync=sync, bulk=bulk, sync_dir=sync_dir)


class LeaderEpochCache:
    """The ``(epoch, start offset)`` entries of one partition, persisted in its directory.

    ``directory=None`` keeps the cache in memory only (tests, tools).  Opening reads the
    file; ``loaded`` says whether a readable file was found (missing or corrupt: the cache
    starts empty and the owner rebuilds it).  Not thread-safe: one trio thread drives it.
    """

    def __init__(self, directory: Path | None, *, listed: bool | None = None):
        """``listed``: whether the directory's listing holds the file (False: it is not
        read; None: not known, it is read if it exists)."""
        self.path = as_path(directory) / FILE_NAME if directory is not None else None
        self._entries: list[EpochEntry] = []
        self.loaded = False
        self.unsynced = False
        self.writes = 0
        self.skipped = 0            # syncs that found the file holding what it must
        # what the file durably holds (read at open, or last written and synced; no file
        # holds nothing: the owner rebuilds from the batches, which then have no epoch
        # below the offset a skipped sync names); None: unknown (an unreadable file, or one
        # written without a sync), so the next sync writes
        self._durable: list[EpochEntry] | None = None
        if self.path is not None:
            try:
                found = read_epoch_file(self.path) if listed is not False else None
            except CorruptEpochCheckpoint:
                found = None
            else:
                self._durable = list(found) if found is not None else []
            if found is not None:
                self._entries = found
                self.loaded = True

    # -- queries ------------------------------------------------------------------------
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int:
        """The newest epoch that has an entry, -1 when there is none."""
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` answering OffsetForLeaderEpoch for ``requested_epoch``.

        Kafka's rules: an undefined request, or one above every known epoch, gets
        ``(-1, -1)``; the latest epoch ends at ``log_end_offset``; an epoch below every
        known one gets itself and the first known start offset; otherwise the largest
        known epoch <= the request and the start offset of the next higher epoch.
        """
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries and entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = next((i for i, e in enumerate(entries) if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, entries[0].start_offset
        return entries[higher - 1].epoch, entries[higher].start_offset

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range holds ``offset``; -1 when it lies before every entry."""
        found = UNDEFINED_EPOCH
        for epoch, start in self._entries:
            if start > offset:
                break
            found = epoch
        return found

    # -- changes ------------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int, *, write: bool = True) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; returns whether anything changed.

        As Kafka's: nothing happens when ``epoch`` is already the latest epoch and starts
        at or before ``start_offset``.  Otherwise every entry that would break
        monotonicity (an epoch >= ``epoch`` or a start >= ``start_offset``, scanning back
        from the newest) is replaced by the new entry -- this is how a re-elected leader's
        entry at a lower offset wins over a stale one.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        entries = self._entries
        if entries:
            last = entries[-1]
            if last.epoch == epoch and start_offset >= last.start_offset:
                return False
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        if write:
            self.write()
        return True

    def truncate_from_end(self, end_offset: int, *, write: bool = True) -> bool:
        """Drop every entry starting at or after ``end_offset`` (the log was cut there)."""
        entries = self._entries
        if end_offset < 0 or not entries or entries[-1].start_offset < end_offset:
            return False
        while entries and entries[-1].start_offset >= end_offset:
            entries.pop()
        if write:
            self.write()
        return True

    def truncate_from_start(self, start_offset: int, *, write: bool = True) -> bool:
        """The log now starts at ``start_offset``: the entries wholly before it go and the
        last one starting at or before it is moved to start exactly there."""
        entries = self._entries
        n = 0
        while n < len(entries) and entries[n].start_offset <= start_offset:
            n += 1
        if n == 0 or (n == 1 and entries[0].start_offset == start_offset):
            return False
        keep = EpochEntry(entries[n - 1].epoch, start_offset)
        entries[:n] = [keep]
        if write:
            self.write()
        return True

    def clear(self, *, write: bool = True) -> bool:
        if not self._entries:
            return False
        self._entries.clear()
        if write:
            self.write()
        return True

    def replace(self, entries: Iterable[EpochEntry], *, write: bool = True) -> None:
        """Set all entries at once (a rebuild from the log); they must be increasing."""
        new: list[EpochEntry] = []
        for e in entries:
            e = EpochEntry(*e)
            if new and (e.epoch <= new[-1].epoch or e.start_offset <= new[-1].start_offset):
                raise ValueError(f"entries not increasing at {e}")
            new.append(e)
        self._entries = new
        if write:
            self.write()

    def write(self, *, sync: bool = True) -> None:
        """Write the file now (a no-op for an in-memory cache). Without ``sync`` the file
        is written but not fsynced; ``unsynced`` then stays set until :meth:`sync`."""
        if self.path is None:
            return
        write_epoch_file(self.path, self._entries, sync=sync)
        self.writes += 1
        self.loaded = True
        self.unsynced = not sync
        self._durable = list(self._entries) if sync else None

    def defer(self) -> None:
        """The entries changed but the file is left for :meth:`sync` to write."""
        if self.path is not None:
            self.unsynced = True

    def sync(self, *, bulk=None, sync_dir: bool = True, below: int | None = None) -> bool:
        """Write and fsync what :meth:`defer` or an unsynced :meth:`write` left (the log
        calls it before it moves its recovery point, so the epochs of fsynced data are never
        lost to a crash); whether it wrote. With ``bulk`` (a ``BulkSync``, a clean stop) the
        file is written and its sync and rename left to the bulk's commit; ``sync_dir=False``
        leaves the directory's fsync (the rename's durability) to the caller.

        ``below``: the offset the data is made durable up to (the log end): when the file
        durably holds every entry starting below it already, nothing is written (module
        docstring) and the change stays pending for a later sync."""
        if self.path is None or not self.unsynced:
            return False
        if below is not None and self._durable is not None \
                and _starting_below(self._entries, below) == _starting_below(self._durable, below):
            self.skipped += 1
            return False
        write_epoch_file(self.path, self._entries, sync=True, bulk=bulk, sync_dir=sync_dir)
        self.writes += 1
        self.loaded = True
        self.unsynced = False
        self._durable = list(self._entries)
        return True

    def statistics(self) -> dict:
        return {"entries": len(self._entries), "latest_epoch": self.latest_epoch,
                "writes": self.writes, "syncs_skipped": self.skipped}


def _starting_below(entries: list[EpochEntry], offset: int) -> list[EpochEntry]:
    """The leading entries of ``entries`` that start below ``offset`` (they are ordered)."""
    n = len(entries)
    while n and entries[n - 1].start_offset >= offset:
        n -= 1
    return entries[:n]
