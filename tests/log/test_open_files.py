"""Segment files are opened on use, at most a bound at a time (issue 32: 100,000 partitions).

Real logs on real files; what is counted is the process's own descriptors under the log
directory (``/proc/self/fd``), so an open that bypassed the bound would show.
"""
from __future__ import annotations

import os

from kbroker.log import LogConfig, LogManager

from .helpers import make_batch

NOW = 5_000_000


def cfg() -> LogConfig:
    # small segments and a dense index: every log has several segments and index files
    return LogConfig(segment_bytes=1024, index_interval_bytes=128, file_delete_delay_ms=0)


def open_under(path) -> int:
    """Descriptors of this process on files under ``path``."""
    prefix, n = str(path), 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(prefix):
                n += 1
        except OSError:
            continue
    return n


def fill(log, key: bytes, n: int = 12) -> None:
    for i in range(n):
        log.append(make_batch([(key, b"%s-%d" % (key, i) + b"v" * 100, NOW)]), now_ms=NOW)
    log.high_watermark = log.log_end_offset


def values(log) -> list[bytes]:
    from kbroker.wire import records as rb
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).read_bytes()
        for pos, h in rb.iter_batches(data):
            out.extend(r.value for r in rb.decode_records(data, pos, h) if r.offset >= offset)
            offset = h.next_offset
    return out


def test_many_logs_stay_within_the_bound_and_read_back(tmp_path):
    data = tmp_path / "data"
    mgr = LogManager([data], cfg(), lambda: NOW, max_open_files=8)
    mgr.load()
    logs = [mgr.get_or_create("t", p) for p in range(40)]
    assert open_under(data) == 0                 # creating a log keeps nothing open
    for p, log in enumerate(logs):
        fill(log, b"p%d" % p)
        assert len(log.segments) > 1
        assert open_under(data) <= 8
    assert mgr.files.statistics()["evictions"] > 0
    # every log reads back whole after its files were closed and opened again
    for p, log in enumerate(logs):
        assert values(log) == [b"p%d-%d" % (p, i) + b"v" * 100 for i in range(12)]
        assert open_under(data) <= 8
    mgr.shutdown()
    assert open_under(data) == 0


def test_a_restart_leaves_idle_partitions_without_descriptors(tmp_path):
    data = tmp_path / "data"
    mgr = LogManager([data], cfg(), lambda: NOW, max_open_files=8)
    mgr.load()
    for p in range(30):
        fill(mgr.get_or_create("t", p), b"p%d" % p)
    mgr.shutdown()

    again = LogManager([data], cfg(), lambda: NOW, max_open_files=8)
    again.load()
    assert again.had_clean_shutdown[data]
    assert open_under(data) == 0                 # recovery let go of what it read
    log = again.get("t", 7)
    assert values(log) == [b"p7-%d" % i + b"v" * 100 for i in range(12)]
    assert 1 <= open_under(data) <= 8
    opens = again.files.statistics()["opens"]
    again.shutdown()                             # closing idle logs opens and fsyncs nothing
    assert again.files.statistics()["opens"] == opens
    assert open_under(data) == 0


def test_a_region_in_flight_keeps_its_file_open_through_evictions(tmp_path):
    data = tmp_path / "data"
    mgr = LogManager([data], cfg(), lambda: NOW, max_open_files=4)
    mgr.load()
    first = mgr.get_or_create("t", 0)
    fill(first, b"first")
    region = first.read(0, 1 << 20)
    expected = region.read_bytes()
    for p in range(1, 20):                       # enough traffic elsewhere to evict it
        fill(mgr.get_or_create("t", p), b"p%d" % p)
    assert not first.segments[0].holds_descriptor
    assert region.read_bytes() == expected       # what a sendfile in flight reads
    fd = region.fd
    del region
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = None
    assert target is None or not target.startswith(str(first.dir))
    mgr.shutdown()
