"""DescribeLogDirs' view of the local replicas: which directory each log lives in, its size
and its offset lag, plus the disk's total and usable bytes (KIP-827). A directory taken
offline after an I/O error (kbroker/replica/log_dir_failure.py) answers KAFKA_STORAGE_ERROR."""
from __future__ import annotations

import os
import shutil
from typing import Iterable

from kbroker.replica.partition import Partition
from kbroker.wire.error_codes import ErrorCode


def configured_log_dirs(logs) -> list[str]:
    """The log manager's directories, absolute."""
    dirs = getattr(logs, "log_dirs", None)
    if dirs:
        return [os.path.abspath(str(d)) for d in dirs]
    return []


def describe_log_dirs(replicas: Iterable[Partition], log_dirs: list[str],
                      wanted: dict[str, set[int] | None] | None, offline: Iterable[str] = ()):
    """[(log_dir, error_code, [(topic, [(partition, size, offset_lag)])], total, usable)]
    for every local replica, leader or follower. ``offset_lag`` is Kafka's
    ``getLogEndOffsetLag`` for a replica that is not a future one: max(high watermark −
    log end offset, 0) of the local log (so 0 unless the log end is behind its own high
    watermark; -1 would mean no local log).

    ``wanted`` maps topic → partitions (None → all of the topic); None → everything."""
    by_dir: dict[str, dict[str, list]] = {}
    for d in log_dirs:
        by_dir.setdefault(d, {})
    for part in sorted(replicas, key=lambda p: (p.topic, p.index)):  # all replicas
        if wanted is not None:
            if part.topic not in wanted:
                continue
            sel = wanted[part.topic]
            if sel is not None and part.index not in sel:
                continue
        d = _log_dir_of(part, log_dirs)
        size = size_of(part)
        lag = max(part.log.high_watermark - part.log.log_end_offset, 0)
        by_dir.setdefault(d, {}).setdefault(part.topic, []).append((part.index, size, lag))
    out = []
    offline = set(offline)
    for d, topics in by_dir.items():
        if d in offline:
            # Kafka: an offline dir is listed with KAFKA_STORAGE_ERROR, no replicas, no sizes
            out.append((d, ErrorCode.KAFKA_STORAGE_ERROR, [], -1, -1))
            continue
        try:
            usage = shutil.disk_usage(d)
            total, usable = usage.total, usage.free
        except OSError:
            out.append((d, ErrorCode.KAFKA_STORAGE_ERROR, [], -1, -1))
            continue
        out.append((d, 0, sorted(topics.items()), total, usable))
    return out


def _log_dir_of(part: Partition, log_dirs: list[str]) -> str:
    for attr in ("log_dir", "parent_dir"):
        d = getattr(part.log, attr, None)
        if d is not None:
            return os.path.abspath(str(d))
    path = getattr(part.log, "dir", None) or getattr(part.log, "path", None)
    if path is not None:
        return os.path.abspath(os.path.dirname(str(path)))
    return log_dirs[0] if log_dirs else ""


def size_of(part: Partition) -> int:
    size = getattr(part.log, "size_in_bytes", None)
    if size is not None:
        return size() if callable(size) else int(size)
    stats = part.log.statistics()
    for key in ("size_bytes", "size", "bytes"):
        if key in stats:
            return int(stats[key])
    return 0
