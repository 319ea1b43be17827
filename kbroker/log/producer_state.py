"""Per-partition producer state: idempotence (KIP-98) and the transactions open in a log.

One :class:`ProducerStateManager` belongs to each ``PartitionLog`` (Kafka's
``ProducerStateManager`` / ``ProducerAppendInfo`` / ``ProducerStateEntry``). It knows, for
every producer id that wrote to the partition:

- the producer epoch and the metadata of its last five batches (sequence range, offsets,
  timestamp), so a retried batch is recognised as a duplicate and answered with its
  original offsets, and a sequence gap is refused;
- the first offset of its open transaction, if any: the earliest of these is the partition's
  *first unstable offset*, which bounds the last stable offset (read_committed);
- the coordinator epoch of the last transaction marker (zombie coordinators are fenced).

Rules kept (client-origin appends, :meth:`check_append`):

- a batch whose epoch and sequence range equal one of the cached batches is a duplicate;
- an epoch below the current one is ``INVALID_PRODUCER_EPOCH`` (KIP-588);
- a new epoch must start at sequence 0 unless the producer is unknown here; within an
  epoch the first sequence must follow the last one (int32 wrap to 0 allowed), else
  ``OUT_OF_ORDER_SEQUENCE_NUMBER``. An unknown producer (no state: new, or its data
  gone by retention/DeleteRecords) is accepted at any sequence, as Kafka ≥ 2.5 does
  (KIP-360), so ``UNKNOWN_PRODUCER_ID`` is never answered for produce;
- a non-transactional batch while the producer has a transaction open is
  ``INVALID_TXN_STATE``.
A batch that follows the producer's last one in the same epoch (the every-batch case of an
idempotent producer) is accepted without looking for a duplicate: the cached batches all
end at or before that sequence, so none can have the same range (issue 32).
Coordinator-origin appends (transactional offset commits, markers) check the epoch only.

Verification guards (KIP-890 part 1, Kafka's ``VerificationStateEntry``): before a
producer's first transactional batch on the partition is verified with its transaction
coordinator, :meth:`start_verification` hands out a unique guard object; any transactional
batch or marker of that producer stored afterwards clears it (:meth:`append`), so a
verification answered before an abort marker cannot admit a batch after it (the ABA race
the guard exists for). In memory only, like Kafka's.

Snapshots: ``<offset>.snapshot`` in the partition directory (20-digit offset, like
segments) holds the state of every producer after all batches below ``offset``. The
layout is Kafka's version 1 producer snapshot, big-endian::

    int16 version (1) | uint32 crc32c of everything after it | int32 count |
    count × (int64 producer_id, int16 epoch, int32 last_sequence, int64 last_offset,
             int32 offset_delta, int64 timestamp, int32 coordinator_epoch,
             int64 current_txn_first_offset)

Like Kafka only the newest batch of each producer is in a snapshot; the log replayed from
the snapshot forward restores the rest. Unlike Kafka, the batches just below a snapshot are
read back too (:meth:`restore_earlier_batches`): after a clean restart Kafka knows only each
producer's newest batch, so a retry of an older one still in flight (a leader that stopped
before answering) is refused as OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka answers with
a fatal error or an epoch bump that stores the batch twice; kbroker answers it as the
duplicate it is. Files are written to ``.tmp``, fsynced and renamed,
so a crash leaves either the old set or the new one.

Expiration (Kafka's ``removeExpiredProducers``, KIP-854): a producer with no open
transaction whose newest batch or marker is ``producer.id.expiration.ms`` old (by the batch's
max timestamp, as Kafka's ``lastTimestamp``) is forgotten by :meth:`remove_expired`; a
producer with an open transaction is kept, however idle. A snapshot is filtered the same way
when loaded. :mod:`kbroker.log.producer_expiry` calls it for the node; ``on_producers`` (when
given) is called each time the state gains a producer (or a verification guard) while
empty, so that sweep visits only the partitions that have producers.

Pure state plus snapshot file I/O; no clock (timestamps come with the batches) and no trio.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

from kbroker.wire.crc import crc32c

from kbroker.common.fileio import as_path, write_atomically
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire.records import ATTR_CONTROL as _ATTR_CONTROL
from kbroker.wire.records import ATTR_TRANSACTIONAL as _ATTR_TRANSACTIONAL

NUM_BATCHES_TO_RETAIN = 5
NO_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = (1 << 31) - 1
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_new_tuple = tuple.__new__

_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


class ProducerStateError(Exception):
    """A batch refused by the producer-state rules; ``error_code`` is Kafka's answer."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = int(error_code)
        self.message = message


