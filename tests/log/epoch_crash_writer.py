"""Child process for the SIGKILL test of epochs and high watermarks.

Usage: python -m tests.log.epoch_crash_writer <log_dir> <seed> <flush_messages>
Appends the deterministic batches of ``crash_batches`` with a leader epoch that grows
every few batches, keeps the high watermark one batch behind the log end (a follower
that lags), and prints ``<batch index> <high watermark>`` once ``append`` has returned.
"""
from __future__ import annotations

import sys
from pathlib import Path

from kbroker.log import LogManager

from tests.log.crash_helpers import crash_batches, crash_config


def epoch_of(i: int) -> int:
    return i // 7 * 2  # 0, 2, 4, ... (gaps between epochs, as leader changes leave)


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
        hw = log.log_end_offset
        log.append(batch, leader_epoch=epoch_of(i), now_ms=clock())
        log.high_watermark = hw
        out.write(f"{i} {hw}\n")
        out.flush()
        if i % 20 == 0:
            mgr.run_flush(clock())  # checkpoints: recovery points and high watermarks


if __name__ == "__main__":
    main()
