"""``PartitionLog.append`` given the batch's parsed header (the produce path parses it once,
issue 32) stores exactly what the append without it stores: the same files byte for byte
(log, offset and time index), the same answers, producer state and rolls; a header that
does not describe the bytes is caught by the same checks; and the header a segment keeps
for its last batch is the one the file holds."""
from __future__ import annotations

import random

import pytest

from kbroker.log import PartitionLog
from kbroker.wire import records as rb
from kbroker.wire.errors import CorruptRecord

from .helpers import small_config

T0 = 1_700_000_000_000


def batches(seed: int, count: int) -> list[bytes]:
    """Client batches of 1–12 records: plain, idempotent (one producer, sequences in order,
    epoch bumps), transactional, compressed; timestamps rise, sometimes stay or go back."""
    rng = random.Random(seed)
    out, seq, epoch, ts = [], 0, 0, T0
    for i in range(count):
        n = rng.randint(1, 12)
        ts += rng.choice((0, 1, 7, -3))
        recs = [(b"k%d" % j, rng.randbytes(rng.randint(0, 120)), (), ts + j) for j in range(n)]
        kind = rng.choice(("plain", "idem", "txn", "gzip", "lz4"))
        kw: dict = {}
        if kind in ("idem", "txn"):
            if rng.random() < 0.1:
                epoch, seq = epoch + 1, 0
            kw = dict(producer_id=41, producer_epoch=epoch, base_sequence=seq,
                      is_transactional=kind == "txn")
            seq += n
        elif kind != "plain":
            kw = dict(compression={"gzip": rb.COMPRESSION_GZIP, "lz4": rb.COMPRESSION_LZ4}[kind])
        out.append(rb.build_batch(recs, **kw))
    return out


def files_of(log: PartitionLog) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log.dir.iterdir())
            if p.suffix in (".log", ".index", ".timeindex")}


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_with_or_without_the_header_the_log_is_the_same(tmp_path, timestamp_type):
    cfg = small_config(segment_bytes=8192, index_interval_bytes=300,
                       message_timestamp_type=timestamp_type)
    given = PartitionLog(tmp_path / "given-0", "given", 0, cfg, now_ms=T0)
    parsed = PartitionLog(tmp_path / "parsed-0", "parsed", 0, cfg, now_ms=T0)
    for i, data in enumerate(batches(7, 300)):
        now = T0 + 10 * i
        # the produce path hands the log the request's own (writable) frame
        a = given.append(memoryview(bytearray(data)), leader_epoch=3, now_ms=now,
                         header=rb.parse_header(data, 0))
        b = parsed.append(memoryview(bytearray(data)), leader_epoch=3, now_ms=now)
        assert a == b
    assert len(given.segments) == len(parsed.segments) > 3          # rolled on segment.bytes
    assert files_of(given) == files_of(parsed)
    assert any(len(s.offset_index.entries()) > 1 for s in given.segments)
    assert given.producer_state.encode_snapshot() == parsed.producer_state.encode_snapshot()
    for g, p in zip(given.segments, parsed.segments):
        assert g.find(g.next_offset - 1) == p.find(p.next_offset - 1)
    given.close()
    parsed.close()


def test_indexes_written_on_the_way_match_a_rebuild(tmp_path):
    cfg = small_config(segment_bytes=16384, index_interval_bytes=200)
    log = PartitionLog(tmp_path / "t-0", "t", 0, cfg, now_ms=T0)
    for data in batches(3, 400):
        log.append(memoryview(bytearray(data)), leader_epoch=0, now_ms=T0,
                   header=rb.parse_header(data, 0))
    assert len(log.segments) > 3
    for seg in log.segments:
        offsets, times = seg.offset_index.entries(), seg.time_index.entries()
        assert offsets
        final = (seg.max_timestamp, seg.offset_of_max_timestamp)
        seg.rebuild_indexes()
        assert seg.offset_index.entries() == offsets
        # a rolled segment's time index also ends with its final max timestamp (as Kafka's
        # onBecomeInactiveSegment), which a rebuild does not add
        rebuilt = seg.time_index.entries()
        assert times == rebuilt or (seg is not log.active_segment and times == rebuilt + [final])
    log.close()


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_the_segment_keeps_the_header_the_file_holds(tmp_path, timestamp_type):
    cfg = small_config(segment_bytes=1 << 20, message_timestamp_type=timestamp_type)
    log = PartitionLog(tmp_path / "t-0", "t", 0, cfg, now_ms=T0)
    for i, data in enumerate(batches(5, 20)):
        info = log.append(memoryview(bytearray(data)), leader_epoch=2, now_ms=T0 + i,
                          header=rb.parse_header(data, 0))
        seg = log.active_segment
        pos, kept = seg.find(info.last_offset)
        assert kept == rb.parse_header(seg.read_batch(pos, kept), 0)
        assert (kept.base_offset, kept.partition_leader_epoch) == (info.base_offset, 2)
        if timestamp_type == "LogAppendTime":
            assert kept.max_timestamp == T0 + i and kept.timestamp_type == 1
        rb.verify_crc(seg.read_batch(pos, kept))
    log.close()


def test_a_header_that_is_not_the_batch_is_caught(tmp_path):
    log = PartitionLog(tmp_path / "t-0", "t", 0, small_config(), now_ms=T0)
    one, other = batches(11, 2)
    log.append(one, now_ms=T0, header=rb.parse_header(one, 0))
    # a byte changed after the header was parsed: the CRC check still runs on the bytes
    bad = bytearray(other)
    header = rb.parse_header(bad, 0)
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        log.append(memoryview(bad), now_ms=T0, header=header)
    # a header of other bytes of another length: the bytes are validated from scratch
    with pytest.raises(CorruptRecord):
        log.append(other + b"\0", now_ms=T0, header=rb.parse_header(other, 0))
    assert log.log_end_offset == rb.parse_header(one, 0).last_offset_delta + 1
    assert len(list(log.batches(0))) == 1
    log.close()


def test_batches_appended_together_leave_the_files_of_one_by_one(tmp_path):
    """A run's append (several batches, their headers given: kbroker/replica/append.py
    ``append_run``) writes the offset index entries it adds with one write: the files are
    those of the same batches appended one at a time (in one segment: an append rolls as a
    whole, so rolls would fall elsewhere)."""
    cfg = small_config(segment_bytes=1 << 24, index_interval_bytes=150)
    alone = PartitionLog(tmp_path / "alone-0", "alone", 0, cfg, now_ms=T0)
    together = PartitionLog(tmp_path / "together-0", "together", 0, cfg, now_ms=T0)
    rng = random.Random(5)
    data = batches(9, 400)
    most = 0
    i = 0
    while i < len(data):
        group = data[i:i + rng.randint(1, 9)]
        i += len(group)
        for d in group:
            alone.append(memoryview(bytearray(d)), leader_epoch=1, now_ms=T0)
        before = len(together.active_segment.offset_index)
        together.append(memoryview(bytearray(b"".join(group))), leader_epoch=1, now_ms=T0,
                        headers=[rb.parse_header(d, 0) for d in group])
        most = max(most, len(together.active_segment.offset_index) - before)
    assert most > 2                             # appends that added several entries at once
    assert len(together.segments) == 1 and len(together.active_segment.offset_index) > 100
    assert files_of(together) == files_of(alone)
    alone.close()
    together.close()
