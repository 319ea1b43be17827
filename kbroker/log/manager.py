"""``LogManager``: every partition log of the broker's log directories.

Layout of each directory in ``log.dirs`` (Kafka's)::

    <log dir>/
        <topic>-<partition>/                 one PartitionLog
        <topic>-<partition>.<hex>-delete/    a deleted log waiting for file.delete.delay.ms
        <topic>-<partition>.<hex>-future/    a log being moved here from another log dir
        recovery-point-offset-checkpoint     see kbroker.log.checkpoint
        log-start-offset-checkpoint
        cleaner-offset-checkpoint
        replication-offset-checkpoint        high watermarks (not of the metadata log)
        .kafka_cleanshutdown                 present only between a clean shutdown and the next start;
                                             the broker epoch it stopped with (kbroker.log.clean_shutdown)

``load()`` opens every partition: after a clean shutdown the segments and indexes are
trusted and no record data is read; otherwise each log re-validates what lies past its
recovery point.  The marker is removed once loading is done, so a crash from then on is
detected; the broker epoch each marker named is kept for the broker's registration
(``previous_broker_epoch``, KIP-966).  ``shutdown(broker_epoch)`` flushes and closes every
log, writes the checkpoints and the marker with that epoch. It syncs in bulk
(:mod:`kbroker.common.bulk_sync`): every log's files and the checkpoints are written first,
then each directory is made durable at once (``syncfs``; a pool of fsyncs where there is
none) and the atomic replacements renamed into place, and only then is the directory's
marker written -- nothing is marked clean before its data is synced, as with one fsync per
file, but a node of 100,000 partitions waits for two journal commits instead of 100,000.
A clean stop of logs that took no data since they were last flushed replaces no file of
theirs (no producer snapshot, no leader-epoch checkpoint for an epoch begun at the log end:
:mod:`kbroker.log.epoch_cache`), and a clean load lists each partition directory once and
reads only what the listing shows (an empty log: nothing).

Maintenance is synchronous, bounded work a trio task calls periodically (see
:mod:`kbroker.log.tasks`): ``run_flush`` (``flush.ms`` and checkpoints: the log start
offsets every ``log.flush.start.offset.checkpoint.interval.ms``, the high watermarks every
``replica.high.watermark.checkpoint.interval.ms`` (5 s; Kafka's replica manager's
``highwatermark-checkpoint`` task, so a killed node reads back a high watermark at most that
old), the recovery points and cleaner offsets every
``log.flush.offset.checkpoint.interval.ms``, each on its own period as Kafka's tasks; the
flush task builds each file on the trio thread and writes and fsyncs it from a worker thread,
one file at a time and never an older content over a newer one: ``write_checkpoint_file``),
``run_retention`` (``retention.ms``/``retention.bytes``, delayed file deletion),
``run_cleaner`` (at most one compaction pass per call, on the dirtiest log) and
``run_producer_expiry`` (``producer.id.expiration.ms``, only the logs that have producers).
``cleaner_enabled=False`` is Kafka's ``log.cleaner.enable=false`` (deprecated in Kafka 4,
still honoured by 4.4's ``LogManager``): no log is compacted, and as Kafka's retention pass
then visits only logs whose policy lacks ``compact`` (their ``compact,delete`` retention is
the cleaner's job), compacted logs keep every segment and grow.

New logs go to the online directory holding the fewest, leaving out the ``cordoned`` ones
(``cordoned.log.dirs``, KIP-1066) unless every online directory is cordoned.

``move_log`` moves a partition to another of ``log.dirs`` (AlterReplicaLogDirs, KIP-113):
the log is flushed with a producer-state snapshot, copied to ``…-future`` in the
destination and fsynced, the source renamed ``…-delete`` (its descriptors stay open for reads
in flight until ``file.delete.delay.ms``), then the copy renamed into place and opened. It runs
without yielding, so no append lands in between (Kafka copies in the background with a
future replica that catches up; kbroker's broker pauses for the copy instead). A crash at
any step leaves one complete log: ``load()`` drops a ``-future`` whose partition still has
its live directory and promotes one whose source was already renamed.
Every write here and in the logs (creating, deleting and moving logs, checkpoints, the
clean-shutdown marker, the maintenance steps) runs under the log dir failure channel
``failures`` (:mod:`kbroker.log.failure`): a storage error fails its directory at once -- no
new log is placed there and no checkpoint or marker written there again -- and the
maintenance steps, checkpoints and shutdown go on with the other directories.
``mark_offline`` takes a failed directory out of use (Kafka's ``handleLogDirFailure``): its
logs are closed without flushing and dropped, so the next start recovers it as after a
crash. The replica layer listens to the channel and calls it
(:mod:`kbroker.replica.log_dir_failure`). Loading at start-up stays outside the channel
(nobody listens yet): a directory that cannot be read or written stops the start.
Time comes from ``now_ms`` arguments or the injected ``clock`` (milliseconds).
"""
from __future__ import annotations

