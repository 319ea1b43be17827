"""The periodic offset checkpoints leave the event loop (issue 32: at 100,000 partitions
each file is a megabyte written and fsynced twice every period): the flush task builds them
on the trio thread and writes them from a worker thread, one at a time, and a content built
earlier never replaces a newer one. Counted on the real ``os.replace`` (which still runs)
by file name and thread."""
from __future__ import annotations

import os
import threading

import trio

from kbroker.log import LogConfig, LogManager
from kbroker.log import checkpoint as ckpt
from kbroker.log.tasks import run_background

from .helpers import make_batch

NOW = 7_000_000
FILES = (ckpt.RECOVERY_POINT, ckpt.LOG_START_OFFSET, ckpt.REPLICATION_OFFSET)


async def test_the_flush_task_writes_the_checkpoints_from_a_worker_thread(tmp_path, monkeypatch):
    # trio's real clock: a mock clock would jump while the loop waits for the worker thread
    def clock():
        return NOW + int(trio.current_time() * 1000)
    mgr = LogManager([tmp_path], LogConfig(), clock, checkpoint_interval_ms=20,
                     start_offset_checkpoint_interval_ms=20,
                     high_watermark_checkpoint_interval_ms=20)
    mgr.load()
    log = mgr.get_or_create("t", 0)
    log.append(make_batch([(b"k", b"v", NOW)] * 3), now_ms=NOW)
    log.high_watermark = 3
    replaced: list[tuple[str, int]] = []
    real_replace = os.replace

    def recording_replace(src, dst, *a, **kw):
        replaced.append((os.path.basename(os.fspath(dst)), threading.get_ident()))
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", recording_replace)
    trio_thread = threading.get_ident()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(lambda task_status: run_background(
                mgr, flush_interval_s=0.02, task_status=task_status))
            while not all(any(n == name for n, _ in replaced) for name in FILES):
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    monkeypatch.undo()
    written = [(n, t) for n, t in replaced if n in FILES]
    assert written and all(t != trio_thread for _, t in written), written
    assert ckpt.read_checkpoint(tmp_path / ckpt.REPLICATION_OFFSET) == {("t", 0): 3}
    assert ckpt.read_checkpoint(tmp_path / ckpt.RECOVERY_POINT) == {("t", 0): 0}
    mgr.shutdown()


def test_a_content_built_earlier_never_replaces_a_newer_one(tmp_path):
    mgr = LogManager([tmp_path], LogConfig(), lambda: NOW)
    mgr.load()
    log = mgr.get_or_create("t", 0)
    log.append(make_batch([(b"k", b"v", NOW)] * 3), now_ms=NOW)
    log.high_watermark = 1
    deferred = []
    mgr.checkpoint_high_watermarks(deferred=deferred)        # built, not written yet
    assert [job.path.name for job in deferred] == [ckpt.REPLICATION_OFFSET]
    log.high_watermark = 3
    mgr.checkpoint()                                          # a write of the trio thread
    path = tmp_path / ckpt.REPLICATION_OFFSET
    inode = os.stat(path).st_ino
    assert mgr.write_checkpoint_file(deferred[0]) is False    # overtaken: dropped
    assert os.stat(path).st_ino == inode
    assert ckpt.read_checkpoint(path) == {("t", 0): 3}
    # and a deferred content with nothing newer is written
    log.high_watermark = 2
    deferred.clear()
    mgr.checkpoint_high_watermarks(deferred=deferred)
    assert mgr.write_checkpoint_file(deferred[0]) is True
    assert ckpt.read_checkpoint(path) == {("t", 0): 2}
    mgr.shutdown()


def test_a_high_watermark_checkpoint_formats_only_the_entries_that_moved(tmp_path, monkeypatch):
    made = []
    real_line = ckpt.entry_line

    def counting_line(topic, partition, offset):
        made.append((topic, partition))
        return real_line(topic, partition, offset)

    real_lines = ckpt.log_lines

    def counting_lines(logs, offset):
        made.extend((lg.topic, lg.partition) for lg in logs)
        return real_lines(logs, offset)

    monkeypatch.setattr(ckpt, "entry_line", counting_line)
    monkeypatch.setattr(ckpt, "log_lines", counting_lines)
    mgr = LogManager([tmp_path], LogConfig(), lambda: NOW)
    mgr.load()
    logs = [mgr.get_or_create("t", i) for i in range(20)]
    for lg in logs:
        lg.append(make_batch([(b"k", b"v", NOW)] * 3), now_ms=NOW)
        lg.high_watermark = 1
    path = tmp_path / ckpt.REPLICATION_OFFSET
    made.clear()
    mgr.checkpoint_high_watermarks()
    assert len(made) == 20
    made.clear()
    logs[7].high_watermark = 3
    mgr.checkpoint_high_watermarks()
    assert made == [("t", 7)]
    assert ckpt.read_checkpoint(path) == {("t", i): 3 if i == 7 else 1 for i in range(20)}
    made.clear()
    mgr.checkpoint_high_watermarks()                          # nothing moved: not written
    assert made == []
    mgr.get_or_create("u", 0)                                 # another log: all made again
    made.clear()
    mgr.checkpoint_high_watermarks()
    assert len(made) == 21
    assert ckpt.read_checkpoint(path)[("u", 0)] == 0 and ckpt.read_checkpoint(path)[("t", 7)] == 3
    mgr.shutdown()
