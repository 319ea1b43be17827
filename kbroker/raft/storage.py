"""The metadata quorum's durable state in ``<first log dir>/__cluster_metadata-0``.

Three things, laid out as Kafka lays out a KRaft replica:

- the log: v2 record batches in segments, written through the log store
  (``kbroker.log.PartitionLog``, ``flush.messages=1`` so every append is fsynced before
  ``append_entries`` returns); offsets are the ones the Raft core assigned — the store
  assigns ``log_end_offset`` and we check it matches, so disk mirrors the core's model;
- ``quorum-state``: Kafka's ``QuorumStateData`` as JSON (``leaderId``, ``leaderEpoch``,
  ``votedId``, ``currentVoters``, ``data_version``), replaced atomically (write, fsync,
  rename, fsync the directory) before any message of the same ``Ready`` goes out;
- snapshots: ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`` holding the
  snapshot's bytes (record batches of the image's records, see
  ``kbroker.metadata.snapshot``); only the newest is kept.

A storage error in any of them (the log's own writes, and the state and snapshot files
through ``PartitionLog.io_guard``) is reported to the log dir failure channel
(``kbroker.log.failure``): the metadata log's directory failing halts the broker with its
log-dir line, before the error reaches the driver.

Directory fsyncs: one per ``Ready`` at most. Every file of the three lives in the one
directory, and nothing of a ``Ready`` leaves before all of it is persisted, so the renames
and creations of one ``Ready`` -- the new ``quorum-state``, the log's epoch checkpoint
(``assign_epoch_start``: written by the log's ``flush``) and new segments -- are made durable
by one fsync of the directory, the log's (``PartitionLog.note_directory_change``), at its
flush or at ``sync_directory``, which the driver calls when the ``Ready`` is persisted. A
fresh node's first ``Ready`` (its own election, the epoch's ``LeaderChange``) so syncs
``__cluster_metadata-0`` once instead of three times.

``load()`` returns the core's ``StorageView``. The only I/O of the quorum lives here.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from kbroker.common.fileio import write_atomically

from .messages import Entry, OffsetAndEpoch
from .state import QuorumState, Snapshot, StorageView
from .wire_map import batches_to_entries, entries_to_batches

log = logging.getLogger("kbroker.raft")

QUORUM_STATE = "quorum-state"
SNAPSHOT_SUFFIX = ".checkpoint"
APPEND_RUN_BYTES = 1 << 20      # batches of one epoch written by one append, at most




class RaftStorage:
    """Durable log, quorum state and snapshots of one replica. ``log`` is the
    ``PartitionLog`` of ``__cluster_metadata-0`` (owned by the broker's LogManager)."""

    def __init__(self, log, voters, clock=None):
        self.log = log
        self.dir = Path(log.dir)
        self.voters = sorted(voters)
        self._clock = clock or (lambda: -1)
        self.stats = {"appends": 0, "entries_written": 0, "truncations": 0, "snapshots_written": 0,
                      "state_writes": 0}

    # ------------------------------------------------------------------ load
    def load(self) -> StorageView:
        return StorageView(quorum_state=self.read_quorum_state(), snapshot=self.latest_snapshot(),
                           entries=self.read_entries())

    def read_quorum_state(self) -> QuorumState:
        path = self.dir / QUORUM_STATE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return QuorumState()
        except (OSError, ValueError) as e:
            raise RuntimeError(f"cannot read {path}: {e}") from None
        return QuorumState(leader_id=int(data.get("leaderId", -1)),
                           leader_epoch=int(data.get("leaderEpoch", 0)),
                           voted_id=int(data.get("votedId", -1)))

    def read_entries(self) -> list[Entry]:
        out: list[Entry] = []
        for header, data in self.log.batches(self.log.log_start_offset):
            out.extend(batches_to_entries(data))
        return out

    def latest_snapshot(self) -> Snapshot | None:
        best = None
        for p in self.dir.glob("*" + SNAPSHOT_SUFFIX):
            sid = self._parse_snapshot_name(p.name)
            if sid is not None and (best is None or sid > best[0]):
                best = (sid, p)
        if best is None:
            return None
        return Snapshot(best[0], best[1].read_bytes())

    @staticmethod
    def _parse_snapshot_name(name: str) -> OffsetAndEpoch | None:
        stem = name[:-len(SNAPSHOT_SUFFIX)]
        off, dash, epoch = stem.partition("-")
        if not dash or not off.isdigit() or not epoch.isdigit():
            return None
        return OffsetAndEpoch(int(off), int(epoch))

    # ------------------------------------------------------------------ Ready steps
    def persist_state(self, qs: QuorumState) -> None:
        data = {"clusterId": "", "leaderId": qs.leader_id, "leaderEpoch": qs.leader_epoch,
                "votedId": qs.voted_id, "appliedOffset": 0,
                "currentVoters": [{"voterId": v} for v in self.voters], "data_version": 0}
        with self.log.io_guard("write quorum-state"):
            write_atomically(self.dir / QUORUM_STATE, json.dumps(data).encode(), sync_dir=False)
        self.log.note_directory_change()     # made durable with the Ready (sync_directory)
        self.stats["state_writes"] += 1

    def write_snapshot(self, snap: Snapshot) -> None:
        sid = snap.snapshot_id
        name = f"{sid.end_offset:020d}-{sid.epoch:010d}{SNAPSHOT_SUFFIX}"
        with self.log.io_guard("write a snapshot"):
            write_atomically(self.dir / name, snap.data)
            for p in self.dir.glob("*" + SNAPSHOT_SUFFIX):
                if p.name != name:
                    other = self._parse_snapshot_name(p.name)
                    if other is not None and other < sid:
                        p.unlink(missing_ok=True)
        self.stats["snapshots_written"] += 1

    def reset_to(self, offset: int) -> None:
        self.log.truncate_fully_and_start_at(offset)
        self.log.flush()

    def truncate_to(self, offset: int, model) -> None:
        """Drop records at ``offset`` and after. The store cuts at batch boundaries, so a
        cut inside a batch is completed by re-writing the entries in between from the
        core's in-memory log (``model``, a ``RaftLog``)."""
        self.stats["truncations"] += 1
        self.log.truncate_to(offset)
        end = self.log.log_end_offset
        if end < offset:
            self.append_entries(model.entries(end, offset))
        self.log.flush()

    def append_entries(self, entries: list[Entry]) -> None:
        if not entries:
            return
        end = self.log.log_end_offset
        if entries[0].offset != end:
            raise RuntimeError(f"metadata log ends at {end}, core appends at {entries[0].offset}")
        buf = entries_to_batches(entries, self._clock())
        pos = 0
        view = memoryview(buf)
        from kbroker.wire import records as rb
        while pos < len(buf):
            # One append (and so one fsync: flush.messages=1) per run of batches of one
            # partition leader epoch -- the store stamps the epoch it is given on each batch --
            # of at most APPEND_RUN_BYTES: a leader's epoch start with the bootstrap records,
            # a control batch and a data batch, is one write.
            first = rb.parse_header(view, pos)
            end = pos + first.size
            while end < len(buf):
                h = rb.parse_header(view, end)
                if (h.partition_leader_epoch != first.partition_leader_epoch
                        or end + h.size - pos > APPEND_RUN_BYTES):
                    break
                end += h.size
            # a new epoch's entry goes to the checkpoint at the append's flush, its rename
            # synced with the directory's other changes (not by a write of its own)
            if first.partition_leader_epoch >= 0:
                self.log.assign_epoch_start(first.partition_leader_epoch, first.base_offset)
            self.log.append(view[pos:end], leader_epoch=first.partition_leader_epoch)
            pos = end
        self.log.flush()   # flush.messages=1 already did; cheap when nothing is dirty
        self.log.high_watermark = self.log.log_end_offset
        self.stats["appends"] += 1
        self.stats["entries_written"] += len(entries)

    def sync_directory(self) -> None:
        """The end of a ``Ready``'s persisting: the directory entries it changed (a new
        ``quorum-state`` not followed by a log flush) are made durable before anything of it
        is sent."""
        self.log.sync_directory()

    def delete_before(self, offset: int) -> None:
        """A snapshot covers everything below ``offset``: whole segments below it may go."""
        try:
            if offset > self.log.log_start_offset:
                self.log.delete_records_before(offset)
        except Exception:   # noqa: BLE001 - only an optimisation
            log.debug("could not trim the metadata log below %d", offset, exc_info=True)

    def statistics(self) -> dict:
        return dict(self.stats, log_end_offset=self.log.log_end_offset,
                    log_start_offset=self.log.log_start_offset)
