"""Batches of idempotent and transactional producers, and a small log fixture."""
from __future__ import annotations

from kbroker.log import LogConfig, PartitionLog
from kbroker.wire import records as rb

T0 = 1_700_000_000_000


def pbatch(pid: int, epoch: int, seq: int, n: int = 1, *, txn: bool = False, ts: int = T0,
           value: bytes = b"v", key: bytes | None = None) -> bytes:
    """A producer's batch of ``n`` records starting at sequence ``seq``."""
    return rb.build_batch([(key, value + b"%d" % i, (), ts) for i in range(n)],
                          producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                          is_transactional=txn)


def marker(pid: int, epoch: int, commit: bool, *, coordinator_epoch: int = 0, ts: int = T0) -> bytes:
    return rb.build_control_batch(commit=commit, producer_id=pid, producer_epoch=epoch,
                                  timestamp=ts, coordinator_epoch=coordinator_epoch)


def header(data: bytes) -> rb.BatchHeader:
    return rb.parse_header(data, 0)


def open_log(path, *, segment_bytes: int = 1 << 20, clean: bool = True, recovery_point: int = 0,
             **props) -> PartitionLog:
    cfg = LogConfig.from_properties({"segment.bytes": str(segment_bytes), **props})
    return PartitionLog(path, "t", 0, cfg, clock=lambda: T0, clean_shutdown=clean,
                        recovery_point=recovery_point)


def values(log: PartitionLog, *, read_committed: bool = False) -> list[bytes]:
    """Record values in offset order, skipping control batches; with ``read_committed``
    drops aborted transactions the way a consumer does (aborted list + markers)."""
    aborted = {}
    if read_committed:
        for a in log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset):
            aborted.setdefault(a.producer_id, []).append((a.first_offset, a.last_offset))
    out = []
    for h, data in log.batches(log.log_start_offset):
        if h.is_control:
            continue
        if read_committed and h.is_transactional and any(
                first <= h.base_offset < last for first, last in aborted.get(h.producer_id, [])):
            continue
        out.extend(r.value for r in rb.decode_records(data, 0, h))
    return out