import os
import shutil
import threading
import uuid
from itertools import compress
from operator import attrgetter, ne, not_
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple

from kbroker.common.bulk_sync import BulkSync

from . import checkpoint as ckpt
from . import clean_shutdown
from .config import LogConfig
from .errors import KafkaStorageError, LogClosed
from .failure import LogDirFailureChannel
from .open_files import OpenFiles, default_limit
from .partition import PartitionLog, _parse_dir_name
from .producer_expiry import DEFAULT_EXPIRATION_MS, ProducerExpiry

if TYPE_CHECKING:   # the cleaner is imported by the first pass that finds a compacted log
    from .cleaner import CleanResult

METADATA_TOPIC = "__cluster_metadata"
# attribute reads without a Python call per log (100,000 logs every 5 s): the high
# watermark's property only returns this attribute
_HIGH_WATERMARK = attrgetter("_high_watermark")
_CLOSED = attrgetter("closed")


class CheckpointWrite(NamedTuple):
    """One checkpoint file's new content, built on the trio thread (an offset per log:
    the logs change only there) and written by :meth:`LogManager.write_checkpoint_file`,
    from a worker thread when the flush task writes it (Kafka's scheduler thread)."""
    log_dir: Path
    path: Path
    body: bytes
    count: int
    seq: int            # the order the contents were built in
    what: str           # for the failure channel: what a failed write was doing


# what a failed write of each checkpoint was doing, as the periodic task names them
_WHAT = {ckpt.RECOVERY_POINT: "write the offset checkpoints",
         ckpt.CLEANER_OFFSET: "write the offset checkpoints",
         ckpt.REPLICATION_OFFSET: "write the high watermark checkpoint",
         ckpt.LOG_START_OFFSET: "write the log start offset checkpoint"}


