"""Crash recovery: SIGKILLed writers, torn and corrupted tails, many seeds."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path

import pytest

from kbroker.log import LogConfig, LogManager, PartitionLog
from kbroker.wire import records as rb

from .crash_helpers import crash_batches
from .helpers import make_batch, random_batches, stored_batches

ROOT = Path(__file__).resolve().parents[2]
NOW = 2_000_000


def check_prefix(log: PartitionLog, seed: int, acked: int) -> int:
    """Stored batches are exactly the first k generated batches, k >= acked; returns k."""
    stored = stored_batches(log)
    expected = [b for _, b in islice(crash_batches(seed), len(stored))]
    for i, ((h, data), want) in enumerate(zip(stored, expected)):
        assert data == want, f"batch {i} differs"
    assert len(stored) >= acked, f"{acked} acknowledged, {len(stored)} recovered"
    last = rb.parse_header(expected[-1]).next_offset if stored else 0
    assert log.log_end_offset == last
    return len(stored)


@pytest.mark.parametrize("seed,flush", [(s, f) for s in range(4) for f in (0, 1)])
def test_sigkill_while_appending(tmp_path, seed, flush):
    rng = random.Random(seed * 31 + flush)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.log.crash_writer", str(tmp_path), str(seed), str(flush)],
        cwd=ROOT, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    acked = -1
    want = rng.randint(5, 150)
    while acked < want:
        line = proc.stdout.readline()
        assert line, "writer died"
        acked = int(line)
    time.sleep(rng.random() * 0.02)
    os.kill(proc.pid, signal.SIGKILL)
    # Acknowledgements still in the pipe count too.
    for line in proc.stdout.read().splitlines():
        acked = int(line)
    proc.wait()
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    mgr = LogManager([tmp_path], LogConfig(segment_bytes=256 * 1024), lambda: NOW)
    mgr.load()
    log = mgr.get("crash", 0)
    k = check_prefix(log, seed, acked + 1)
    # The recovered log takes appends again and survives a clean restart.
    n, nxt = next(islice(crash_batches(seed), k, None))
    log.append(nxt, now_ms=NOW)
    mgr.shutdown()
    mgr2 = LogManager([tmp_path], LogConfig(segment_bytes=256 * 1024), lambda: NOW)
    mgr2.load()
    check_prefix(mgr2.get("crash", 0), seed, k + 1)
    mgr2.shutdown()


def _build(tmp_path, seed, flushed_fraction):
    cfg = LogConfig(segment_bytes=8 * 1024, index_interval_bytes=512)
    log = PartitionLog(tmp_path / "t-0", "t", 0, cfg, now_ms=NOW)
    batches = random_batches(seed, 120)
    split = int(len(batches) * flushed_fraction)
    for i, (recs, _) in enumerate(batches):
        log.append(make_batch(recs), now_ms=NOW)
        if i == split:
            log.flush(now_ms=NOW)
    rp = log.recovery_point
    log.close_without_flush()
    return cfg, [b for _, b in batches], rp


def _positions(log_dir: Path):
    """(file, batch start, batch end, index) of every batch, in log order."""
    out, i = [], 0
    for f in sorted(log_dir.glob("*.log")):
        data = f.read_bytes()
        for pos, h in rb.iter_batches(data):
            out.append((f, pos, pos + h.size, i))
            i += 1
    return out


@pytest.mark.parametrize("seed", range(40))
def test_damaged_tail_truncated_at_last_whole_batch(tmp_path, seed):
    rng = random.Random(seed)
    cfg, expected, rp = _build(tmp_path, seed, rng.choice((0.0, 0.3, 0.7)))
    spans = _positions(tmp_path / "t-0")
    # Only damage what lies past the recovery point: below it data is trusted (fsynced).
    candidates = [s for s in spans if rb.parse_header(expected[s[3]]).base_offset >= rp]
    f, start, end, idx = rng.choice(candidates)
    data = bytearray(f.read_bytes())
    mode = rng.choice(("truncate", "flip", "zero_tail"))
    # The 4 partition-leader-epoch bytes are outside the CRC and cannot be checked
    # (a limit of Kafka's format); every other byte of a batch is covered.
    while True:
        at = rng.randrange(start, end)
        if not 12 <= at - start < 16:
            break
    if mode == "truncate":
        del data[at:]
    elif mode == "flip":
        data[at] ^= 1 << rng.randrange(8)
    else:
        data[at:] = bytes(len(data) - at)
    f.write_bytes(bytes(data))
    log = PartitionLog(tmp_path / "t-0", "t", 0, cfg, now_ms=NOW, recovery_point=rp)
    got = [d for _, d in stored_batches(log)]
    assert got == expected[:idx], (mode, at - start)
    assert log.log_end_offset == (rb.parse_header(expected[idx - 1]).next_offset if idx else 0)
    assert log.recovery_stats["bytes_truncated"] > 0 or mode == "truncate"
    # Indexes were rebuilt: every offset reads back its batch.
    for off in range(0, log.log_end_offset, 3):
        h = rb.parse_header(log.read(off, 1).read_bytes())
        assert h.base_offset <= off <= h.last_offset
    # New appends continue at the new end and survive another unclean open.
    log.append(make_batch([(b"again", b"v", NOW)]), now_ms=NOW)
    leo = log.log_end_offset
    log.close_without_flush()
    log2 = PartitionLog(tmp_path / "t-0", "t", 0, cfg, now_ms=NOW)
    assert log2.log_end_offset == leo
    assert [d for _, d in stored_batches(log2)][:idx] == expected[:idx]


def test_recovery_never_reads_below_recovery_point(tmp_path):
    cfg, expected, rp = _build(tmp_path, 7, 0.9)
    log = PartitionLog(tmp_path / "t-0", "t", 0, cfg, now_ms=NOW, recovery_point=rp)
    i = max(j for j, s in enumerate(log.segments) if s.base_offset <= rp)
    assert log.recovery_stats["bytes_recovered"] == sum(s.size for s in log.segments[i:])
    assert log.recovery_stats["segments_recovered"] == len(log.segments) - i
    assert [d for _, d in stored_batches(log)] == expected


@pytest.mark.parametrize("field", [(0, 8), (8, 12), (16, 17), (17, 21), (21, 61)])
@pytest.mark.parametrize("seed", range(4))
def test_damaged_header_field_detected(tmp_path, seed, field):
    """Every header field but the leader epoch is checked: by CRC, length or offset order."""
    rng = random.Random(seed)
    cfg, expected, rp = _build(tmp_path, seed, 0.0)
    spans = _positions(tmp_path / "t-0")
    f, start, end, idx = rng.choice(spans[1:])
    data = bytearray(f.read_bytes())
    at = start + rng.randrange(*field)
    data[at] ^= 1 << rng.randrange(8)
    f.write_bytes(bytes(data))
    log = PartitionLog(tmp_path / "t-0", "t", 0, cfg, now_ms=NOW, recovery_point=rp)
    assert [d for _, d in stored_batches(log)] == expected[:idx]
