"""A clean stop syncs in bulk (``kbroker.common.bulk_sync``): every log's files are written,
then each log dir is made durable at once, the atomic replacements renamed, and only then
is the clean-shutdown marker written. Counted, on real files: how many fsyncs and syncfs
calls a stop of many logs makes, that every replaced file's new bytes are synced before
its rename, and that a failed sync leaves the directory without a marker and its old
checkpoints in place."""
from __future__ import annotations

import errno
import os
from pathlib import Path


from kbroker.common.bulk_sync import SYNCFS, BulkSync
from kbroker.log import LogConfig, LogManager
from kbroker.log import checkpoint as ckpt
from kbroker.log import clean_shutdown

from .helpers import make_batch, records_of

LOGS = 60


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


class SyscallLog:
    """Wraps the real ``os.fsync`` and ``os.replace`` (they still run) to record, in order,
    which paths were fsynced and renamed."""

    def __init__(self, monkeypatch):
        self.events: list[tuple[str, str]] = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd):
            self.events.append(("fsync", _fd_path(fd)))
            return real_fsync(fd)

        def replace(src, dst, *a, **kw):
            self.events.append(("replace", f"{src} -> {dst}"))
            return real_replace(src, dst, *a, **kw)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.events if k == kind)


def _busy_manager(dirs, **kw) -> LogManager:
    """LOGS logs over ``dirs``, each that just became leader (an unsynced leader-epoch
    checkpoint) and took a batch (an unsynced segment, a producer-state snapshot due)."""
    mgr = LogManager(dirs, LogConfig(), lambda: 1_000, **kw)
    mgr.load()
    for i in range(LOGS):
        log = mgr.get_or_create(f"t{i % 3}", i)
        log.assign_epoch_start(5, log.log_end_offset)
        log.append(make_batch([(b"k", b"v%d" % i, 1_000)]), leader_epoch=5, now_ms=1_000)
    return mgr


def _check_reopened(dirs, snapshots: bool = True):
    mgr = LogManager(dirs, LogConfig(), lambda: 2_000)
    mgr.load()
    for i in range(LOGS):
        log = mgr.get(f"t{i % 3}", i)
        assert [(e.epoch, e.start_offset) for e in log.epochs.entries()] == [(5, 0)]
        assert records_of(log) == [(0, b"k", b"v%d" % i)]
        if snapshots:
            assert log.producer_state.snapshot_offsets() == [1]
    return mgr


def test_a_clean_stop_of_many_logs_makes_two_syncfs_per_dir_and_no_fsync_per_file(tmp_path, monkeypatch):
    # the Linux C libraries the project runs on (glibc, musl) have syncfs: its absence is a
    # failure here, not a skip (the fallback without it has its own test below)
    assert SYNCFS is not None, "the C library has no syncfs"
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    mgr = _busy_manager(dirs)
    calls = SyscallLog(monkeypatch)
    mgr.shutdown(broker_epoch=9)
    stats = mgr.last_shutdown_sync
    assert stats["uses_syncfs"] and stats["syncfs"] == 2 * len(dirs)
    # 4 files per log (segment, its time index's final entry, epoch checkpoint, snapshot)
    # and 4 checkpoints per dir
    assert stats["files"] == 4 * LOGS + 4 * len(dirs)
    assert stats["renames"] == 2 * LOGS + 4 * len(dirs)
    # the only fsyncs left: each marker and its directory
    assert calls.count("fsync") == 2 * len(dirs)
    assert all(p.endswith(clean_shutdown.FILE_NAME) or Path(p) in dirs
               for k, p in calls.events if k == "fsync")
    for d in dirs:
        assert (d / clean_shutdown.FILE_NAME).exists()
        assert not list(d.rglob("*.tmp"))
    mgr = _check_reopened(dirs)
    assert all(mgr.had_clean_shutdown.values()) and mgr.previous_broker_epoch() == 9


def test_without_syncfs_each_new_file_is_fsynced_before_its_rename_and_the_marker_comes_last(
        tmp_path, monkeypatch):
    d = tmp_path / "d1"
    mgr = _busy_manager([d], bulk_sync=lambda roots: BulkSync(roots, syncfs=False, threads=4))
    calls = SyscallLog(monkeypatch)
    mgr.shutdown(broker_epoch=3)
    stats = mgr.last_shutdown_sync
    assert not stats["uses_syncfs"] and stats["syncfs"] == 0
    synced_at, synced_last = {}, {}
    for i, (kind, what) in enumerate(calls.events):
        if kind == "fsync":
            synced_at.setdefault(what, i)
            synced_last[what] = i
    renames = [(i, what.split(" -> ")) for i, (kind, what) in enumerate(calls.events) if kind == "replace"]
    assert len(renames) == 2 * LOGS + 4
    for i, (tmp, final) in renames:
        assert synced_at[tmp] < i, f"{tmp} renamed before it was synced"
    # every segment written since the last sync was synced, each once
    segs = [p for p in synced_at if p.endswith(".log")]
    assert len(segs) == LOGS
    assert calls.count("fsync") == stats["fsync"] + 2      # + the marker and its directory
    marker_sync = synced_at[str(d / clean_shutdown.FILE_NAME)]
    assert marker_sync > max(i for i, _ in renames)
    # each directory holding a rename is synced after it (the rename made durable)
    for i, (tmp, final) in renames:
        assert synced_last[str(Path(final).parent)] > i
    _check_reopened([d])


def test_a_failed_sync_leaves_no_marker_and_the_old_checkpoints(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    mgr = LogManager([good, bad], LogConfig(), lambda: 1_000)
    mgr.load()
    mgr.shutdown()                    # the checkpoints of an empty node, in both dirs
    before = (bad / ckpt.RECOVERY_POINT).read_bytes()
    mgr = _busy_manager([good, bad], bulk_sync=lambda roots: BulkSync(roots, syncfs=failing_in(bad)))
    reported = []
    mgr.failures.listen(lambda d, what, cause: reported.append((d, what, cause.errno)))
    mgr.shutdown(broker_epoch=4)
    assert reported == [(bad, "sync the closed logs", errno.EIO)]
    assert (good / clean_shutdown.FILE_NAME).exists()
    assert not (bad / clean_shutdown.FILE_NAME).exists()
    # nothing renamed in the failed dir: its checkpoints are the old ones, its new files
    # still under their temporary names
    assert (bad / ckpt.RECOVERY_POINT).read_bytes() == before
    assert list(bad.rglob("leader-epoch-checkpoint.tmp"))
    assert not list(bad.rglob("leader-epoch-checkpoint"))
    # the next start recovers the failed dir as after a crash, and loses nothing (the data
    # reached the page cache): the epochs are rebuilt from the batches
    mgr = _check_reopened([good, bad], snapshots=False)
    assert mgr.had_clean_shutdown == {good: True, bad: False}
    assert mgr.previous_broker_epoch() == -1


def failing_in(root: Path):
    """A syncfs that fails with EIO for the filesystem as reached through ``root``."""
    def syncfs(fd: int) -> None:
        if Path(_fd_path(fd)) == root:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        if SYNCFS is not None:
            SYNCFS(fd)
    return syncfs
