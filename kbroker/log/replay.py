"""Reading a whole partition log back as records, for a coordinator that rebuilds its state
from an internal topic partition it now leads (``__transaction_state``,
``__share_group_state``).

Control batches are skipped; a batch that cannot be decoded is logged with the partition's
name and skipped, so one bad batch never stops a load.
"""
from __future__ import annotations

import logging
from typing import Iterator

from kbroker.wire import records as rb

log = logging.getLogger("kbroker.log")


def data_records(partition_log, name: str) -> Iterator:
    """The records of ``partition_log``'s data batches in offset order (``name`` is
    ``topic-partition``, for the log line of an unreadable batch)."""
    for header, data in partition_log.batches():
        if header.is_control:
            continue
        try:
            records = rb.decode_records(data, 0, header)
        except Exception:  # noqa: BLE001 - one bad batch must not stop the load
            log.exception("unreadable batch in %s at %d", name, header.base_offset)
            continue
        yield from records
