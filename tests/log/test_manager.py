"""LogManager: load after clean and unclean shutdown, create/delete, maintenance loops."""
from __future__ import annotations

import trio

from kbroker.log import LogConfig, LogManager
from kbroker.log import checkpoint as ckpt
from kbroker.log.tasks import run_background

from .helpers import make_batch, stored_batches

NOW = 5_000_000


class Clock:
    def __init__(self, now=NOW):
        self.now = now

    def __call__(self):
        return self.now


def cfg(**kw):
    return LogConfig(segment_bytes=2048, index_interval_bytes=256, file_delete_delay_ms=0, **kw)


def fill(log, n=50):
    for i in range(n):
        log.append(make_batch([(b"k%d" % i, b"v" * 100, NOW)]), now_ms=NOW)
    log.high_watermark = log.log_end_offset


def test_clean_restart_is_trusted_and_unclean_restart_recovers(tmp_path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    clock = Clock()
    mgr = LogManager(dirs, cfg(), clock)
    mgr.load()
    logs = [mgr.get_or_create("topic-with-dash", p) for p in range(4)]
    assert {lg.dir.parent for lg in logs} == set(dirs)  # spread over the directories
    for lg in logs:
        fill(lg)
    contents = {(lg.topic, lg.partition): stored_batches(lg) for lg in logs}
    mgr.shutdown()
    for d in dirs:
        assert (d / ckpt.CLEAN_SHUTDOWN).exists()
        assert ckpt.read_checkpoint(d / ckpt.RECOVERY_POINT)

    mgr = LogManager(dirs, cfg(), clock)
    mgr.load()
    assert all(mgr.had_clean_shutdown.values())
    assert not any((d / ckpt.CLEAN_SHUTDOWN).exists() for d in dirs)
    for key, want in contents.items():
        lg = mgr.get(*key)
        assert lg.recovery_stats["bytes_recovered"] == 0
        assert stored_batches(lg) == want
    # Crash: no shutdown. Appends after the last checkpoint are re-validated on load.
    lg = mgr.get("topic-with-dash", 0)
    mgr.checkpoint()
    lg.append(make_batch([(b"late", b"x", NOW)]), now_ms=NOW)
    for log in mgr.all_logs():
        log.close_without_flush()
    mgr = LogManager(dirs, cfg(), clock)
    mgr.load()
    assert not any(mgr.had_clean_shutdown.values())
    lg = mgr.get("topic-with-dash", 0)
    assert lg.log_end_offset == 51
    assert 0 < lg.recovery_stats["bytes_recovered"] < lg.size
    mgr.shutdown()


def test_delete_log_and_config_update(tmp_path):
    clock = Clock()
    mgr = LogManager([tmp_path], cfg(), clock)
    mgr.load()
    lg = mgr.get_or_create("t", 0)
    fill(lg)
    region = lg.read(0, 10)
    assert mgr.delete_log("t", 0)
    assert mgr.get("t", 0) is None and not (tmp_path / "t-0").exists()
    assert region.read_bytes()  # still readable until the deletion delay passes
    mgr.run_retention(clock.now)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith("-delete")]
    lg2 = mgr.get_or_create("t", 0)
    assert lg2.log_end_offset == 0
    new = cfg(retention_ms=1)
    assert mgr.get_or_create("t", 0, new).config is new
    mgr.shutdown()


def test_run_retention_and_flush(tmp_path):
    clock = Clock()
    mgr = LogManager([tmp_path], cfg(retention_bytes=2048, flush_ms=1000), clock,
                     checkpoint_interval_ms=500)
    mgr.load()
    lg = mgr.get_or_create("t", 0)
    fill(lg, 100)
    before = len(lg.segments)
    assert mgr.run_retention(NOW) > 0 and len(lg.segments) < before
    assert mgr.run_flush(NOW + 500) == 0
    assert mgr.run_flush(NOW + 1000) == 1 and lg.recovery_point == lg.log_end_offset
    assert ckpt.read_checkpoint(tmp_path / ckpt.RECOVERY_POINT)[("t", 0)] == lg.log_end_offset
    assert ckpt.read_checkpoint(tmp_path / ckpt.LOG_START_OFFSET)[("t", 0)] == lg.log_start_offset
    mgr.shutdown()


