"""Shared helpers for the log-store tests: deterministic batches and log walkers."""
from __future__ import annotations

import random

from kbroker.log import LogConfig, PartitionLog
from kbroker.wire import records as rb


def make_batch(records, *, base_offset=0, **kw) -> bytes:
    """records: iterable of (key, value, timestamp)."""
    return rb.build_batch([(k, v, (), ts) for k, v, ts in records], base_offset=base_offset, **kw)


def random_batches(seed: int, count: int, *, max_records=5, max_value=300, ts0=1_000_000,
                   keys=None):
    """Deterministic list of (records, batch_bytes_with_offsets_assigned)."""
    rng = random.Random(seed)
    out, offset = [], 0
    for i in range(count):
        n = rng.randint(1, max_records)
        recs = []
        for j in range(n):
            key = (b"k%d" % rng.randrange(keys)) if keys else b"b%d-%d" % (i, j)
            recs.append((key, rng.randbytes(rng.randint(0, max_value)), ts0 + rng.randint(-50, 50) + i))
        out.append((recs, make_batch(recs, base_offset=offset)))
        offset += n
    return out


def stored_batches(log: PartitionLog) -> list[tuple[rb.BatchHeader, bytes]]:
    return list(log.batches(log.log_start_offset))


def records_of(log: PartitionLog):
    """Every record as (offset, key, value) by decoding the whole log."""
    out = []
    for h, data in stored_batches(log):
        if h.is_control:
            continue
        for r in rb.decode_records(data, 0, h):
            out.append((r.offset, r.key, r.value))
    return out


def small_config(**kw) -> LogConfig:
    base = dict(segment_bytes=4096, index_interval_bytes=256, file_delete_delay_ms=0)
    base.update(kw)
    return LogConfig(**base)
