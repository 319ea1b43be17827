"""A whole file mapped read-only: how a start reads its caches (issue 32, start-up).

``kbroker serve`` reads three files it wrote itself at every start -- the module image
(:mod:`kbroker.common.modimage`, ~5 MB), the code cache (:mod:`kbroker.common.codecache`,
~2 MB) and the message schema's parsed copy -- and uses each piece of them once. Read with
``read()``, every byte is copied from the page cache into a fresh buffer of the heap: on a
virtual machine of the kind the benchmarks run on a new page of memory costs ~4 us to fault
in, and those buffers were ~3,500 of the ~9,600 pages a start touched before its ready
line. Mapped, the kernel hands the page cache's own pages over as they are touched, many at
a time, and nothing is copied; ``marshal.loads`` reads a slice of the mapping directly.

The mapping stays valid while the file is replaced: the caches are only ever written to a
temporary file that is then renamed over the old one (:func:`codecache.replace_file`), so
a mapped old file keeps its contents until its last view is dropped. A file truncated in
place under a mapping would make touching its lost pages fatal (``SIGBUS``): nothing of
kbroker writes these files that way.

The module image and the code cache share one layout (:func:`indexed_bytes`,
:func:`map_indexed`): their header line, the length of a marshalled index, the index, then
the marshalled entries the index points into, each read only when used.
"""
from __future__ import annotations

import marshal
import mmap
import os


def map_file(path) -> memoryview | None:
    """The contents of the file ``path`` as a read-only view of its mapping (unmapped once the
    view and every slice of it are gone), or None if it cannot be mapped: absent,
    unreadable, empty, not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        return memoryview(mmap.mmap(fd, 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def positions(chunks) -> list[int]:
    """Where each of ``chunks`` lies when they are written one after the other, as
    ``offset << 32 | length`` (what an index of :func:`indexed_bytes` holds)."""
    out, offset = [], 0
    for chunk in chunks:
        out.append(offset << 32 | len(chunk))
        offset += len(chunk)
    return out


def span(where: int) -> tuple[int, int]:
    """The (start, stop) in the data of a position from :func:`positions`."""
    start = where >> 32
    return start, start + (where & 0xFFFFFFFF)


def piece(data, where: int):
    """The slice of ``data`` at a position from :func:`positions` (shorter than its length
    where the data is)."""
    start, stop = span(where)
    return data[start:stop]


def indexed_bytes(header: bytes, index, chunks: list) -> bytes:
    """A file's contents: ``header``, the length of ``index`` marshalled (4 bytes, little
    endian), the marshalled ``index``, then ``chunks`` (what its offsets count from)."""
    raw = marshal.dumps(index)
    return b"".join((header, len(raw).to_bytes(4, "little"), raw, *chunks))


def map_indexed(path, header: bytes):
    """(index, data) of a file written from :func:`indexed_bytes` with ``header``: its index
    unmarshalled, and a view of the mapped data after it; None if the file cannot be mapped
    or does not start with ``header`` and a whole index."""
    data = map_file(path)
    if data is None:
        return None
    start = len(header) + 4
    try:
        if len(data) < start or data[:len(header)] != header:
            return None
        size = int.from_bytes(data[start - 4:start], "little")
        return marshal.loads(data[start:start + size]), data[start + size:]
    except (ValueError, EOFError, TypeError):
        return None
