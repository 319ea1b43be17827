"""Child process for the SIGKILL test: appends deterministic batches forever.

Usage: python -m tests.log.crash_writer <log_dir> <seed> <flush_messages>
Prints the index of each batch once ``append`` has returned (= acknowledged).
"""
from __future__ import annotations

import sys
from pathlib import Path

from kbroker.log import LogManager

from tests.log.crash_helpers import crash_batches, crash_config


def main() -> None:
    log_dir, seed, flush_messages = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    now = [1_000_000]

    def clock():
        now[0] += 1
        return now[0]

    mgr = LogManager([log_dir], crash_config(flush_messages), clock, checkpoint_interval_ms=50)
    mgr.load()
    log = mgr.get_or_create("crash", 0)
    out = sys.stdout
    for i, (_, batch) in enumerate(crash_batches(seed)):
        log.append(batch, now_ms=clock())
        out.write(f"{i}\n")
        out.flush()
        if i % 20 == 0:
            mgr.run_flush(clock())  # checkpoints, so recovery starts mid-log


if __name__ == "__main__":
    main()
