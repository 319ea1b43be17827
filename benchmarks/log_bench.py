"""Log-store throughput beside the raw disk (a benchmark, not a test).

    .venv/bin/python benchmarks/log_bench.py [--dir /path/on/disk] [--mb 256]

Prints MB/s for
* ``dd`` writing the same bytes in the same block size to the same directory, page
  cache only and with ``oflag=dsync`` (a synced write per block) -- the hardware
  reference for fsync off and on;
* ``PartitionLog.append`` of 16 KiB and 1 MiB batches, fsync off (Kafka's default:
  page cache) and on (``flush.messages=1``: fsync before each append returns);
* ``PartitionLog.read`` + ``os.sendfile`` to /dev/null of the whole log in 1 MiB
  fetches, and the same with ``read_bytes`` (a copy into Python);
each with its ratio to the matching ``dd`` figure, so the log's overhead reads as a
fraction of what the disk can do.  fsync-on runs are capped in bytes (``--sync-mb``)
because a per-append fsync of small batches is slow on most disks.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbroker.log import LogConfig, PartitionLog  # noqa: E402
from kbroker.wire import records as rb  # noqa: E402

MB = 1024 * 1024


def dd_speed(directory: Path, block: int, total_bytes: int, sync: bool) -> float:
    """dd writing ``total_bytes`` in ``block``-sized writes; ``sync`` = O_DSYNC per write."""
    target = directory / "dd.bin"
    count = max(1, total_bytes // block)
    args = ["dd", "if=/dev/zero", f"of={target}", f"bs={block}", f"count={count}"]
    if sync:
        args.append("oflag=dsync")
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    target.unlink()
    m = re.search(r"copied, ([\d.]+) s", proc.stderr)
    if m and float(m.group(1)) > 0:
        elapsed = float(m.group(1))
    return count * block / elapsed / 1e6


def one_batch(size: int) -> bytes:
    rng = random.Random(size)
    per = 4096
    n = max(1, size // per)
    recs = [(b"key-%d" % i, rng.randbytes(per - 100), (), 1_700_000_000_000) for i in range(n)]
    return rb.build_batch(recs)


def append_speed(directory: Path, batch: bytes, total_bytes: int, fsync: bool) -> tuple[float, PartitionLog]:
    cfg = LogConfig(max_message_bytes=4 * MB, flush_messages=1 if fsync else LogConfig.flush_messages)
    logdir = directory / f"bench-{len(batch)}-{int(fsync)}"
    shutil.rmtree(logdir, ignore_errors=True)
    log = PartitionLog(logdir, "bench", 0, cfg, now_ms=0)
    count = max(1, total_bytes // len(batch))
    start = time.perf_counter()
    for _ in range(count):
        log.append(batch, now_ms=1_700_000_000_000)
    elapsed = time.perf_counter() - start
    return count * len(batch) / elapsed / 1e6, log


def read_speed(log: PartitionLog, *, copy: bool) -> float:
    log.high_watermark = log.log_end_offset
    null = os.open(os.devnull, os.O_WRONLY)
    total, offset = 0, log.log_start_offset
    start = time.perf_counter()
    while offset < log.log_end_offset:
        region = log.read(offset, MB)
        if copy:
            data = region.read_bytes()
            last = None
            for _, h in rb.iter_batches(data):
                last = h
        else:
            sent = 0
            while sent < region.length:
                sent += region.sendfile(null, sent)
            # The next offset comes from the last batch header of the region.
            pos, last = region.position, None
            seg_end = region.position + region.length
            while pos < seg_end:
                last = rb.parse_header(os.pread(region.fd, rb.BATCH_HEADER_SIZE, pos))
                pos += last.size
        total += region.length
        offset = last.next_offset
    elapsed = time.perf_counter() - start
    os.close(null)
    return total / elapsed / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=None,
                    help="directory on the disk to measure (default: a temporary directory)")
    ap.add_argument("--mb", type=int, default=256, help="bytes per fsync-off run, in MiB")
    ap.add_argument("--sync-mb", type=int, default=32, help="bytes per fsync-on run, in MiB")
    args = ap.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="kbroker-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        print(f"disk: {base.resolve()}")
        logs = []
        dd_cache_1m = None
        for size, label in ((16 * 1024, "16 KiB"), (MB, "1 MiB")):
            batch = one_batch(size)
            for fsync in (False, True):
                total = (args.sync_mb if fsync else args.mb) * MB
                ref = dd_speed(base, size, total, fsync)
                if size == MB and not fsync:
                    dd_cache_1m = ref
                speed, log = append_speed(base, batch, total, fsync)
                mode = "fsync on " if fsync else "fsync off"
                print(f"{'dd bs=' + label + (' oflag=dsync' if fsync else ''):<44}{ref:10.1f} MB/s")
                print(f"{'append ' + label + ' batches, ' + mode:<44}{speed:10.1f} MB/s"
                      f"   {speed / ref:6.2f} x dd")
                logs.append(log)
        big = logs[0]  # the 16 KiB fsync-off log
        for copy in (False, True):
            speed = read_speed(big, copy=copy)
            name = "read 1 MiB fetches, " + ("read_bytes copy" if copy else "sendfile")
            print(f"{name:<44}{speed:10.1f} MB/s   {speed / dd_cache_1m:6.2f} x dd bs=1 MiB")
        for log in logs:
            log.close()
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