def test_log_start_offsets_are_checkpointed_on_their_own_interval(tmp_path):
    """Kafka's log.flush.start.offset.checkpoint.interval.ms and
    log.flush.offset.checkpoint.interval.ms are two tasks with their own periods."""
    mgr = LogManager([tmp_path], cfg(), Clock(), checkpoint_interval_ms=1000,
                     start_offset_checkpoint_interval_ms=5000)
    mgr.load()
    lg = mgr.get_or_create("t", 0)
    fill(lg, 50)
    mgr.run_flush(NOW)                   # both due at the first sweep
    assert ckpt.read_checkpoint(tmp_path / ckpt.LOG_START_OFFSET)[("t", 0)] == 0
    assert lg.maybe_increment_log_start_offset(10, now_ms=NOW)
    start = lg.log_start_offset
    assert start == 10
    lg.flush(now_ms=NOW)                 # the recovery point moves to the log end
    mgr.run_flush(NOW + 1000)            # the recovery points only
    assert ckpt.read_checkpoint(tmp_path / ckpt.RECOVERY_POINT)[("t", 0)] == lg.log_end_offset
    assert ckpt.read_checkpoint(tmp_path / ckpt.LOG_START_OFFSET)[("t", 0)] == 0
    mgr.run_flush(NOW + 5000)            # now the log start offsets too
    assert ckpt.read_checkpoint(tmp_path / ckpt.LOG_START_OFFSET)[("t", 0)] == start
    mgr.shutdown()


async def test_background_tasks_run_under_trio(tmp_path, autojump_clock):
    clock = Clock()
    mgr = LogManager([tmp_path], cfg(flush_ms=0), clock)
    mgr.load()
    lg = mgr.get_or_create("t", 0)
    fill(lg, 10)
    async with trio.open_nursery() as nursery:
        await nursery.start(run_background, mgr)
        await trio.sleep(1.5)
        nursery.cancel_scope.cancel()
    assert lg.recovery_point == lg.log_end_offset
    mgr.shutdown()


async def test_the_first_retention_pass_comes_after_the_initial_task_delay(tmp_path, autojump_clock):
    """Kafka's log manager schedules retention log.initial.task.delay.ms (30 s) after its
    start, then every log.retention.check.interval.ms (5 min)."""
    mgr = LogManager([tmp_path], cfg(retention_bytes=2048), Clock())
    mgr.load()
    lg = mgr.get_or_create("t", 0)
    fill(lg, 100)
    before = len(lg.segments)
    async with trio.open_nursery() as nursery:
        await nursery.start(lambda task_status: run_background(
            mgr, retention_interval_s=300, initial_delay_s=30, task_status=task_status))
        await trio.sleep(29.9)
        assert len(lg.segments) == before
        await trio.sleep(0.2)
        assert len(lg.segments) < before
        fill(lg, 100)
        grown = len(lg.segments)
        await trio.sleep(299.8)
        assert len(lg.segments) == grown        # the next pass: one interval later
        await trio.sleep(0.2)
        assert len(lg.segments) < grown
        nursery.cancel_scope.cancel()
    mgr.shutdown()


async def test_flush_ms_is_looked_at_every_log_flush_scheduler_interval_below_a_second(tmp_path, autojump_clock):
    """log.flush.scheduler.interval.ms is how often Kafka's flusher looks for logs past
    flush.ms; kbroker looks at least every second (Kafka's default, never, is not kept)."""
    from kbroker.log.tasks import flush_check_interval_s
    assert flush_check_interval_s((1 << 63) - 1) == 1.0 and flush_check_interval_s(0) == 1.0
    for scheduler_ms, flushed_by in ((100, 0.25), (None, 1.05)):
        d = tmp_path / str(scheduler_ms)
        mgr = LogManager([d], cfg(flush_ms=100), lambda: NOW + int(trio.current_time() * 1000))
        mgr.load()
        lg = mgr.get_or_create("t", 0)
        async with trio.open_nursery() as nursery:
            await nursery.start(lambda task_status: run_background(
                mgr, flush_interval_s=flush_check_interval_s(scheduler_ms),
                task_status=task_status))
            fill(lg, 10)
            await trio.sleep(0.25)
            assert (lg.recovery_point == lg.log_end_offset) == (flushed_by < 0.3)
            await trio.sleep(flushed_by)
            assert lg.recovery_point == lg.log_end_offset == 10
            nursery.cancel_scope.cancel()
        mgr.shutdown()


