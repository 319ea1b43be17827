"""The log layer's failure channel on its own (kbroker/log/failure.py): a LogManager over two
log dirs, the second a 1 MiB tmpfs the test fills (tests/support/tmpfs.py), and a listener
that records what it is told -- the replica layer's place."""
from __future__ import annotations

import errno
import os

import pytest

from kbroker.log import KafkaStorageError, LogConfig, LogManager
from tests.support.tmpfs import fill, tmpfs

from .helpers import make_batch


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def batch(value: bytes) -> bytes:
    return make_batch([(None, value, 1_000_000)])


@pytest.fixture
def dirs(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    with tmpfs(bad):
        yield good, bad


def test_a_storage_error_fails_its_dir_once_and_for_good(dirs):
    good, bad = dirs
    clock = Clock()
    mgr = LogManager([good, bad], LogConfig(), clock)
    mgr.load()
    told = []
    mgr.failures.listen(lambda d, what, cause: told.append((d, what, cause.errno)))
    try:
        logs = {d: mgr.get_or_create(f"t{i}", 0) for i, d in enumerate((good, bad))}
        assert {d: lg.dir.parent for d, lg in logs.items()} == {good: good, bad: bad}
        for lg in logs.values():
            lg.append(batch(b"a"))
        fill(bad / "filler")
        clock.now += 60_000
        mgr.run_flush()                        # the checkpoint is due
        assert told == [(bad, "write the offset checkpoints", errno.ENOSPC)]
        assert mgr.offline_dirs == {bad} and mgr.online_dirs == [good]
        # failed until the process restarts: refused without touching the disk, even with
        # space again, and never reported twice
        (bad / "filler").unlink()
        size = os.path.getsize(logs[bad].segments[-1].log_path)
        with pytest.raises(KafkaStorageError) as e:
            logs[bad].append(batch(b"b"))
        assert e.value.log_dir == bad
        assert os.path.getsize(logs[bad].segments[-1].log_path) == size
        clock.now += 60_000
        mgr.run_flush()
        assert len(told) == 1
        assert mgr.get_or_create("new", 0).dir.parent == good
        logs[good].append(batch(b"b"))
        assert logs[good].log_end_offset == 2
    finally:
        mgr.shutdown()


def test_other_os_errors_are_not_the_disks(tmp_path):
    """An error that says the broker is wrong (here EBADF: the segment's descriptor was made
    read-only) goes up unchanged and fails no directory; the append is undone."""
    mgr = LogManager([tmp_path / "d"], LogConfig(), Clock())
    mgr.load()
    told = []
    mgr.failures.listen(lambda *a: told.append(a))
    try:
        log = mgr.get_or_create("t", 0)
        log.append(batch(b"a"))
        seg = log.segments[-1]
        size = os.path.getsize(seg.log_path)
        ro = os.open(seg.log_path, os.O_RDONLY)
        os.dup2(ro, seg.fd)
        os.close(ro)
        with pytest.raises(OSError) as e:
            log.append(batch(b"b"))
        assert e.value.errno == errno.EBADF and not isinstance(e.value, KafkaStorageError)
        assert told == [] and mgr.offline_dirs == set()
        assert os.path.getsize(seg.log_path) == size and log.log_end_offset == 1
    finally:
        mgr.shutdown()
