"""Counting fsyncs by name: the file or directory of every ``os.fsync`` of this process,
in order, while the real fsync still runs (tests of what a write path makes durable)."""
from __future__ import annotations

import os


def record_fsyncs(monkeypatch) -> list[str]:
    """Patch ``os.fsync`` for the test; returns the list the basenames are appended to."""
    names: list[str] = []
    real = os.fsync

    def counting_fsync(fd):
        names.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        return real(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    return names
