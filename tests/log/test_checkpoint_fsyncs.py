"""Which checkpoint writes are made durable (start-up cost, issue 32): the empty offset
checkpoints a fresh log directory gets at its first load are written without fsyncs (a
missing, truncated or whole empty checkpoint all read as "no entries"), every other
checkpoint write -- entries, or a file that exists -- keeps its two fsyncs. Counted on the
real ``os.fsync`` (which still runs) by the name of the file or directory synced."""
from __future__ import annotations

import pytest

from kbroker.log import LogConfig, LogManager
from kbroker.log import checkpoint as ckpt
from tests.support.fsyncs import record_fsyncs

from .helpers import make_batch

NOW = 5_000_000
CHECKPOINTS = {ckpt.RECOVERY_POINT, ckpt.LOG_START_OFFSET, ckpt.CLEANER_OFFSET,
               ckpt.REPLICATION_OFFSET}


@pytest.fixture
def synced(monkeypatch) -> list[str]:
    """Names (file or directory basename) of every fsync, in order; the fsync still runs."""
    return record_fsyncs(monkeypatch)


def test_fresh_directory_gets_its_empty_checkpoints_without_fsyncs(tmp_path, synced):
    d = tmp_path / "d"
    mgr = LogManager([d], LogConfig(), lambda: NOW)
    mgr.load()
    assert {p.name for p in d.iterdir()} >= CHECKPOINTS      # written all the same
    for name in CHECKPOINTS:
        assert ckpt.read_checkpoint(d / name) == {}
    assert not [n for n in synced if n.startswith(tuple(CHECKPOINTS))], synced
    assert "d" not in synced, synced                          # nor the directory
    mgr.shutdown()


def test_checkpoints_with_entries_or_replacing_a_file_are_synced(tmp_path, synced):
    d = tmp_path / "d"
    mgr = LogManager([d], LogConfig(), lambda: NOW)
    mgr.load()
    log = mgr.get_or_create("t", 0)
    log.append(make_batch([(b"k", b"v", NOW)]), now_ms=NOW)
    log.flush()
    synced.clear()
    mgr.checkpoint()
    # three files name the log; the cleaner's stays empty but replaces an existing file
    for name in CHECKPOINTS:
        assert f"{name}.tmp" in synced, (name, synced)
    assert synced.count("d") == len(CHECKPOINTS)
    assert ckpt.read_checkpoint(d / ckpt.RECOVERY_POINT) == {("t", 0): log.recovery_point}
    mgr.shutdown()


def _one_log_stopped(d, *, clean: bool) -> None:
    mgr = LogManager([d], LogConfig(), lambda: NOW)
    mgr.load()
    log = mgr.get_or_create("t", 0)
    log.append(make_batch([(b"k", b"v", NOW)]), now_ms=NOW)
    if clean:
        mgr.shutdown()
    else:
        mgr.checkpoint()
        for lg in list(mgr._logs.values()):
            lg.close_without_flush()     # a crash: no clean-shutdown marker


def test_a_restart_after_a_clean_stop_leaves_the_checkpoints_as_they_are(tmp_path, synced):
    """The clean stop synced every checkpoint before its marker: a restart whose checkpoints
    would say the same writes none of them (two fsyncs each), only the marker's removal is
    synced."""
    d = tmp_path / "d"
    _one_log_stopped(d, clean=True)
    before = {name: (d / name).read_bytes() for name in CHECKPOINTS}
    synced.clear()
    mgr = LogManager([d], LogConfig(), lambda: NOW)
    mgr.load()
    assert not [n for n in synced if n.startswith(tuple(CHECKPOINTS))], synced
    assert synced == ["d"]                                   # the marker's removal
    assert {name: (d / name).read_bytes() for name in CHECKPOINTS} == before
    assert not (d / ckpt.CLEAN_SHUTDOWN).exists()
    # a checkpoint that says something else than the logs (here: a partition no longer
    # there) is written again, durably
    mgr.shutdown()
    (d / ckpt.LOG_START_OFFSET).write_bytes(b"0\n2\nt 0 0\ngone 0 0\n")
    synced.clear()
    mgr = LogManager([d], LogConfig(), lambda: NOW)
    mgr.load()
    assert f"{ckpt.LOG_START_OFFSET}.tmp" in synced, synced
    assert ckpt.read_checkpoint(d / ckpt.LOG_START_OFFSET) == {("t", 0): 0}
    assert not [n for n in synced if n.startswith(tuple(CHECKPOINTS - {ckpt.LOG_START_OFFSET}))]
    mgr.shutdown()


def test_a_restart_after_a_crash_writes_every_checkpoint_durably_again(tmp_path, synced):
    d = tmp_path / "d"
    _one_log_stopped(d, clean=False)
    synced.clear()
    mgr = LogManager([d], LogConfig(), lambda: NOW)
    mgr.load()
    for name in CHECKPOINTS:
        assert f"{name}.tmp" in synced, (name, synced)
    mgr.shutdown()
