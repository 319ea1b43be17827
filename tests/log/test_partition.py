"""PartitionLog on real files: append/read across segments, indexes, timestamps, rolls."""
from __future__ import annotations

import os
import random

import pytest

from kbroker.log import LogConfig, OffsetOutOfRange, PartitionLog, RecordBatchTooLarge
from kbroker.log.segment import LogSegment
from kbroker.wire import records as rb
from kbroker.wire.errors import CorruptRecord, InvalidRecord

from .helpers import make_batch, random_batches, small_config, stored_batches

NOW = 2_000_000


def new_log(tmp_path, cfg=None, name="t-0", **kw):
    return PartitionLog(tmp_path / name, "t", 0, cfg or small_config(), now_ms=NOW, **kw)


def fill(log, seed=1, count=300, **kw):
    batches = random_batches(seed, count, **kw)
    for recs, expected in batches:
        info = log.append(make_batch(recs), now_ms=NOW)
        assert info.base_offset == rb.parse_header(expected).base_offset
        assert info.last_offset == info.base_offset + len(recs) - 1
    return batches


def linear_find(seg: LogSegment, offset: int):
    for pos, h, _ in seg.batches(0):
        if h.last_offset >= offset:
            return pos, h
    return None


def test_append_read_every_offset_across_segments(tmp_path):
    log = new_log(tmp_path)
    batches = fill(log)
    assert len(log.segments) > 10
    expected = [b for _, b in batches]
    assert [d for _, d in stored_batches(log)] == expected
    by_offset = {}
    for b in expected:
        h = rb.parse_header(b)
        for off in range(h.base_offset, h.next_offset):
            by_offset[off] = b
    assert log.log_end_offset == len(by_offset)
    for off in range(log.log_end_offset):
        region = log.read(off, 1)
        data = region.read_bytes()
        assert data == by_offset[off]  # exactly the whole batch holding the offset
        assert region.base_offset == rb.parse_header(data).base_offset
    assert log.read(log.log_end_offset, 1000) is None


def test_read_limits_whole_batches_and_max_offset(tmp_path):
    log = new_log(tmp_path, small_config(segment_bytes=1 << 20))
    batches = fill(log, count=50)
    sizes = [len(b) for _, b in batches]
    # One byte still yields the first whole batch (as Kafka with minOneMessage).
    assert log.read(0, 1).length == sizes[0]
    r = log.read(0, sizes[0] + sizes[1] + sizes[2] - 1)
    assert r.length == sizes[0] + sizes[1]
    data = r.read_bytes()
    assert [h.base_offset for _, h in rb.iter_batches(data)] == [0, rb.parse_header(batches[1][1]).base_offset]
    third = rb.parse_header(batches[2][1]).base_offset
    r = log.read(0, 1 << 20, max_offset=third)
    assert r.length == sizes[0] + sizes[1]
    assert log.read(third, 1 << 20, max_offset=third) is None
    with pytest.raises(OffsetOutOfRange):
        log.read(log.log_end_offset + 1, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_sendfile_region(tmp_path):
    log = new_log(tmp_path)
    fill(log, count=20)
    region = log.read(0, 10_000)
    out = tmp_path / "out"
    with open(out, "wb") as f:
        sent = 0
        while sent < region.length:
            sent += region.sendfile(f.fileno(), sent)
    assert out.read_bytes() == region.read_bytes()


def test_index_lookups_match_linear_scan(tmp_path):
    log = new_log(tmp_path, small_config(segment_bytes=64 * 1024, index_interval_bytes=300))
    fill(log, count=400)
    for seg in log.segments:
        entries = seg.offset_index.entries()
        assert entries, "index interval should have produced entries"
        for off, pos in entries:  # every entry names a real batch by its last offset
            h = seg.read_header(pos)
            assert h.last_offset == off
        for off in range(seg.base_offset, seg.next_offset):
            assert seg.find(off) == linear_find(seg, off)
        ts_entries = seg.time_index.entries()
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(ts_entries, ts_entries[1:]))


def test_offset_for_timestamp_matches_brute_force(tmp_path):
    log = new_log(tmp_path, small_config(segment_bytes=16 * 1024, index_interval_bytes=200))
    batches = fill(log, count=300)
    records = []
    for recs, b in batches:
        base = rb.parse_header(b).base_offset
        records += [(base + j, ts) for j, (_, _, ts) in enumerate(recs)]
    rng = random.Random(5)
    lo, hi = min(t for _, t in records), max(t for _, t in records)
    for target in [lo - 10, lo, hi, hi + 1] + [rng.randint(lo, hi) for _ in range(150)]:
        want = next(((o, t) for o, t in records if t >= target), None)
        assert log.offset_for_timestamp(target) == want, target
    max_ts = max(t for _, t in records)
    assert log.max_timestamp_offset() == next((o, t) for o, t in records if t == max_ts)


