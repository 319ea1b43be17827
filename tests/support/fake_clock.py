"""A wall clock the test can step, for one real process: libfaketime (Debian ``faketime``).

    clock = FakeClock(tmp_path / "clock")      # offset 0: the real time
    proc.env.update(clock.env())                # before the process starts
    clock.jump(+90)                             # its wall clock is now 90 s ahead
    clock.jump(-60)                             # ... or 60 s behind
    clock.reset()

libfaketime is preloaded (``LD_PRELOAD``) and reads its offset from a control file
(``FAKETIME_TIMESTAMP_FILE``) on every call (``FAKETIME_NO_CACHE``), so the test moves the
clock of a running process at once. ``DONT_FAKE_MONOTONIC=1`` leaves ``CLOCK_MONOTONIC`` real,
as an NTP step would: only ``CLOCK_REALTIME`` (``time.time()``) jumps. ``make faketime``
installs the package (idempotent); ``FakeClock.available()`` says whether it is there.
"""
from __future__ import annotations

import os
from pathlib import Path

LIBS = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1")


def library() -> str | None:
    return next((p for p in LIBS if os.path.exists(p)), None)


class FakeClock:
    def __init__(self, path):
        self.path = Path(path)
        self.offset = 0.0
        self.reset()

    @staticmethod
    def available() -> bool:
        return library() is not None

    def env(self) -> dict[str, str]:
        lib = library()
        if lib is None:
            raise RuntimeError("libfaketime is not installed: run `make faketime`")
        return {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": str(self.path),
                "FAKETIME_NO_CACHE": "1", "DONT_FAKE_MONOTONIC": "1"}

    def jump(self, seconds: float) -> None:
        """Step the wall clock by ``seconds`` from where it is now (negative: back)."""
        self.set(self.offset + seconds)

    def set(self, offset: float) -> None:
        """The wall clock ``offset`` seconds away from the real time."""
        self.offset = offset
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(f"{'+' if offset >= 0 else '-'}{abs(offset):.3f}\n")
        os.replace(tmp, self.path)       # the process never reads half a line

    def reset(self) -> None:
        self.set(0.0)
