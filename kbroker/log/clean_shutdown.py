"""The clean-shutdown marker of a log directory, and the broker epoch it remembers (KIP-966).

A log directory holds ``.kafka_cleanshutdown`` only between a clean shutdown and the next
start (``LogManager`` writes it last on the way down and removes it once the logs are
loaded). Its content is Kafka's (``CleanShutdownFileHandler``, version 0)::

    {"version":0,"brokerEpoch":42}

the broker epoch the node held when it stopped (-1 if it never registered). The next start
reads it before removing the file and sends it as ``PreviousBrokerEpoch`` in its
BrokerRegistration (v3+); the controller takes the restart as clean only when that is the
epoch it still has for the broker, so a broker that crashed (no file) or whose directories
disagree is treated as having lost its log's unflushed tail: it leaves the eligible leader
replicas of every partition (Kafka's ``ReplicationControlManager.handleBrokerShutdown``).

Rules kept, as Kafka's ``LogManager.readBrokerEpochFromCleanShutdownFiles``: the previous
epoch is known only when every configured log dir is online and each one's marker names the
same epoch; any unreadable, empty or foreign marker makes it unknown (-1), never a guess. An
empty marker (what kbroker wrote before it remembered epochs) still means "clean" for log
recovery, only not for the controller.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from kbroker.common.fileio import fsync_dir

from .checkpoint import CLEAN_SHUTDOWN as FILE_NAME
VERSION = 0
UNKNOWN = -1


def write(directory: Path, broker_epoch: int) -> None:
    """Write the marker with ``broker_epoch`` and make it durable (file and directory)."""
    body = json.dumps({"version": VERSION, "brokerEpoch": int(broker_epoch)},
                      separators=(",", ":")).encode()
    fd = os.open(Path(directory) / FILE_NAME, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(Path(directory))


def read_epoch(directory: Path) -> int | None:
    """The broker epoch the directory's marker names, or None (no marker, or not one of
    Kafka's: unreadable, not JSON, no integer ``brokerEpoch``). Unknown fields are ignored,
    as Kafka's reader ignores them."""
    try:
        content = json.loads((Path(directory) / FILE_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    epoch = content.get("brokerEpoch") if isinstance(content, dict) else None
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        return None
    return epoch


def previous_broker_epoch(epochs: Iterable[int | None], all_online: bool = True) -> int:
    """The epoch to send as ``PreviousBrokerEpoch``: the one every directory's marker names,
    else ``UNKNOWN`` (-1), also when a configured directory is not online."""
    found = list(epochs)
    if not all_online or not found or any(e is None for e in found):
        return UNKNOWN
    return found[0] if all(e == found[0] for e in found) else UNKNOWN