def test_roll_on_segment_bytes(tmp_path):
    cfg = small_config(segment_bytes=2000)
    log = new_log(tmp_path, cfg)
    fill(log, count=200)
    for seg in log.segments[:-1]:
        assert seg.size <= 2000
        assert seg.next_offset == log.segments[log.segments.index(seg) + 1].base_offset
    big = make_batch([(b"k", b"x" * 3000, NOW)])
    with pytest.raises(RecordBatchTooLarge):
        log.append(big, now_ms=NOW)


def test_roll_on_segment_ms_and_index_full(tmp_path):
    cfg = small_config(segment_bytes=1 << 20, segment_ms=1000)
    log = new_log(tmp_path, cfg)
    log.append(make_batch([(b"a", b"1", 10_000)]), now_ms=NOW)
    log.append(make_batch([(b"a", b"2", 10_900)]), now_ms=NOW)
    assert len(log.segments) == 1
    log.append(make_batch([(b"a", b"3", 11_001)]), now_ms=NOW)
    assert len(log.segments) == 2 and log.active_segment.base_offset == 2

    cfg = small_config(segment_bytes=1 << 20, index_interval_bytes=0, segment_index_bytes=8 * 4)
    log = new_log(tmp_path, cfg, name="t-1")
    for i in range(20):
        log.append(make_batch([(b"a", b"x", NOW)]), now_ms=NOW)
    assert len(log.segments) > 3
    assert all(len(s.offset_index) <= 4 for s in log.segments)


def test_bad_batches_refused_log_unchanged(tmp_path):
    log = new_log(tmp_path, small_config(max_message_bytes=2000))
    fill(log, count=30)
    before = {p.name: p.read_bytes() for p in log.dir.iterdir()}
    leo = log.log_end_offset
    good = bytearray(make_batch([(b"k", b"v" * 100, NOW)]))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    truncated = bytes(good[:-5])
    too_big = make_batch([(b"k", b"v" * 3000, NOW)])
    bad_magic = bytearray(good)
    bad_magic[16] = 7
    for bad, exc in [(bytes(bad_crc), CorruptRecord), (truncated, CorruptRecord),
                     (bytes(good) + bytes(bad_crc), CorruptRecord), (b"", InvalidRecord),
                     (bytes(bad_magic), CorruptRecord), (too_big, rb.RecordTooLarge)]:
        with pytest.raises(exc):
            log.append(bad, now_ms=NOW)
        assert log.log_end_offset == leo
        assert {p.name: p.read_bytes() for p in log.dir.iterdir()} == before
    # A compacted topic refuses records without keys.
    clog = new_log(tmp_path, small_config(cleanup_policy="compact"), name="c-0")
    with pytest.raises(InvalidRecord):
        clog.append(make_batch([(None, b"v", NOW)]), now_ms=NOW)
    assert clog.log_end_offset == 0 and clog.size == 0


def test_multi_batch_append_and_log_append_time(tmp_path):
    log = new_log(tmp_path, small_config(message_timestamp_type="LogAppendTime"))
    b1 = make_batch([(b"a", b"1", 5), (b"b", b"2", 6)])
    b2 = make_batch([(b"c", b"3", 7)])
    info = log.append(b1 + b2, leader_epoch=3, now_ms=NOW)
    assert info == (0, 2, NOW, 0)
    got = stored_batches(log)
    assert [h.base_offset for h, _ in got] == [0, 2]
    for h, data in got:
        rb.verify_crc(data)
        assert h.timestamp_type == rb.TIMESTAMP_LOG_APPEND_TIME and h.max_timestamp == NOW
        assert h.partition_leader_epoch == 3
        assert all(r.timestamp == NOW for r in rb.decode_records(data, 0, h))
    assert log.offset_for_timestamp(NOW) == (0, NOW)


def test_clean_reopen_reads_no_data_and_unclean_reads_only_past_recovery_point(tmp_path):
    log = new_log(tmp_path)
    batches = fill(log, count=200)
    log.flush(now_ms=NOW)
    rp = log.recovery_point
    assert rp == log.log_end_offset
    more = [make_batch([(b"x%d" % i, b"y" * 50, NOW)]) for i in range(10)]
    for b in more:
        log.append(b, now_ms=NOW)
    leo = log.log_end_offset
    log.close()
    log2 = new_log(tmp_path, recovery_point=leo, clean_shutdown=True)
    assert log2.log_end_offset == leo and log2.recovery_stats["bytes_recovered"] == 0
    assert len(stored_batches(log2)) == len(batches) + 10
    log2.close_without_flush()
    log3 = new_log(tmp_path, recovery_point=rp, clean_shutdown=False)
    assert log3.log_end_offset == leo
    i = max(0, [s.base_offset <= rp for s in log3.segments].count(True) - 1)
    tail = sum(s.size for s in log3.segments[i:])
    assert 0 < log3.recovery_stats["bytes_recovered"] <= tail < log3.size
    assert [d for _, d in stored_batches(log3)][: len(batches)] == [b for _, b in batches]