class LogManager:
    """Owns the PartitionLogs of all log directories and their checkpoint files."""

    def __init__(self, log_dirs: Iterable[Path], default_config: LogConfig,
                 clock: Callable[[], int], *, checkpoint_interval_ms: int = 60_000,
                 start_offset_checkpoint_interval_ms: int = 60_000,
                 high_watermark_checkpoint_interval_ms: int = 5_000,
                 cleaner_max_map_entries: int = 1_000_000,
                 cleaner_enabled: bool = True,
                 ticker: Callable[[], int] | None = None,
                 max_open_files: int | None = None,
                 bulk_sync: Callable[[list[Path]], BulkSync] = BulkSync,
                 producer_expiration_ms: int = DEFAULT_EXPIRATION_MS):
        self.log_dirs = [Path(d) for d in log_dirs]
        if not self.log_dirs:
            raise ValueError("at least one log directory is required")
        self.default_config = default_config
        self.clock = clock
        # intervals (the checkpoint period) on a monotonic clock when one is given: after a
        # backward step of the wall clock, a wall-clock "last checkpoint" would sit in the
        # future and hold every checkpoint back until the wall clock caught up with it
        self.ticker = ticker or clock
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self.start_offset_checkpoint_interval_ms = start_offset_checkpoint_interval_ms
        self._last_start_checkpoint_ms = 0
        self.high_watermark_checkpoint_interval_ms = high_watermark_checkpoint_interval_ms
        self._last_hw_checkpoint_ms = 0
        # what each dir's high watermark file says: its logs, their high watermarks and the
        # file's lines, in the same order (lists of the objects the logs hold, where a dict
        # keyed by (topic, partition) tuples kept ~150 bytes a partition)
        self._written_high_watermarks: dict[Path, tuple[list, list, list]] = {}
        self.cleaner_max_map_entries = cleaner_max_map_entries
        self.cleaner_enabled = cleaner_enabled        # log.cleaner.enable
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._pending_dirs: list[tuple[int, Path, PartitionLog]] = []
        self._last_checkpoint_ms = 0
        self.loaded = False
        self.had_clean_shutdown: dict[Path, bool] = {}
        self.cordoned: set[Path] = set()          # cordoned.log.dirs (KIP-1066): no new logs
        self.clean_shutdown_epochs: dict[Path, int | None] = {}   # what each marker named
        self.last_clean: CleanResult | None = None
        # every PartitionLog here reports to it; the replica layer listens (kbroker.log.failure)
        self.failures = LogDirFailureChannel()
        # segment and index files are opened on use, at most this many at a time
        # (kbroker.log.open_files; default: a quarter of the process's open-file limit)
        self.files = OpenFiles(max_open_files if max_open_files else default_limit())
        # how shutdown() syncs (tests pass a BulkSync without syncfs, or one that fails)
        self.bulk_sync = bulk_sync
        self.last_shutdown_sync: dict | None = None     # the BulkSync's stats of the last stop
        # producer.id.expiration.ms for every log, and the logs that have producers
        # (kbroker.log.producer_expiry): run_producer_expiry visits only those
        self.producer_expiry = ProducerExpiry(producer_expiration_ms)
        # checkpoint files are written one at a time (the flush task writes from a worker
        # thread, the trio thread at a clean stop, for the cleaner or a moved log), and
        # never a content older than the one the file holds (write_checkpoint_file)
        self._file_lock = threading.Lock()
        self._built_seq = 0
        # while load() writes the checkpoints: each file's bytes as it read them
        self._on_disk_at_load: dict[Path, bytes] = {}
        self._written_seq: dict[Path, int] = {}

    @property
    def offline_dirs(self) -> set[Path]:
        """The log directories that failed (or were taken offline) since start."""
        return set(self.failures.failed)

    @property
    def online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if not self.failures.is_failed(d)]

    # -- start and stop -----------------------------------------------------------------
    def load(self) -> None:
        """Open every partition directory found in the log directories."""
        now = self.clock()
        futures: list[Path] = []
        read: dict[Path, bytes] = {}        # the checkpoint files' bytes, of clean dirs only
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
            marker = d / ckpt.CLEAN_SHUTDOWN
            clean = marker.exists()
            self.had_clean_shutdown[d] = clean
            self.clean_shutdown_epochs[d] = clean_shutdown.read_epoch(d) if clean else None
            # after a clean stop its checkpoints are durable (synced before the marker was
            # written): their bytes are kept, so that what would be written again is not
            on_disk = read if clean else {}
            rps = self._safe_read(d / ckpt.RECOVERY_POINT, on_disk)
            starts = self._safe_read(d / ckpt.LOG_START_OFFSET, on_disk)
            dirty = self._safe_read(d / ckpt.CLEANER_OFFSET, on_disk)
            hws = self._safe_read(d / ckpt.REPLICATION_OFFSET, on_disk)
            # names from one scandir (the entry types come with them: no stat per child)
            with os.scandir(d) as it:
                children = sorted(e.name for e in it if e.is_dir())
            for name in children:
                if name.endswith("-delete"):
                    shutil.rmtree(d / name, ignore_errors=True)
                    continue
                if name.endswith("-future"):
                    futures.append(d / name)
                    continue
                parsed = _parse_dir_name(name)
                if parsed is None or parsed in self._logs:
                    continue
                log = PartitionLog(d / name, parsed[0], parsed[1], self.default_config,
                                   clock=self.clock, now_ms=now,
                                   recovery_point=rps.get(parsed, 0),
                                   log_start_offset=starts.get(parsed, 0),
                                   first_dirty_offset=dirty.get(parsed, 0),
                                   clean_shutdown=clean,
                                   high_watermark=None if parsed[0] == METADATA_TOPIC
                                   else hws.get(parsed), failures=self.failures,
                                   files=self.files, producer_expiry=self.producer_expiry,
                                   log_dir=d)
                self._register(log)
        for future in futures:
            self._finish_move(future, now)
        # not through the failure channel: nobody listens yet, and a directory that cannot
        # be written at start-up stops the start with the path named (kbroker.log.dirs)
        # (after a clean stop, a file that already holds what it would be written with is
        # left as it is: usually every one of them; see _write_file)
        self._on_disk_at_load = read
        try:
            for d, logs in self._logs_by_dir().items():
                self._write_checkpoints(d, logs)
        finally:
            self._on_disk_at_load = {}
        for d in self.log_dirs:
            marker = d / ckpt.CLEAN_SHUTDOWN
            if marker.exists():
                marker.unlink()
                ckpt.fsync_dir(d)
        self._last_checkpoint_ms = self._last_hw_checkpoint_ms = self.ticker()
        # recovery read the tail of every log: let go of those files, a partition without
        # traffic holds no descriptor (each is opened again on its first read or write)
        self.files.close_all()
        self.loaded = True

    def previous_broker_epoch(self) -> int:
        """The broker epoch the last clean shutdown left in every log dir's marker, else -1
        (Kafka's ``readBrokerEpochFromCleanShutdownFiles``): read at ``load()``."""
        return clean_shutdown.previous_broker_epoch(
            [self.clean_shutdown_epochs.get(d) for d in self.log_dirs],
            all_online=not self.offline_dirs)

    def shutdown(self, broker_epoch: int = clean_shutdown.UNKNOWN) -> None:
        """Flush and close every log, write checkpoints and the clean-shutdown marker naming
        ``broker_epoch`` (the epoch the broker is registered with, -1 if none; KIP-966).

        A directory whose writes fail on the way is reported (kbroker.log.failure) and gets
        no marker, so its logs are recovered on the next start; the others shut down
        cleanly.

        The files are synced in bulk (module docstring): each log's close and the checkpoints
        only write, then each online directory's writes are made durable and renamed into
        place together, and the marker follows that directory's sync."""
        with self.bulk_sync(self.online_dirs) as bulk:
            for log in list(self._logs.values()):
                try:
                    log.close(bulk=bulk)
                except KafkaStorageError:
                    self._close_quietly(log)
            for _, path, log in self._pending_dirs:
                self._close_quietly(log)
                shutil.rmtree(path, ignore_errors=True)
            self._pending_dirs.clear()
            self.checkpoint(include_closed=True, bulk=bulk)
            for d in self.online_dirs:
                try:
                    with self.failures.guard(d, "sync the closed logs"):
                        bulk.commit(d)
                    with self.failures.guard(d, "write the clean-shutdown marker"):
                        clean_shutdown.write(d, broker_epoch)
                except KafkaStorageError:
                    continue
            self.last_shutdown_sync = dict(bulk.stats, uses_syncfs=bulk.uses_syncfs)
        self._logs.clear()
        self._last_checkpoint_ms = self._last_hw_checkpoint_ms = self.ticker()

    @staticmethod
    def _safe_read(path: Path, on_disk: dict[Path, bytes]) -> dict[tuple[str, int], int]:
        """The checkpoint at ``path``; its bytes are kept in ``on_disk``."""
        try:
            data = path.read_bytes()
        except OSError:
            return {}  # no checkpoint: recovery reads more, which is always safe
        on_disk[path] = data
        try:
            return ckpt.parse_checkpoint(data, path)
        except ValueError:
            return {}

    @staticmethod
    def _close_quietly(log: PartitionLog) -> None:
        try:
            log.close_without_flush()
        except Exception:  # noqa: BLE001 - the disk failed; the descriptors go anyway
            log.closed = True

    def _own(self, log_dir: Path) -> Path:
        """The manager's own object for the log directory ``log_dir`` (one of ``log_dirs``),
        which every log of the directory shares as its ``log_dir``."""
        return self.log_dirs[self.log_dirs.index(Path(log_dir))]

    def _register(self, log: PartitionLog) -> None:
        log.checkpoint_listener = self._write_cleaner_checkpoint
        self._logs[(log.topic, log.partition)] = log

    # -- partition logs ----------------------------------------------------------------
    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int,
                      config: LogConfig | None = None) -> PartitionLog:
        """The log of ``topic``-``partition``, created in the emptiest directory if new.

        A given ``config`` replaces the log's current one (topic configs arrive after
        ``load()``, which opens logs with the default config).
        """
        log = self._logs.get((topic, partition))
        if log is not None:
            if config is not None and config != log.config:
                log.config = config
            return log
        if not topic or "/" in topic or topic in (".", ".."):
            raise ValueError(f"bad topic name {topic!r}")
        online = self.online_dirs
        if not online:
            raise KafkaStorageError("no online log directory left")
        # KIP-1066: a cordoned dir takes no new log while another online dir is not cordoned
        online = [d for d in online if d not in self.cordoned] or online
        if topic == METADATA_TOPIC:
            target = self.log_dirs[0]     # metadata.log.dir is the first of log.dirs (config)
        elif len(online) == 1:
            target = online[0]            # nothing to balance (and no O(logs) scan per create)
        else:
            counts = {d: 0 for d in online}
            for lg in self._logs.values():
                parent = lg.log_dir
                if parent in counts:
                    counts[parent] += 1
            target = min(online, key=lambda d: counts[d])
        with self.failures.guard(target, f"create the log of {topic}-{partition}"):
            log = PartitionLog(target / f"{topic}-{partition}", topic, partition,
                               config or self.default_config, clock=self.clock,
                               clean_shutdown=True, failures=self.failures, files=self.files,
                               producer_expiry=self.producer_expiry, log_dir=target)
        self._register(log)
        return log

    def update_config(self, topic: str, partition: int, config: LogConfig) -> None:
        log = self._logs.get((topic, partition))
        if log is not None:
            log.config = config

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove a partition: renamed to ``…-delete`` now, files removed after the delay.
        Raises ``KafkaStorageError`` when its directory fails (the log is gone from here
        either way: a failed directory is recovered on the next start)."""
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return False
        log.closed = True  # further use raises LogClosed; descriptors stay for reads in flight
        target = log.dir.with_name(f"{log.dir.name}.{uuid.uuid4().hex}-delete")
        try:
            with self.failures.guard(log.log_dir, f"delete the log of {topic}-{partition}"):
                os.replace(log.dir, target)
                ckpt.fsync_dir(target.parent)
        except KafkaStorageError:
            self._close_quietly(log)
            raise
        self._pending_dirs.append((self.clock() + log.config.file_delete_delay_ms, target, log))
        return True

    def _finish_move(self, future: Path, now: int) -> None:
        """A ``-future`` directory found at start-up (a move cut short by a crash)."""
        parsed = _parse_dir_name(future.name.rsplit(".", 1)[0])
        if parsed is None or parsed in self._logs:
            shutil.rmtree(future, ignore_errors=True)     # the source is still live: drop the copy
            return
        final = future.with_name(f"{parsed[0]}-{parsed[1]}")
        os.replace(future, final)
        ckpt.fsync_dir(final.parent)
        self._register(PartitionLog(final, parsed[0], parsed[1], self.default_config,
                                    clock=self.clock, now_ms=now, failures=self.failures,
                                    files=self.files, producer_expiry=self.producer_expiry,
                                    log_dir=self._own(final.parent)))

    def move_log(self, topic: str, partition: int, dest: Path) -> PartitionLog:
        """Move ``topic``-``partition`` to the log directory ``dest`` (one of ``log_dirs``);
        returns the log now in use (the same one when it is there already)."""
        log = self._logs[(topic, partition)]
        dest = Path(dest)
        if dest not in self.log_dirs:
            raise ValueError(f"{dest} is not a log directory")
        if dest in self.offline_dirs:
            raise KafkaStorageError(f"log directory {dest} is offline")
        dest = self._own(dest)
        if log.log_dir == dest:
            return log
        src = log.log_dir
        log.flush()
        with self.failures.guard(src, f"snapshot the producer state of {topic}-{partition}"):
            log.producer_state.take_snapshot(log.log_end_offset)
        future = dest / f"{log.dir.name}.{uuid.uuid4().hex}-future"
        try:
            with self.failures.guard(dest, f"copy {topic}-{partition} into the log dir"):
                shutil.copytree(log.dir, future)
                for f in future.iterdir():
                    fd = os.open(f, os.O_RDONLY)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                ckpt.fsync_dir(future)
                ckpt.fsync_dir(dest)
        except BaseException:
            shutil.rmtree(future, ignore_errors=True)    # the source stays in use
            raise
        state = dict(recovery_point=log.recovery_point, log_start_offset=log.log_start_offset,
                     first_dirty_offset=log.first_dirty_offset, high_watermark=log.high_watermark)
        retired = log.dir.with_name(f"{log.dir.name}.{uuid.uuid4().hex}-delete")
        with self.failures.guard(src, f"retire the moved log of {topic}-{partition}"):
            os.replace(log.dir, retired)
            ckpt.fsync_dir(retired.parent)
        del self._logs[(topic, partition)]
        log.closed = True            # descriptors stay for reads in flight, as delete_log does
        self._pending_dirs.append((self.clock() + log.config.file_delete_delay_ms, retired, log))
        final = dest / f"{topic}-{partition}"
        # a failure from here on leaves the only copy in ``future`` in a failed ``dest``: the
        # next start promotes it (load), and until then the replica has no log
        with self.failures.guard(dest, f"open the moved log of {topic}-{partition}"):
            os.replace(future, final)
            ckpt.fsync_dir(dest)
            moved = PartitionLog(final, topic, partition, log.config, clock=self.clock,
                                 failures=self.failures, files=self.files,
                                 producer_expiry=self.producer_expiry, log_dir=dest, **state)
        self._register(moved)
        self.checkpoint()
        return moved

    def mark_offline(self, log_dir: Path) -> list[tuple[str, int]]:
        """Take ``log_dir`` out of use after an I/O error: close its logs without flushing
        (the disk may refuse every write), drop them, and return their (topic, partition)."""
        d = Path(log_dir)
        if d not in self.log_dirs:
            raise ValueError(f"{d} is not a log directory")
        self.failures.mark(d)
        dropped = [key for key, lg in self._logs.items() if lg.log_dir == d]
        for key in dropped:
            self._close_quietly(self._logs.pop(key))
        keep = []
        for entry in self._pending_dirs:
            if entry[1].parent == d:
                self._close_quietly(entry[2])
            else:
                keep.append(entry)
        self._pending_dirs = keep
        return dropped

    def all_logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    # -- checkpoints -------------------------------------------------------------------
    def checkpoint(self, include_closed: bool = False, bulk: BulkSync | None = None, *,
                   log_start: bool = True, high_watermarks: bool = True,
                   deferred: list[CheckpointWrite] | None = None) -> None:
        """Write the four offset checkpoint files of every online log directory (the log
        start offsets' and the high watermarks' left out with ``log_start=False`` and
        ``high_watermarks=False``); one that fails is reported (kbroker.log.failure) and the
        others are written all the same. With ``bulk`` their syncs and renames wait for its
        commit; with ``deferred`` each file's content is built and added to that list, for
        the caller to write (:meth:`write_checkpoint_file`)."""
        self._each_dir("write the offset checkpoints", lambda d, logs: self._write_checkpoints(
            d, logs, bulk, log_start=log_start, high_watermarks=high_watermarks,
            deferred=deferred), include_closed)

    def checkpoint_log_start_offsets(self, deferred: list[CheckpointWrite] | None = None) -> None:
        """Write the log start offset checkpoint of every online log directory (Kafka's
        ``checkpointLogStartOffsets`` task); ``deferred`` as :meth:`checkpoint`."""
        self._each_dir("write the log start offset checkpoint",
                       lambda d, logs: self._write_log_start_offsets(d, logs, deferred=deferred))

    def checkpoint_high_watermarks(self, deferred: list[CheckpointWrite] | None = None) -> None:
        """Write the high watermark checkpoint of every online log directory (Kafka's
        ``ReplicaManager.checkpointHighWatermarks``) whose high watermarks changed since its
        last one: the file would say the same, and for 100,000 partitions building it costs
        tens of milliseconds of the trio thread every period; ``deferred`` as
        :meth:`checkpoint`."""
        self._each_dir("write the high watermark checkpoint",
                       lambda d, logs: self._write_high_watermarks(d, logs, unless_unchanged=True,
                                                                   deferred=deferred))

    def write_checkpoint_file(self, job: CheckpointWrite, bulk: BulkSync | None = None) -> bool:
        """Write one checkpoint file's built content (from any thread: the flush task runs it
        in a worker thread); whether it was written. One file write at a time, and a content
        built before the one the file already holds is dropped: a write of the trio thread
        (the clean stop, the cleaner) may overtake a deferred one. Raises ``OSError``; the
        caller reports it (the failure channel's guard)."""
        with self._file_lock:
            if self._written_seq.get(job.path, 0) > job.seq:
                return False
            ckpt.write_encoded(job.path, job.body, job.count, bulk=bulk)
            self._written_seq[job.path] = job.seq
            return True

    def _write_file(self, d: Path, name: str, lines: list[str], bulk: BulkSync | None,
                    deferred: list[CheckpointWrite] | None) -> None:
        body, count = ckpt.encode_lines(lines)
        path = d / name
        if self._on_disk_at_load and self._on_disk_at_load.get(path) == body:
            # load(): the file read a moment ago holds these bytes already, durably (the
            # clean stop synced them); writing them again would cost two fsyncs, no more
            return
        self._built_seq += 1
        job = CheckpointWrite(d, path, body, count, self._built_seq, _WHAT[name])
        if deferred is not None:
            deferred.append(job)
        else:
            self.write_checkpoint_file(job, bulk)

    def _each_dir(self, what: str, write: Callable[[Path, list[PartitionLog]], None],
                  include_closed: bool = False) -> None:
        """``write(dir, logs)`` for every online log directory, in the failure channel's
        guard: a directory whose write fails is reported and the others go on."""
        for d, logs in self._logs_by_dir(include_closed).items():
            try:
                with self.failures.guard(d, what):
                    write(d, logs)
            except KafkaStorageError:
                continue

    def _logs_by_dir(self, include_closed: bool = False) -> dict[Path, list[PartitionLog]]:
        # one list per online directory, keyed by the manager's own objects (each log holds
        # one as ``log_dir``): no path is built or hashed per log
        by_dir: dict[Path, list[PartitionLog]] = {d: [] for d in self.online_dirs}
        if len(self.log_dirs) == 1:
            if by_dir:          # one directory, online: every log is there
                logs = self._logs.values()
                by_dir[self.log_dirs[0]] = list(logs) if include_closed else \
                    list(compress(logs, map(not_, map(_CLOSED, logs))))
            return by_dir
        by_id = {id(d): logs for d, logs in by_dir.items()}    # no Path hashed per log
        for log in self._logs.values():
            if log.closed and not include_closed:
                continue
            logs = by_id.get(id(log.log_dir))
            if logs is None:        # a failed directory's log (or another path object)
                if self.failures.is_failed(log.log_dir):
                    continue
                logs = by_dir.setdefault(log.log_dir, [])
                by_id[id(log.log_dir)] = logs
            logs.append(log)
        return by_dir

    def _write_log_start_offsets(self, d: Path, logs: list[PartitionLog],
                                 bulk: BulkSync | None = None,
                                 deferred: list[CheckpointWrite] | None = None) -> None:
        self._write_file(d, ckpt.LOG_START_OFFSET, ckpt.log_lines(logs, "log_start_offset"),
                         bulk, deferred)

    def _write_high_watermarks(self, d: Path, logs: list[PartitionLog],
                               bulk: BulkSync | None = None, *,
                               unless_unchanged: bool = False,
                               deferred: list[CheckpointWrite] | None = None) -> None:
        # The metadata log's commit point is Raft's business, not a checkpointed HW.
        meta = self._logs.get((METADATA_TOPIC, 0))
        if meta is not None and meta in logs:
            logs = list(logs)
            logs.remove(meta)
        marks = list(map(_HIGH_WATERMARK, logs))
        last = self._written_high_watermarks.get(d)
        if last is not None and last[0] == logs:
            if unless_unchanged and last[1] == marks:
                return
            # the same logs: only the lines of the high watermarks that moved are made
            # again (every 5 s, most of 100,000 partitions have not moved); which moved is
            # found without a Python step per log
            lines, line = last[2], ckpt.entry_line
            for i in compress(range(len(marks)), map(ne, last[1], marks)):
                lg = logs[i]
                lines[i] = line(lg.topic, lg.partition, marks[i])
        else:
            lines = ckpt.log_lines(logs, "high_watermark")
        self._write_file(d, ckpt.REPLICATION_OFFSET, lines, bulk, deferred)
        self._written_high_watermarks[d] = (logs, marks, lines)

    def _write_checkpoints(self, d: Path, logs: list[PartitionLog],
                           bulk: BulkSync | None = None, *, log_start: bool = True,
                           high_watermarks: bool = True,
                           deferred: list[CheckpointWrite] | None = None) -> None:
        self._write_file(d, ckpt.RECOVERY_POINT, ckpt.log_lines(logs, "recovery_point"),
                         bulk, deferred)
        if log_start:
            self._write_log_start_offsets(d, logs, bulk, deferred)
        if high_watermarks:
            self._write_high_watermarks(d, logs, bulk, deferred=deferred)
        self._write_cleaner_checkpoint_dir(d, logs, bulk, deferred)

    def _write_cleaner_checkpoint(self, log: PartitionLog) -> None:
        d = log.log_dir
        logs = [lg for lg in self._logs.values() if lg.log_dir == d]
        self._write_cleaner_checkpoint_dir(d, logs)

    def _write_cleaner_checkpoint_dir(self, d: Path, logs: list[PartitionLog],
                                      bulk: BulkSync | None = None,
                                      deferred: list[CheckpointWrite] | None = None) -> None:
        self._write_file(d, ckpt.CLEANER_OFFSET,
                         ckpt.log_lines([lg for lg in logs if lg.first_dirty_offset > 0],
                                        "first_dirty_offset"), bulk, deferred)

    # -- maintenance --------------------------------------------------------------------
    def run_flush(self, now_ms: int | None = None, *,
                  deferred: list[CheckpointWrite] | None = None) -> int:
        """fsync logs past ``flush.ms``; write each checkpoint on its own period (with
        ``deferred``: build each, for the caller to write, see :meth:`checkpoint`)."""
        now = self.clock() if now_ms is None else now_ms
        flushed = 0
        for log in list(self._logs.values()):
            if log.recovery_point >= log.log_end_offset:
                # nothing unflushed (most logs of a large node): no call, no guard -- the
                # sweep runs every second over every log (Kafka's lastFlushTime, too, moves
                # only when a flush happens)
                continue
            try:
                flushed += log.maybe_flush(now)
            except (LogClosed, KafkaStorageError):
                continue        # a failed directory was reported; the others go on
        tick = self.ticker() if now_ms is None else now_ms
        if tick - self._last_checkpoint_ms >= self.checkpoint_interval_ms:
            self.checkpoint(log_start=False, high_watermarks=False, deferred=deferred)
            self._last_checkpoint_ms = tick
        if tick - self._last_hw_checkpoint_ms >= self.high_watermark_checkpoint_interval_ms:
            self.checkpoint_high_watermarks(deferred=deferred)
            self._last_hw_checkpoint_ms = tick
        if tick - self._last_start_checkpoint_ms >= self.start_offset_checkpoint_interval_ms:
            self.checkpoint_log_start_offsets(deferred=deferred)
            self._last_start_checkpoint_ms = tick
        return flushed

    def run_retention(self, now_ms: int | None = None) -> int:
        """Apply retention to every log; finish delayed deletions. Returns segments deleted."""
        now = self.clock() if now_ms is None else now_ms
        deleted = 0
        for log in list(self._logs.values()):
            if not self.cleaner_enabled and log.config.compact:
                continue        # Kafka: without a cleaner, nobody applies it to compacted logs
            try:
                deleted += log.maybe_run_retention(now)
            except (LogClosed, KafkaStorageError):
                continue        # a failed directory was reported; the others go on
        keep = []
        for due, path, log in self._pending_dirs:
            if now >= due:
                self._close_quietly(log)
                shutil.rmtree(path, ignore_errors=True)
            else:
                keep.append((due, path, log))
        self._pending_dirs = keep
        return deleted

    def run_producer_expiry(self, now_ms: int | None = None) -> int:
        """Forget idle producers (``producer.id.expiration.ms``) in the logs that have
        any; returns how many (:mod:`kbroker.log.producer_expiry`)."""
        return self.producer_expiry.sweep(self.clock() if now_ms is None else now_ms)

    def run_cleaner(self, now_ms: int | None = None) -> CleanResult | None:
        """One compaction pass on the log with the highest dirty ratio, if any is due."""
        if not self.cleaner_enabled:
            return None
        compacted = [log for log in list(self._logs.values())
                     if not log.closed and log.config.compact]
        if not compacted:
            return None
        # here, not at import: a node without compacted logs never needs the cleaner
        from .cleaner import clean, cleanable_range
        now = self.clock() if now_ms is None else now_ms
        best, best_key = None, None
        for log in compacted:
            try:
                with log.io_guard("find what to clean"):
                    rng = cleanable_range(log, now)
            except KafkaStorageError:
                continue
            if rng is None:
                continue
            key = (rng.forced, rng.dirty_ratio)
            if best_key is None or key > best_key:
                best, best_key = log, key
        if best is None:
            return None
        try:
            with best.io_guard("clean"):
                self.last_clean = clean(best, now, max_map_entries=self.cleaner_max_map_entries)
        except KafkaStorageError:
            return None     # reported; the cleaner moves on to other logs
        return self.last_clean

    def statistics(self) -> dict:
        logs = list(self._logs.values())
        return {
            "log_dirs": [str(d) for d in self.log_dirs],
            "partitions": len(logs),
            "size_bytes": sum(lg.size for lg in logs),
            "segments": sum(len(lg.segments) for lg in logs),
            "pending_dir_deletes": len(self._pending_dirs),
            "open_files": self.files.statistics(),
            "last_clean": self.last_clean._asdict() if self.last_clean else None,
            "producer_expiry": self.producer_expiry.statistics(),
        }
