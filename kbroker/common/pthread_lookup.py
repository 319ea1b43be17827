"""trio's import without an ``ldconfig -p`` child process (start-up waits, issue 32).

``trio._core._thread_cache`` names its worker threads with ``pthread_setname_np``, which it
finds at import through ``ctypes.util.find_library("pthread")``. On Linux that runs
``/sbin/ldconfig -p`` in a child process and searches its ~40 KB of output: 2-5 ms of wall
time at every ``kbroker serve``, the start's only subprocess, spent waiting for it. The
library holding the function is already mapped into the interpreter (libpthread, or libc
itself since glibc 2.34), so :func:`install` answers that one name from
``/proc/self/maps``: the mapped libpthread or libc whose handle has ``pthread_setname_np``.
Any other name, and a process where none is found, go to the standard function, which
:func:`uninstall` puts back (the command line does so once trio is imported). trio names
its threads as before.
"""
from __future__ import annotations

import os
import sys

_standard = None        # ctypes.util.find_library while ours is installed


def mapped_pthread_library() -> str | None:
    """The path of a library mapped into this process that provides ``pthread_setname_np``
    (libpthread before libc), or None."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = {parts[5].strip() for parts in (line.split(None, 5) for line in f) if len(parts) == 6}
    except OSError:
        return None
    candidates = [p for p in paths if os.path.basename(p).startswith(("libpthread.so", "libc.so"))]
    candidates.sort(key=lambda p: (not os.path.basename(p).startswith("libpthread"), p))
    for path in candidates:
        try:
            if hasattr(ctypes.CDLL(path), "pthread_setname_np"):
                return path
        except OSError:
            continue
    return None


def _find_library(name):
    if name == "pthread":
        found = mapped_pthread_library()
        if found is not None:
            return found
    return _standard(name)


def install() -> None:
    """Answer ``find_library("pthread")`` from the mapped libraries (Linux only)."""
    global _standard
    if _standard is not None or not sys.platform.startswith("linux"):
        return
    import ctypes.util
    _standard = ctypes.util.find_library
    ctypes.util.find_library = _find_library


def uninstall() -> None:
    global _standard
    if _standard is None:
        return
    import ctypes.util
    if ctypes.util.find_library is _find_library:
        ctypes.util.find_library = _standard
    _standard = None