def test_missing_or_corrupt_index_is_rebuilt(tmp_path):
    log = new_log(tmp_path)
    fill(log, count=100)
    leo = log.log_end_offset
    log.close()
    seg_files = sorted(p for p in (tmp_path / "t-0").iterdir() if p.suffix == ".index")
    seg_files[0].unlink()
    seg_files[-1].write_bytes(b"\x00\x01\x02")  # not a multiple of the entry size
    log2 = new_log(tmp_path, recovery_point=leo, clean_shutdown=True)
    assert log2.log_end_offset == leo
    for off in range(leo):
        h = rb.parse_header(log2.read(off, 1).read_bytes())
        assert h.base_offset <= off <= h.last_offset


def test_flush_messages_one_fsyncs_each_append(tmp_path):
    log = new_log(tmp_path, small_config(flush_messages=1))
    for i in range(5):
        log.append(make_batch([(b"k", b"v", NOW)]), now_ms=NOW)
        assert log.recovery_point == log.log_end_offset
    log2 = new_log(tmp_path, small_config(flush_ms=100), name="t-1")
    log2.append(make_batch([(b"k", b"v", NOW)]), now_ms=NOW)
    assert log2.recovery_point == 0
    assert not log2.maybe_flush(NOW + 50)
    assert log2.maybe_flush(NOW + 100) and log2.recovery_point == 1


def test_truncate_to(tmp_path):
    log = new_log(tmp_path)
    batches = fill(log, count=100)
    cut = rb.parse_header(batches[60][1]).base_offset
    log.high_watermark = log.log_end_offset
    log.truncate_to(cut)
    assert log.log_end_offset == cut and log.high_watermark == cut
    assert [d for _, d in stored_batches(log)] == [b for _, b in batches[:60]]
    info = log.append(make_batch([(b"n", b"new", NOW)]), now_ms=NOW)
    assert info.base_offset == cut
    log.close()
    log2 = new_log(tmp_path, clean_shutdown=False)
    assert log2.log_end_offset == cut + 1
    log2.truncate_to(0)
    assert log2.log_end_offset == 0 and log2.size == 0


def test_file_region_survives_segment_deletion(tmp_path):
    log = new_log(tmp_path, small_config(file_delete_delay_ms=1000, retention_bytes=0))
    fill(log, count=100)
    log.high_watermark = log.log_end_offset
    region = log.read(0, 100)
    first = region.read_bytes()
    assert log.maybe_run_retention(NOW) > 0
    assert log.log_start_offset > 0
    assert not any(p.name.endswith(".log") and p.name.startswith("0" * 20) for p in log.dir.iterdir())
    assert region.read_bytes() == first  # descriptor still open within file.delete.delay.ms
    log.maybe_run_retention(NOW + 1000)
    assert not any(p.name.endswith(".deleted") for p in log.dir.iterdir())
    # the region holds its descriptor (kbroker.log.open_files): a transfer in flight
    # finishes; the descriptor is closed when the region goes
    assert region.read_bytes() == first
    fd = region.fd
    del region
    with pytest.raises(OSError):
        os.fstat(fd)


def _linear_region(seg: LogSegment, offset: int, max_bytes: int, max_offset):
    """The region a batch-by-batch scan gives: the batch holding ``offset``, then whole
    batches while they fit in ``max_bytes`` and start below ``max_offset``."""
    scan = [(pos, h) for pos, h, _ in seg.batches(0)]
    first = next((i for i, (_, h) in enumerate(scan) if h.last_offset >= offset), None)
    if first is None or (max_offset is not None and scan[first][1].base_offset >= max_offset):
        return None
    start, length = scan[first][0], scan[first][1].size
    for _, h in scan[first + 1:]:
        if length + h.size > max_bytes or (max_offset is not None and h.base_offset >= max_offset):
            break
        length += h.size
    return start, length


def test_regions_match_a_batch_by_batch_scan(tmp_path):
    # the region's end is found through the offset index, then batch by batch: the same
    # bytes as scanning every batch, for any start, size bound and offset bound
    log = new_log(tmp_path, small_config(segment_bytes=256 * 1024, index_interval_bytes=700))
    fill(log, count=400)
    rng = random.Random(7)
    for seg in log.segments:
        for _ in range(300):
            offset = rng.randrange(seg.base_offset, seg.next_offset)
            max_bytes = rng.choice([1, 100, 1000, 5000, 20_000, 1 << 20])
            max_offset = rng.choice([None, rng.randrange(seg.base_offset, seg.next_offset + 2)])
            assert seg.region(offset, max_bytes, max_offset) == \
                _linear_region(seg, offset, max_bytes, max_offset), (offset, max_bytes, max_offset)