def test_checkpoint_file_format(tmp_path):
    path = tmp_path / "cp"
    ckpt.write_checkpoint(path, {("a-b", 3): 17, ("c", 0): 0})
    assert path.read_text() == "0\n2\na-b 3 17\nc 0 0\n"
    assert ckpt.read_checkpoint(path) == {("a-b", 3): 17, ("c", 0): 0}
    assert ckpt.read_checkpoint(tmp_path / "missing") == {}


def test_move_log_between_directories_and_crash_points(tmp_path):
    """move_log (AlterReplicaLogDirs): the moved log keeps its batches, offsets and producer
    state and takes appends; the source directory is retired. A crash before the source was
    retired keeps the source (the copy is dropped); after, the copy is promoted."""
    import shutil
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    clock = Clock()
    mgr = LogManager(dirs, cfg(), clock)
    mgr.load()
    log = mgr.get_or_create("mv", 0)
    src = log.dir.parent
    dst = next(d for d in dirs if d != src)
    fill(log, 30)
    before = stored_batches(log)
    moved = mgr.move_log("mv", 0, dst)
    assert moved.dir == dst / "mv-0" and mgr.get("mv", 0) is moved and log.closed
    assert stored_batches(moved) == before
    assert (moved.log_end_offset, moved.high_watermark) == (30, 30)
    assert not (src / "mv-0").exists()
    moved.append(make_batch([(b"k", b"after", NOW)]), now_ms=NOW)
    assert mgr.move_log("mv", 0, dst) is moved            # already there: nothing to do
    mgr.run_retention(NOW + 1)                            # the retired source is removed
    assert not [p for p in src.iterdir() if p.name.startswith("mv-0")]
    mgr.shutdown()

    # a crash with a complete copy and the source still live: the copy is dropped
    shutil.copytree(dst / "mv-0", src / "mv-0.0123-future")
    mgr = LogManager(dirs, cfg(), clock)
    mgr.load()
    assert mgr.get("mv", 0).dir == dst / "mv-0" and not (src / "mv-0.0123-future").exists()
    assert mgr.get("mv", 0).log_end_offset == 31
    mgr.shutdown()
    # a crash after the source was retired: the copy becomes the log
    shutil.copytree(dst / "mv-0", src / "mv-0.0456-future")
    (dst / "mv-0").rename(dst / "mv-0.0789-delete")
    mgr = LogManager(dirs, cfg(), clock)
    mgr.load()
    promoted = mgr.get("mv", 0)
    assert promoted.dir == src / "mv-0" and promoted.log_end_offset == 31
    assert stored_batches(promoted)[:len(before)] == before
    mgr.shutdown()


def test_offline_dir_is_dropped_and_recovered_on_the_next_start(tmp_path):
    """``mark_offline`` (a failed log dir): its logs are closed and dropped, new logs go to
    the online dirs, and neither checkpoints nor the clean-shutdown marker are written there,
    so the next start recovers its logs as after a crash."""
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    mgr = LogManager([d1, d2], cfg(), Clock())
    mgr.load()
    logs = [mgr.get_or_create("t", p) for p in range(4)]
    for lg in logs:
        fill(lg, 5)
    mgr.checkpoint()
    in_d2 = sorted((lg.topic, lg.partition) for lg in logs if lg.dir.parent == d2)
    assert in_d2
    before = (d2 / ckpt.RECOVERY_POINT).read_bytes()
    assert sorted(mgr.mark_offline(d2)) == in_d2
    assert mgr.online_dirs == [d1]
    assert all(mgr.get(*key) is None for key in in_d2)
    assert all(lg.closed for lg in logs if lg.dir.parent == d2)
    assert mgr.get_or_create("new", 0).dir.parent == d1
    mgr.shutdown()
    assert (d1 / ckpt.CLEAN_SHUTDOWN).exists() and not (d2 / ckpt.CLEAN_SHUTDOWN).exists()
    assert (d2 / ckpt.RECOVERY_POINT).read_bytes() == before

    mgr = LogManager([d1, d2], cfg(), Clock())
    mgr.load()
    assert mgr.had_clean_shutdown == {d1: True, d2: False}
    assert all(mgr.get(*key).log_end_offset == 5 for key in in_d2)
    mgr.shutdown()
