"""Offset checkpoint files of a log directory, in Kafka's text format.

``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``cleaner-offset-checkpoint`` and ``replication-offset-checkpoint`` (high watermarks)
each hold::

    0                      <- format version
    2                      <- number of entries
    my-topic 0 1234        <- topic, partition, offset
    my-topic 1 99

A file is replaced atomically (write to ``<name>.tmp``, fsync, rename, fsync the
directory), so a crash leaves either the old or the new version.  A missing file
reads as empty; a malformed one raises ``ValueError`` (the caller treats that as
"no checkpoint", which is always safe: recovery just reads more). The first, empty
checkpoint of a fresh directory is written without fsyncs, as losing it changes nothing.
"""
from __future__ import annotations

from operator import attrgetter
from pathlib import Path
from typing import Iterable

from kbroker.common.fileio import fsync_dir, write_atomically  # noqa: F401 - fsync_dir for the manager

RECOVERY_POINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET = "log-start-offset-checkpoint"
CLEANER_OFFSET = "cleaner-offset-checkpoint"
REPLICATION_OFFSET = "replication-offset-checkpoint"  # high watermarks
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"   # its content: kbroker.log.clean_shutdown


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return {}
    return parse_checkpoint(data, path)


def parse_checkpoint(data: bytes, path: Path) -> dict[tuple[str, int], int]:
    """The entries of a checkpoint file's bytes ``data`` (read from ``path``, named in errors)."""
    lines = data.decode().splitlines()
    if len(lines) < 2 or lines[0].strip() != "0":
        raise ValueError(f"{path}: bad checkpoint header")
    count = int(lines[1])
    if len(lines) - 2 < count:
        raise ValueError(f"{path}: {count} entries announced, {len(lines) - 2} present")
    out = {}
    for line in lines[2:2 + count]:
        topic, part, off = line.rsplit(" ", 2)
        out[(topic, int(part))] = int(off)
    return out


_LINE = "%s %d %d\n"


def entry_line(topic: str, partition: int, offset: int) -> str:
    return _LINE % (topic, partition, offset)


def log_lines(logs: Iterable, offset: str) -> list[str]:
    """The entry lines of ``logs`` (objects with ``topic`` and ``partition``) and their
    attribute named ``offset``, in their order: one C-level attribute fetch and one format
    per log (100,000 logs every checkpoint period)."""
    get = attrgetter("topic", "partition", offset)
    return [_LINE % get(lg) for lg in logs]


def encode_lines(lines: list[str]) -> tuple[bytes, int]:
    """The file's bytes and its entry count for its entries' lines (:func:`entry_line`)."""
    return ("0\n%d\n" % len(lines) + "".join(lines)).encode(), len(lines)


def write_encoded(path: Path, body: bytes, count: int, *, bulk=None) -> None:
    """Replace the checkpoint at ``path`` with ``body`` (from :func:`encode_lines`)."""
    # An empty checkpoint says what a missing one says. Where none exists yet (a fresh
    # log directory) it is written without the two fsyncs: a crash leaves it missing,
    # truncated (malformed: read as none) or whole, and each reads as empty. A file that
    # exists is always replaced durably (or by the clean stop's bulk sync): a lost update
    # could bring back old entries.
    sync = bool(count) or Path(path).exists()
    write_atomically(path, body, sync=sync, bulk=bulk)


def write_checkpoint(path: Path, entries: dict[tuple[str, int], int], *, bulk=None) -> None:
    body, count = encode_lines([entry_line(t, p, o) for (t, p), o in sorted(entries.items())])
    write_encoded(path, body, count, bulk=bulk)