@pytest.mark.parametrize("damage", ["magic", "short length"])
def test_find_stops_at_a_damaged_batch_as_a_batch_scan_does(tmp_path, damage):
    # find passes over the batches before the one it returns without decoding their whole
    # headers, yet stops at a damaged one exactly where a batch-by-batch scan stops
    log = new_log(tmp_path, small_config(segment_bytes=1 << 20, index_interval_bytes=1 << 20))
    for _ in range(10):
        log.append(make_batch([(None, b"v" * 100, NOW)]), now_ms=NOW)
    seg = log.segments[0]
    pos = [p for p, _, _ in seg.batches(0)][4]
    if damage == "magic":
        os.pwrite(seg.fd, bytes([7]), pos + 16)
    else:
        os.pwrite(seg.fd, (10).to_bytes(4, "big"), pos + 8)      # below the header's size
    assert seg.find(3) is not None and seg.find(5) is None
    for offset in range(9):          # the last batch is found without a scan (its tail)
        assert seg.find(offset) == linear_find(seg, offset), offset


def _count_preads(monkeypatch) -> list:
    """The sizes of the segment's ``pread`` calls from now on, in a list that grows."""
    reads = []
    real_pread = os.pread

    def counting_pread(fd, n, pos):
        reads.append(n)
        return real_pread(fd, n, pos)

    monkeypatch.setattr("kbroker.log.segment.os.pread", counting_pread)
    return reads


def test_a_long_region_reads_few_batch_headers(tmp_path, monkeypatch):
    # a consumer far behind on small batches: the region's batches are not read one by one
    log = new_log(tmp_path, small_config(segment_bytes=1 << 20, index_interval_bytes=4096))
    for i in range(500):
        log.append(make_batch([(None, b"v" * 1000, NOW)]), now_ms=NOW)
    seg = log.segments[0]
    reads = _count_preads(monkeypatch)
    start, length = seg.region(10, 400_000, None)
    assert length > 300 * 1000            # hundreds of batches in the region
    assert len(reads) <= 12               # the first batch's scan and a few after the index


def test_reading_the_batch_just_appended_reads_nothing_from_the_file(tmp_path, monkeypatch):
    # a consumer at the log end fetches the batch appended last: the segment remembers where
    # it is, so neither the offset index nor the file is read to find it (issue 32, the
    # woken Fetch of the 1,000 records/s latency row)
    log = new_log(tmp_path, small_config(segment_bytes=1 << 20, index_interval_bytes=4096))
    for _ in range(20):
        info = log.append(make_batch([(None, b"v" * 1000, NOW)]), now_ms=NOW)
    seg = log.segments[-1]
    reads = _count_preads(monkeypatch)
    region = log.read(info.last_offset, 1 << 20)
    assert reads == []
    assert (region.position, region.length) == _linear_region(seg, info.last_offset, 1 << 20, None)
    assert region.base_offset == info.base_offset
    # an older batch is still found through the index and a scan
    assert seg.find(info.base_offset - 3) == linear_find(seg, info.base_offset - 3)
    assert reads


def test_the_remembered_last_batch_is_the_one_on_disk(tmp_path):
    # LogAppendTime rewrites the timestamp type and CRC as the batch is stored: the header
    # find() answers with is the stored one; a truncation forgets it, the next append is
    # remembered, and every offset finds what a scan finds
    log = new_log(tmp_path, small_config(segment_bytes=1 << 20,
                                         message_timestamp_type="LogAppendTime"))
    for i in range(6):
        info = log.append(make_batch([(None, b"v%d" % i, NOW - 5), (None, b"w", NOW - 5)]),
                          now_ms=NOW)
    seg = log.segments[-1]
    pos, h = seg.find(info.last_offset)
    assert h == seg.read_header(pos)
    assert h.timestamp_type == rb.TIMESTAMP_LOG_APPEND_TIME and h.max_timestamp == NOW
    log.truncate_to(info.base_offset)
    assert seg.find(info.base_offset) is None
    assert seg.find(info.base_offset - 1) == linear_find(seg, info.base_offset - 1)
    again = log.append(make_batch([(None, b"x", NOW)]), now_ms=NOW)
    assert again.base_offset == info.base_offset
    for offset in range(seg.base_offset, again.last_offset + 1):
        assert seg.find(offset) == linear_find(seg, offset), offset
