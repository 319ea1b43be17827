"""What a clean stop and a clean restart of many partitions touch (issue 32: 100,000
partitions on one node). Counted on real files: which files a stop replaces, how often a
load lists a partition's directory; durability and recovery checked beside each count."""
from __future__ import annotations

import io
import os

from kbroker.log import LogConfig, LogManager
from kbroker.log.epoch_cache import FILE_NAME, LeaderEpochCache

from .helpers import make_batch

NOW = 3_000_000
LOGS = 12          # half of them hold one batch, half nothing


def manager(d) -> LogManager:
    return LogManager([d], LogConfig(), lambda: NOW)


def start_leading(mgr: LogManager, epoch: int) -> None:
    """What a new leader does to every log (Kafka's makeLeader): its epoch starts at the
    log end."""
    for lg in mgr.all_logs():
        lg.assign_epoch_start(epoch, lg.log_end_offset)


def epoch_files(d) -> dict[str, int]:
    """inode of each partition's leader-epoch-checkpoint (a replaced file has a new one)."""
    return {p.name: os.stat(p / FILE_NAME).st_ino for p in sorted(d.iterdir())
            if p.is_dir() and (p / FILE_NAME).exists()}


def stopped_node(d):
    """A log dir of ``LOGS`` partitions led by this node in epoch 0, the even ones holding
    one batch, stopped cleanly."""
    mgr = manager(d)
    mgr.load()
    for i in range(LOGS):
        mgr.get_or_create("t", i)
    start_leading(mgr, 0)
    for i in range(0, LOGS, 2):
        mgr.get("t", i).append(make_batch([(b"k", b"v", NOW)]), leader_epoch=0, now_ms=NOW)
    mgr.shutdown(broker_epoch=1)
    return d


def test_a_restarted_leader_without_new_data_replaces_no_epoch_file(tmp_path):
    d = stopped_node(tmp_path / "d")
    # the logs with data have their epoch on disk; an epoch without data needs no file
    files = epoch_files(d)
    assert set(files) == {f"t-{i}" for i in range(0, LOGS, 2)}

    for epoch in (1, 2):          # two more restarts, each electing the node again
        mgr = manager(d)
        mgr.load()
        start_leading(mgr, epoch)
        mgr.shutdown(broker_epoch=epoch + 1)
        assert epoch_files(d) == files                         # nothing replaced
        assert mgr.last_shutdown_sync["renames"] <= 4          # the directory's checkpoints

    mgr = manager(d)
    mgr.load()
    for i in range(LOGS):
        want = [(0, 0)] if i % 2 == 0 else []
        assert mgr.get("t", i).epochs.entries() == want, i
    # data in the new epoch: its entry now lies below the log end and is written
    log = mgr.get("t", 0)
    log.assign_epoch_start(3, log.log_end_offset)
    log.append(make_batch([(b"k", b"v", NOW)]), leader_epoch=3, now_ms=NOW)
    mgr.shutdown(broker_epoch=4)
    assert LeaderEpochCache(log.dir).entries() == [(0, 0), (3, 1)]


def test_an_epoch_left_unwritten_at_a_flush_is_recovered_from_the_batches(tmp_path):
    """The flush that skips a new leader's epoch (it starts at the log end) leaves the
    file behind the cache; a crash after data of that epoch was appended reads the epoch
    back from the batches past the recovery point."""
    d = tmp_path / "d"
    mgr = manager(d)
    mgr.load()
    log = mgr.get_or_create("t", 0)
    log.assign_epoch_start(0, 0)
    log.append(make_batch([(b"k", b"v", NOW)]), leader_epoch=0, now_ms=NOW)
    log.flush()
    writes = log.epochs.writes
    log.assign_epoch_start(5, log.log_end_offset)
    log.flush()
    assert log.epochs.writes == writes                        # skipped: nothing below the end
    assert LeaderEpochCache(log.dir).entries() == [(0, 0)]
    log.append(make_batch([(b"k", b"v", NOW)]), leader_epoch=5, now_ms=NOW)
    mgr.checkpoint()
    log.close_without_flush()                                 # a crash: no marker, no flush

    mgr = manager(d)
    mgr.load()
    again = mgr.get("t", 0)
    assert again.log_end_offset == 2
    assert again.epochs.entries() == [(0, 0), (5, 1)]
    assert LeaderEpochCache(again.dir).entries() == [(0, 0), (5, 1)]
    mgr.shutdown()


def test_a_clean_restart_lists_each_log_directory_once_and_reads_no_file_of_an_empty_log(
        tmp_path, monkeypatch):
    d = stopped_node(tmp_path / "d")

    listed, opened, made = [], [], []
    real_listdir, real_os_open, real_io_open, real_mkdir = os.listdir, os.open, io.open, os.mkdir

    def counting_listdir(path="."):
        listed.append(os.path.basename(os.fspath(path)))
        return real_listdir(path)

    def counting_os_open(path, *a, **kw):
        opened.append(os.fspath(path))
        return real_os_open(path, *a, **kw)

    def counting_io_open(file, *a, **kw):
        if not isinstance(file, int):
            opened.append(os.fspath(file))
        return real_io_open(file, *a, **kw)

    def counting_mkdir(path, *a, **kw):
        made.append(os.fspath(path))
        return real_mkdir(path, *a, **kw)

    monkeypatch.setattr(os, "listdir", counting_listdir)
    monkeypatch.setattr(os, "open", counting_os_open)
    monkeypatch.setattr(io, "open", counting_io_open)
    monkeypatch.setattr(os, "mkdir", counting_mkdir)
    mgr = manager(d)
    mgr.load()
    monkeypatch.undo()

    for i in range(LOGS):
        assert listed.count(f"t-{i}") == 1, (i, listed)
        files = {os.path.basename(p) for p in opened if os.path.dirname(p) == str(d / f"t-{i}")}
        if i % 2:        # empty: nothing to read (no epoch file, no index file)
            assert files == set(), (i, files)
        else:            # the epoch checkpoint, the producer-state snapshot, the active
            # segment's indexes and the tail of its log (Kafka's clean load reads the same)
            assert files <= {FILE_NAME, f"{1:020d}.snapshot", f"{0:020d}.index",
                             f"{0:020d}.timeindex", f"{0:020d}.log"}, (i, files)
    assert not [p for p in made if os.path.dirname(p) == str(d)], made
    assert mgr.files.statistics()["open"] == 0       # nothing held open after the load
    for i in range(LOGS):
        log = mgr.get("t", i)
        assert log.log_end_offset == (1 if i % 2 == 0 else 0)
        assert log.epochs.entries() == ([(0, 0)] if i % 2 == 0 else [])
    mgr.shutdown()
