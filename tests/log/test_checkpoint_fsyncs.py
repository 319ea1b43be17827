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

    # a restart on the now formatted directory writes every checkpoint durably again
    synced.clear()
    mgr = LogManager([d], LogConfig(), lambda: NOW)
    mgr.load()
    for name in CHECKPOINTS:
        assert f"{name}.tmp" in synced, (name, synced)
    mgr.shutdown()
