"""Child process for the SIGKILL tests: appends deterministic batches forever.

Usage: python -m tests.log.crash_writer <log_dir> <seed> <flush_messages> [epochs]

Prints the index of each batch once ``append`` has returned (= acknowledged). With
``epochs`` the batches carry a leader epoch that grows every few batches and the high
watermark is kept one batch behind the log end (a follower that lags); each line is then
``<batch index> <high watermark>``.
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
    epochs = len(sys.argv) > 4 and sys.argv[4] == "epochs"
    now = [1_000_000]

    def clock():
        now[0] += 1
        return now[0]

    mgr = LogManager([log_dir], crash_config(flush_messages), clock, checkpoint_interval_ms=50,
                     high_watermark_checkpoint_interval_ms=50)
    mgr.load()
    log = mgr.get_or_create("crash", 0)
    out = sys.stdout
    for i, (_, batch) in enumerate(crash_batches(seed)):
        if epochs:
            hw = log.log_end_offset
            log.append(batch, leader_epoch=epoch_of(i), now_ms=clock())
            log.high_watermark = hw
            out.write(f"{i} {hw}\n")
        else:
            log.append(batch, now_ms=clock())
            out.write(f"{i}\n")
        out.flush()
        if i % 20 == 0:
            mgr.run_flush(clock())  # checkpoints (recovery points, high watermarks): recovery starts mid-log


if __name__ == "__main__":
    main()
