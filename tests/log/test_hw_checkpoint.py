"""High watermarks in replication-offset-checkpoint, and the leader-epoch cache and high
watermark after clean and SIGKILL restarts of a LogManager."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbroker.log import LogConfig, LogManager
from kbroker.log import checkpoint as ckpt
from kbroker.log.epoch_cache import FILE_NAME, LeaderEpochCache
from kbroker.wire import records as rb

from .crash_helpers import crash_batches
from .helpers import make_batch, stored_batches
from .crash_writer import epoch_of

ROOT = Path(__file__).resolve().parents[2]
NOW = 2_000_000


def manager(tmp_path, **kw) -> LogManager:
    return LogManager([tmp_path], LogConfig(segment_bytes=4096, index_interval_bytes=256), lambda: NOW, **kw)


def batch(i: int, n: int = 3) -> bytes:
    return make_batch([(b"k%d" % j, b"v%d" % i * 20, NOW) for j in range(n)])


def test_high_watermark_survives_clean_restart(tmp_path):
    mgr = manager(tmp_path)
    mgr.load()
    a, b = mgr.get_or_create("a", 0), mgr.get_or_create("b", 3)
    for i in range(10):
        a.append(batch(i), leader_epoch=1, now_ms=NOW)
        b.append(batch(i), leader_epoch=2, now_ms=NOW)
    a.high_watermark, b.high_watermark = 12, 30
    mgr.shutdown()
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {("a", 0): 12, ("b", 3): 30}
    mgr2 = manager(tmp_path)
    mgr2.load()
    assert mgr2.get("a", 0).high_watermark == 12
    assert mgr2.get("b", 3).high_watermark == 30
    assert mgr2.get("a", 0).epochs.entries() == [(1, 0)]
    assert mgr2.get("b", 3).epochs.entries() == [(2, 0)]
    mgr2.shutdown()


def test_periodic_checkpoint_writes_high_watermarks(tmp_path):
    mgr = manager(tmp_path, high_watermark_checkpoint_interval_ms=10)
    mgr.load()
    log = mgr.get_or_create("a", 0)
    log.append(batch(0), now_ms=NOW)
    log.high_watermark = 2
    mgr.run_flush(NOW + 100)
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {("a", 0): 2}
    mgr.shutdown()


def test_checkpoint_period_ignores_wall_clock_steps(tmp_path):
    """The period runs on the ticker (monotonic): the wall clock stepping forward and back
    (NTP) neither holds a checkpoint back nor brings one early."""
    wall, tick = [NOW], [0]
    mgr = LogManager([tmp_path], LogConfig(segment_bytes=4096), lambda: wall[0],
                     high_watermark_checkpoint_interval_ms=1000, ticker=lambda: tick[0])
    mgr.load()
    log = mgr.get_or_create("a", 0)
    log.append(batch(0), now_ms=NOW)
    log.high_watermark = 1
    wall[0] += 600_000                     # forward by ten minutes: no period has passed
    mgr.run_flush()
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET).get(("a", 0)) != 1
    tick[0] += 1000
    mgr.run_flush()
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {("a", 0): 1}
    wall[0] -= 600_000                     # and back: the next period still writes
    log.high_watermark = 3
    tick[0] += 1000
    mgr.run_flush()
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {("a", 0): 3}
    mgr.shutdown()


def test_high_watermarks_have_their_own_period_and_a_crash_reads_the_last_one_back(tmp_path):
    """Kafka's replica.high.watermark.checkpoint.interval.ms (5 s) is a task of its own,
    apart from log.flush.offset.checkpoint.interval.ms (60 s): a node killed a few seconds
    after its high watermark moved reads that high watermark back, not a minute-old one."""
    tick = [0]
    mgr = LogManager([tmp_path], LogConfig(segment_bytes=4096), lambda: NOW,
                     ticker=lambda: tick[0])                 # Kafka's defaults: 60 s and 5 s
    mgr.load()
    log = mgr.get_or_create("a", 0)
    for i in range(4):
        log.append(batch(i), now_ms=NOW)                     # log end 12
    log.high_watermark = 6
    tick[0] += 5_000
    mgr.run_flush()
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {("a", 0): 6}
    # the recovery points keep their own minute
    assert ("a", 0) not in ckpt.read_checkpoint(tmp_path / ckpt.RECOVERY_POINT)
    log.high_watermark = 9
    tick[0] += 4_999
    mgr.run_flush()
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {("a", 0): 6}
    tick[0] += 1
    mgr.run_flush()
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {("a", 0): 9}
    # killed here (no shutdown, no clean-shutdown marker): the next start reads 9 back
    assert not (tmp_path / ckpt.CLEAN_SHUTDOWN).exists()
    again = manager(tmp_path)
    again.load()
    assert again.get("a", 0).log_end_offset == 12
    assert again.get("a", 0).high_watermark == 9
    again.shutdown()


def test_an_unchanged_high_watermark_checkpoint_is_not_rewritten(tmp_path):
    """Every period the file is written again only if a high watermark moved (for 100,000
    partitions a write costs some 450 M instructions on the trio thread)."""
    tick = [0]
    mgr = LogManager([tmp_path], LogConfig(segment_bytes=4096), lambda: NOW,
                     ticker=lambda: tick[0])
    mgr.load()
    log = mgr.get_or_create("a", 0)
    log.append(batch(0), now_ms=NOW)
    log.high_watermark = 3
    path = tmp_path / ckpt.REPLICATION_OFFSET
    tick[0] += 5_000
    mgr.run_flush()
    written = os.stat(path).st_ino              # each write replaces the file (a rename)
    tick[0] += 5_000
    mgr.run_flush()
    assert os.stat(path).st_ino == written and ckpt.read_checkpoint(path) == {("a", 0): 3}
    mgr.get_or_create("b", 0)                    # a new partition is a change
    tick[0] += 5_000
    mgr.run_flush()
    assert ckpt.read_checkpoint(path) == {("a", 0): 3, ("b", 0): 0}
    written = os.stat(path).st_ino
    log.high_watermark = 2
    tick[0] += 5_000
    mgr.run_flush()
    assert os.stat(path).st_ino != written
    assert ckpt.read_checkpoint(path) == {("a", 0): 2, ("b", 0): 0}
    mgr.shutdown()


def test_checkpointed_high_watermark_is_capped(tmp_path):
    mgr = manager(tmp_path)
    mgr.load()
    log = mgr.get_or_create("a", 0)
    for i in range(4):
        log.append(batch(i), now_ms=NOW)                 # log end 12
    log.high_watermark = 12
    assert log.delete_records_before(6, now_ms=NOW) == 6
    mgr.shutdown()
    for hw, want in ((100, 12), (3, 6), (9, 9)):
        ckpt.write_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET, {("a", 0): hw})
        (tmp_path / ckpt.CLEAN_SHUTDOWN).touch()
        m = manager(tmp_path)
        m.load()
        assert m.get("a", 0).log_start_offset == 6
        assert m.get("a", 0).high_watermark == want, hw
        m.shutdown()


def test_without_an_entry_the_old_rule_applies(tmp_path):
    mgr = manager(tmp_path)
    mgr.load()
    log = mgr.get_or_create("a", 0)
    log.append(batch(0), now_ms=NOW)
    log.high_watermark = 1
    mgr.shutdown()
    (tmp_path / ckpt.REPLICATION_OFFSET).unlink()
    m = manager(tmp_path)
    m.load()
    assert m.get("a", 0).high_watermark == 3        # clean shutdown: the log end
    m.shutdown()


def test_metadata_log_is_not_checkpointed(tmp_path):
    mgr = manager(tmp_path)
    mgr.load()
    meta = mgr.get_or_create("__cluster_metadata", 0)
    meta.append(batch(0), leader_epoch=1, now_ms=NOW)
    meta.high_watermark = 1
    mgr.shutdown()
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {}
    # even a stale entry for it is not applied
    ckpt.write_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET, {("__cluster_metadata", 0): 1})
    m = manager(tmp_path)
    m.load()
    assert m.get("__cluster_metadata", 0).high_watermark == 3
    assert m.get("__cluster_metadata", 0).epochs.entries() == [(1, 0)]
    m.shutdown()


def expected_epochs(log) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for h, _ in stored_batches(log):
        if h.partition_leader_epoch >= 0 and (not out or out[-1][0] != h.partition_leader_epoch):
            out.append((h.partition_leader_epoch, h.base_offset))
    return out


@pytest.mark.parametrize("seed,flush", [(s, f) for s in range(3) for f in (0, 1)])
def test_sigkill_restores_epochs_and_high_watermark(tmp_path, seed, flush):
    rng = random.Random(seed * 7 + flush)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.log.crash_writer", str(tmp_path), str(seed), str(flush),
         "epochs"],
        cwd=ROOT, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    acked = -1
    want = rng.randint(60, 150)
    try:
        while acked < want:
            line = proc.stdout.readline()
            assert line, "writer died"
            acked = int(line.split()[0])
        time.sleep(rng.random() * 0.02)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (tmp_path / ckpt.CLEAN_SHUTDOWN).exists()
    checkpointed = ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET).get(("crash", 0))
    mgr = LogManager([tmp_path], LogConfig(segment_bytes=256 * 1024), lambda: NOW)
    mgr.load()
    log = mgr.get("crash", 0)
    stored = stored_batches(log)
    # the stored batches are the written ones, stamped with their epoch (outside the CRC)
    assert [d[:12] + d[16:] for _, d in stored] == \
        [b[:12] + b[16:] for _, b in crash_batches(seed, len(stored))]
    assert [h.partition_leader_epoch for h, _ in stored] == [epoch_of(i) for i in range(len(stored))]
    if flush:
        assert len(stored) >= acked + 1          # every acknowledged batch was fsynced
    if checkpointed is None:                     # killed before the first checkpoint
        assert log.high_watermark == log.log_end_offset
    else:
        assert log.high_watermark == min(checkpointed, log.log_end_offset)
    assert log.epochs.entries() == expected_epochs(log)
    assert [e for e, _ in log.epochs.entries()] == sorted({epoch_of(i) for i in range(len(stored))})
    assert LeaderEpochCache(log.dir).entries() == log.epochs.entries()
    # appends continue in a new epoch and a clean restart keeps all of it
    log.assign_epoch_start(1000, log.log_end_offset)
    log.append(batch(1), leader_epoch=1000, now_ms=NOW)
    log.high_watermark = log.log_end_offset
    entries, leo = log.epochs.entries(), log.log_end_offset
    mgr.shutdown()
    mgr2 = LogManager([tmp_path], LogConfig(segment_bytes=256 * 1024), lambda: NOW)
    mgr2.load()
    again = mgr2.get("crash", 0)
    assert again.epochs.entries() == entries and entries[-1] == (1000, leo - 3)
    assert again.high_watermark == leo
    mgr2.shutdown()


def test_cache_file_is_in_the_partition_directory(tmp_path):
    mgr = manager(tmp_path)
    mgr.load()
    log = mgr.get_or_create("a", 0)
    assert not (log.dir / FILE_NAME).exists()   # a new log writes it with its first epoch
    log.append(batch(0), leader_epoch=3, now_ms=NOW)
    assert (log.dir / FILE_NAME).read_text() == "0\n1\n3 0\n"
    mgr.shutdown()
    assert rb.parse_header(next(iter(stored_batches_dir(tmp_path / "a-0")))).partition_leader_epoch == 3


def stored_batches_dir(d: Path):
    for f in sorted(d.glob("*.log")):
        data = f.read_bytes()
        for pos, h in rb.iter_batches(data):
            yield data[pos:pos + h.size]