class CorruptSnapshot(Exception):
    pass


class BatchMetadata(NamedTuple):
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        if self.last_seq == NO_SEQUENCE:
            return NO_SEQUENCE
        return _decrement(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int          # offset of the marker
    is_aborted: bool


def _decrement(seq: int, n: int) -> int:
    return seq - n if seq >= n else INT32_MAX - (n - seq) + 1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class VerificationGuard:
    """One verification of a producer's transaction on one partition; compared by
    identity (a new verification is a new object). ``created_ms`` (when known) lets an
    unused guard expire with the producers (Kafka's ``VerificationStateEntry`` timestamp)."""
    __slots__ = ("producer_id", "producer_epoch", "created_ms")

    def __init__(self, producer_id: int, producer_epoch: int, created_ms: int | None = None):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.created_ms = created_ms

    def __repr__(self) -> str:
        return f"VerificationGuard(pid={self.producer_id}, epoch={self.producer_epoch}, id={id(self):#x})"


@dataclass(slots=True)
class ProducerStateEntry:
    """One producer's state in one partition. ``batches`` is a tuple of at most
    ``NUM_BATCHES_TO_RETAIN`` :class:`BatchMetadata`, oldest first (issue 32: a slotted
    entry with a tuple is ~0.3 KiB; the dict and the empty 5-slot deque of before were
    ~1 KiB per producer and partition, most of it the deque's 64-slot block)."""
    producer_id: int
    producer_epoch: int = NO_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: tuple = ()

    def add_batch(self, meta: BatchMetadata) -> None:
        """The newest batch; the oldest is forgotten beyond the last five."""
        kept = self.batches
        if len(kept) >= NUM_BATCHES_TO_RETAIN:
            kept = kept[1 - NUM_BATCHES_TO_RETAIN:]
        self.batches = (*kept, meta)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def maybe_update_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches = ()
            self.producer_epoch = epoch

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch or first_seq == NO_SEQUENCE:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None


class ProducerStateManager:
    """The producers of one partition. Owned by its ``PartitionLog``, which calls
    :meth:`append` for every stored batch (in offset order) and takes snapshots."""

    def __init__(self, directory: Path | None, *, expiration_ms: int = 86_400_000,
                 settings=None, on_producers: Callable[[], None] | None = None):
        self.dir = as_path(directory) if directory is not None else None
        # producer.id.expiration.ms: ``settings.expiration_ms`` when shared by the node's
        # logs (kbroker.log.producer_expiry.ProducerExpiry: a dynamic change reaches all)
        self._expiration_ms = expiration_ms
        self.settings = settings
        self.on_producers = on_producers    # the state gains a producer or guard while empty
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing: dict[int, int] = {}      # first offset of an open txn -> producer id
        self.map_end_offset = 0                # state reflects every batch below this offset
        self.verifications: dict[int, VerificationGuard] = {}   # producer id -> its guard

    @property
    def expiration_ms(self) -> int:
        return self.settings.expiration_ms if self.settings is not None else self._expiration_ms

    @expiration_ms.setter
    def expiration_ms(self, value: int) -> None:
        self._expiration_ms = value

    # ------------------------------------------------------------------ queries
    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def has_ongoing(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        """The producer has an open transaction here (at ``producer_epoch`` when given: with
        transaction version 2 a batch of the next epoch belongs to the next transaction,
        which must be verified/added even while the marker of the previous one is on its
        way -- Kafka's ``hasOngoingTransaction(producerId, producerEpoch)``)."""
        e = self.producers.get(producer_id)
        return e is not None and e.current_txn_first_offset is not None and \
            (producer_epoch is None or e.producer_epoch == producer_epoch)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing) if self.ongoing else None

    # ------------------------------------------------------------------ verification
    def start_verification(self, producer_id: int, producer_epoch: int,
                           now_ms: int | None = None) -> "VerificationGuard":
        """The producer's guard, created if it has none (a newer epoch replaces it)."""
        g = self.verifications.get(producer_id)
        if g is None or producer_epoch > g.producer_epoch:
            if not self.producers and not self.verifications and self.on_producers is not None:
                self.on_producers()
            g = self.verifications[producer_id] = VerificationGuard(producer_id, producer_epoch, now_ms)
        return g

    def verification_guard(self, producer_id: int) -> "VerificationGuard | None":
        return self.verifications.get(producer_id)

    # ------------------------------------------------------------------ validation
    def check_append(self, header, *, client: bool = True) -> BatchMetadata | None:
        """Validate a data batch about to be appended. Returns the cached metadata when it
        is a duplicate of one of the producer's last batches (nothing must be written),
        ``None`` when it may be appended; raises :class:`ProducerStateError`."""
        pid, epoch = header.producer_id, header.producer_epoch
        e = self.producers.get(pid)
        if client and e is not None:
            batches = e.batches
            if batches and epoch == e.producer_epoch:
                # the common case, first (issue 32: the Java producer's acks=all rows): the
                # batch follows the producer's last one. Every cached batch ends at or
                # before that one's sequence, so none can be the same range: no duplicate
                # to look for, and no gap
                last_seq = batches[-1].last_seq
                first_seq = header.base_sequence
                if first_seq == last_seq + 1 or (first_seq == 0 and last_seq == INT32_MAX):
                    if e.current_txn_first_offset is not None and \
                            not header.attributes & _ATTR_TRANSACTIONAL:
                        raise ProducerStateError(
                            ErrorCode.INVALID_TXN_STATE,
                            f"producer {pid} wrote a non-transactional batch inside a transaction")
                    return None
            dup = e.find_duplicate(epoch, header.base_sequence, header.last_sequence)
            if dup is not None:
                return dup
        cur_epoch = e.producer_epoch if e is not None else NO_EPOCH
        if epoch < cur_epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {pid} epoch {epoch} is older than the current epoch {cur_epoch}")
        if client:
            first_seq = header.base_sequence
            if epoch != cur_epoch:
                if first_seq != 0 and cur_epoch != NO_EPOCH:
                    raise ProducerStateError(
                        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                        f"producer {pid}: new epoch {epoch} must start at sequence 0, not {first_seq}")
            elif not _in_sequence(e.last_seq, first_seq):
                raise ProducerStateError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {pid}: sequence {first_seq} does not follow {e.last_seq}")
        if e is not None and e.current_txn_first_offset is not None and not header.is_transactional:
            raise ProducerStateError(
                ErrorCode.INVALID_TXN_STATE,
                f"producer {pid} wrote a non-transactional batch inside a transaction")
        return None

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """A transaction marker from the coordinator: the epoch may not go back, nor the
        coordinator epoch (a zombie coordinator)."""
        e = self.producers.get(producer_id)
        if e is None:
            return
        if producer_epoch < e.producer_epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"marker epoch {producer_epoch} older than {e.producer_epoch} for producer {producer_id}")
        if coordinator_epoch < e.coordinator_epoch:
            raise ProducerStateError(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"coordinator epoch {coordinator_epoch} older than {e.coordinator_epoch}")

    # ------------------------------------------------------------------ update
    def append(self, header, marker: tuple[bool, int] | None = None) -> CompletedTxn | None:
        """Record a stored batch (offsets assigned). ``marker`` is ``(is_commit,
        coordinator_epoch)`` for a transaction marker. Returns the transaction a marker
        completed, if it had data here."""
        end = header.base_offset + header.last_offset_delta + 1
        if end > self.map_end_offset:
            self.map_end_offset = end
        pid = header.producer_id
        if pid < 0:
            return None
        attributes = header.attributes
        if attributes & (_ATTR_TRANSACTIONAL | _ATTR_CONTROL):
            # the transaction began here (first offset known) or ended: the guard is spent
            self.verifications.pop(pid, None)
        e = self.producers.get(pid)
        if e is None:
            if not self.producers and self.on_producers is not None:
                self.on_producers()
            e = self.producers[pid] = ProducerStateEntry(pid)
        if attributes & _ATTR_CONTROL:
            if marker is None:
                return None
            commit, coordinator_epoch = marker
            completed = None
            first = e.current_txn_first_offset
            if first is not None:
                completed = CompletedTxn(pid, first, header.base_offset, not commit)
                self.ongoing.pop(first, None)
            e.maybe_update_epoch(header.producer_epoch)
            e.coordinator_epoch = coordinator_epoch
            e.current_txn_first_offset = None
            e.last_timestamp = header.max_timestamp
            return completed
        # a data batch (once per stored batch of every idempotent producer): the header's
        # fields are read once, the cached batches replaced in one step
        epoch, base, delta = header.producer_epoch, header.base_offset, header.last_offset_delta
        kept = e.batches if epoch == e.producer_epoch else ()
        e.producer_epoch = epoch
        if len(kept) >= NUM_BATCHES_TO_RETAIN:
            kept = kept[1 - NUM_BATCHES_TO_RETAIN:]
        seq = header.base_sequence
        if seq != NO_SEQUENCE:
            seq = seq + delta if seq <= INT32_MAX - delta else seq + delta - INT32_MAX - 1
        # (tuple.__new__: the namedtuple's own __new__ is a Python-level call)
        meta = _new_tuple(BatchMetadata, (seq, base + delta, delta, header.max_timestamp))
        e.batches = (*kept, meta)
        e.last_timestamp = header.max_timestamp
        if attributes & _ATTR_TRANSACTIONAL and e.current_txn_first_offset is None:
            e.current_txn_first_offset = base
            self.ongoing[base] = pid
        return None

    def restore_earlier_batches(self, headers: Iterable) -> int:
        """Put back the batches a snapshot does not hold: ``headers`` are stored data
        batches (offset order) from just below the snapshot's offset. Each producer known
        here with a single cached batch gets the batches of its current epoch that came
        before that one, up to the cache's size, so a retry of any of its last five is
        still answered as a duplicate after a restart. Returns how many were put back."""
        earlier: dict[int, list[BatchMetadata]] = {}
        for h in headers:
            e = self.producers.get(h.producer_id)
            if (e is None or len(e.batches) != 1 or h.is_control
                    or h.producer_epoch != e.producer_epoch
                    or h.last_offset >= e.batches[0].last_offset):
                continue
            earlier.setdefault(h.producer_id, []).append(
                BatchMetadata(h.last_sequence, h.last_offset, h.last_offset_delta, h.max_timestamp))
        restored = 0
        for pid, metas in earlier.items():
            e = self.producers[pid]
            keep = metas[-(NUM_BATCHES_TO_RETAIN - 1):]
            e.batches = (*keep, e.batches[0])
            restored += len(keep)
        return restored

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` is done (the ``lastStableOffset`` of its aborted-txn
        index entry): the first offset of another open transaction, else past the marker."""
        others = [off for off, pid in self.ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def remove_expired(self, now_ms: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms`` with no open transaction,
        and verification guards that old (Kafka's ``removeExpiredProducers``); returns how
        many producers were forgotten."""
        gone = [pid for pid, e in self.producers.items()
                if e.current_txn_first_offset is None
                and now_ms - e.last_timestamp >= self.expiration_ms]
        for pid in gone:
            del self.producers[pid]
        if len(gone) > len(self.producers):
            # a dict keeps its largest table: copy it so the memory goes with the producers
            self.producers = dict(self.producers)
        if self.verifications:
            stale = [pid for pid, g in self.verifications.items()
                     if g.created_ms is not None and now_ms - g.created_ms >= self.expiration_ms]
            for pid in stale:
                del self.verifications[pid]
        return len(gone)

    def reset(self, offset: int = 0) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.verifications.clear()
        self.map_end_offset = offset

    # ------------------------------------------------------------------ snapshots
    def _snapshot_path(self, offset: int) -> Path:
        return self.dir / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def snapshot_offsets(self) -> list[int]:
        if self.dir is None:
            return []
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return self.snapshot_offsets_in(names)

    @staticmethod
    def snapshot_offsets_in(names: Iterable[str]) -> list[int]:
        """The offsets of the snapshots among a directory's file ``names``, ascending."""
        out = []
        for name in names:
            stem, _, ext = name.partition(".")
            if ext == "snapshot" and stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    def encode_snapshot(self) -> bytes:
        body = bytearray(_COUNT.pack(len(self.producers)))
        for pid, e in sorted(self.producers.items()):
            last = e.batches[-1] if e.batches else None
            body += _ENTRY.pack(
                pid, e.producer_epoch,
                last.last_seq if last else NO_SEQUENCE,
                last.last_offset if last else -1,
                last.offset_delta if last else 0,
                last.timestamp if last else e.last_timestamp,
                e.coordinator_epoch,
                -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
        return _HEAD.pack(SNAPSHOT_VERSION, crc32c(bytes(body))) + bytes(body)

    @staticmethod
    def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
        if len(data) < _HEAD.size + _COUNT.size:
            raise CorruptSnapshot("snapshot too short")
        version, crc = _HEAD.unpack_from(data, 0)
        if version != SNAPSHOT_VERSION:
            raise CorruptSnapshot(f"unknown snapshot version {version}")
        body = memoryview(data)[_HEAD.size:]
        if crc32c(bytes(body)) != crc:
            raise CorruptSnapshot("snapshot CRC mismatch")
        (count,) = _COUNT.unpack_from(body, 0)
        if count < 0 or _COUNT.size + count * _ENTRY.size != len(body):
            raise CorruptSnapshot("snapshot size does not match its entry count")
        out = []
        for i in range(count):
            pid, epoch, last_seq, last_off, delta, ts, coord, txn_first = \
                _ENTRY.unpack_from(body, _COUNT.size + i * _ENTRY.size)
            e = ProducerStateEntry(pid, epoch, coord, ts,
                                   None if txn_first < 0 else txn_first)
            if last_off >= 0:
                e.batches = (BatchMetadata(last_seq, last_off, delta, ts),)
            out.append(e)
        return out

    def take_snapshot(self, offset: int | None = None, *, sync: bool = True,
                      bulk=None) -> Path | None:
        """Write ``<offset>.snapshot`` (default: the map end offset) unless it exists:
        as Kafka's, a snapshot at an offset already snapshotted is not worth another write
        (a restart of a broker whose partitions took no writes rewrites nothing)."""
        if self.dir is None:
            return None
        offset = self.map_end_offset if offset is None else offset
        if offset <= 0:
            # nothing lies below offset 0 (Kafka's takeSnapshot writes only past its last
            # snapshot offset, 0 at first): an empty log needs no file, and closing
            # 100,000 of them must not write and fsync 100,000
            return None
        path = self._snapshot_path(offset)
        if path.exists():
            return path
        write_atomically(path, self.encode_snapshot(), sync=sync, bulk=bulk)
        return path

    def load_latest(self, upto: int, *, now_ms: int | None = None,
                    offsets: list[int] | None = None) -> int | None:
        """Reset and load the newest readable snapshot at or below ``upto``; returns its
        offset (``None``: no usable snapshot, the state is empty). Unreadable snapshots
        are deleted. ``offsets``: the snapshot offsets, when the caller listed the
        directory."""
        self.reset(0)
        for off in reversed(self.snapshot_offsets() if offsets is None else offsets):
            if off > upto:
                continue
            path = self._snapshot_path(off)
            try:
                entries = self.decode_snapshot(path.read_bytes())
            except (CorruptSnapshot, OSError, struct.error):
                _unlink(path)
                continue
            for e in entries:
                if now_ms is not None and e.current_txn_first_offset is None \
                        and now_ms - e.last_timestamp >= self.expiration_ms:
                    continue
                self.producers[e.producer_id] = e
                if e.current_txn_first_offset is not None:
                    self.ongoing[e.current_txn_first_offset] = e.producer_id
            self.map_end_offset = off
            if self.producers and self.on_producers is not None:
                self.on_producers()
            return off
        return None

    def delete_snapshots_above(self, offset: int, *,
                               offsets: list[int] | None = None) -> list[int] | None:
        """Remove the snapshots above ``offset``; ``offsets``: the snapshot offsets, when
        the caller listed the directory (then the ones kept are returned)."""
        listed = offsets is not None
        for off in offsets if listed else self.snapshot_offsets():
            if off > offset:
                _unlink(self._snapshot_path(off))
        return [off for off in offsets if off <= offset] if listed else None

    def delete_snapshots_before(self, offset: int) -> None:
        """Remove snapshots below ``offset`` except the newest snapshot of all."""
        offs = self.snapshot_offsets()
        for off in offs[:-1]:
            if off < offset:
                _unlink(self._snapshot_path(off))

    # ------------------------------------------------------------------ introspection
    def active_producers(self) -> Iterable[ProducerStateEntry]:
        return self.producers.values()

    def statistics(self) -> dict:
        return {"producers": len(self.producers), "ongoing_txns": len(self.ongoing),
                "map_end_offset": self.map_end_offset,
                "first_unstable_offset": self.first_unstable_offset()}


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
