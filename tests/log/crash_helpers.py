"""Deterministic workload shared by the crash tests and their child process."""
from __future__ import annotations

import random

from kbroker.log import LogConfig
from kbroker.wire import records as rb


def crash_config(flush_messages: int) -> LogConfig:
    return LogConfig(segment_bytes=256 * 1024, index_interval_bytes=4096,
                     flush_messages=flush_messages if flush_messages > 0 else LogConfig.flush_messages)


def crash_batches(seed: int, limit: int = 100_000):
    """(record count, batch bytes with its final base offset) for batch 0, 1, 2 ..."""
    rng = random.Random(seed)
    offset = 0
    for i in range(limit):
        n = rng.randint(1, 8)
        size = rng.choice((10, 200, 3000, 40_000))
        recs = [(b"k%d-%d" % (i, j), rng.randbytes(rng.randint(0, size)), (), 1_000_000 + i)
                for j in range(n)]
        yield n, rb.build_batch(recs, base_offset=offset)
        offset += n
