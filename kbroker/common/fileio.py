"""Durable small-file writes, shared by everything that keeps state beside the logs.

``write_atomically`` replaces a file as a whole: the bytes go to ``<name>.tmp``, which is
fsynced, renamed over the file, and the directory is fsynced, so a crash leaves either the
old file or the new one (Kafka's checkpoint files, quorum state, snapshots). ``sync=False``
skips both fsyncs for files that can be rebuilt when a crash loses them. ``sync_dir=False``
keeps the file's fsync and leaves the directory's to the caller, which makes it before
anything that depends on the new file is acknowledged or sent -- one directory fsync then
covers every file replaced in it since (the metadata quorum's state, a log's epoch
checkpoint and its new segments, all in ``__cluster_metadata-0``). ``bulk`` (a
:class:`~kbroker.common.bulk_sync.BulkSync`) leaves both the fsyncs and the rename to its
``commit``, which renames only after the new bytes are durable -- the same guarantee, for
many files at once.
"""
from __future__ import annotations

import os
from pathlib import Path


def as_path(path) -> Path:
    """``path`` as a ``Path``, the same object when it is one already (``Path(p)`` parses
    every part of ``p`` again: a start-up of 100,000 logs would do it a dozen times each)."""
    return path if isinstance(path, Path) else Path(path)


class LazyPath:
    """A class attribute making the instance's ``_path`` (kept as given, often a str) a
    ``Path`` on its first read: the segment files of 100,000 logs are named at start-up and
    almost never asked for as a Path."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        path = obj._path
        if not isinstance(path, Path):
            path = obj._path = Path(path)
        return path

    def __set__(self, obj, value) -> None:
        obj._path = value


def read_bytes(path) -> bytes:
    """The content of a small file, read with plain system calls (no buffered or text
    file object); raises ``OSError`` (``FileNotFoundError`` when missing)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def fsync_dir(directory) -> None:
    """fsync a directory (its entries: created, renamed, removed files); a directory that
    cannot be opened (gone, or a platform without directory fds) is skipped."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path, data: bytes, *, sync: bool = True, bulk=None,
                     sync_dir: bool = True) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync and bulk is None:
            os.fsync(fd)
    finally:
        os.close(fd)
    if bulk is not None and sync:
        bulk.replace(tmp, path)
        return
    os.replace(tmp, path)
    if sync and sync_dir:
        fsync_dir(path.parent)
