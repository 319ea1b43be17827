"""The message browser: records of one topic, newest first, from an offset or from a
timestamp, bounded and paged.

Reads go through ``ReplicaManager.read_partition`` (what Fetch calls, read_uncommitted, up
to the high watermark) and ``list_offset`` (what ListOffsets calls, for timestamps and the
log's ends); batches are decoded with ``kbroker.wire.records``. Bounds: at most
``MAX_LIMIT`` records per page, ``MAX_READ_BYTES`` read per request over all partitions,
keys/values/headers cut at ``MAX_VALUE_BYTES`` (``truncated`` says so). Control records
(transaction markers) are skipped, as consumers skip them.

A page answers ``records`` (key/value/headers base64, the client renders text, JSON or hex),
``next``: per partition, the offset to continue from (the live tail polls with it), and
``older``: per partition, the first offset of the page (``mode=before`` pages back from it).
"""
from __future__ import annotations

import base64

import trio

from kbroker.replica import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, FetchSpec, ReplicaError
from kbroker.wire import records as rec

from kbroker.authz.acls import READ, TOPIC

from .auth import require
from .errors import ApiFailure, error_name

MAX_LIMIT = 500
DEFAULT_LIMIT = 50
MAX_READ_BYTES = 4 * 1024 * 1024
READ_CHUNK = 1024 * 1024
MAX_VALUE_BYTES = 64 * 1024
READ_UNCOMMITTED = 0


def _b64(data) -> tuple[str | None, bool]:
    if data is None:
        return None, False
    data = bytes(data)
    cut = len(data) > MAX_VALUE_BYTES
    return base64.b64encode(data[:MAX_VALUE_BYTES]).decode("ascii"), cut


def _render(partition: int, r: rec.Record) -> dict:
    key, kcut = _b64(r.key)
    value, vcut = _b64(r.value)
    headers = []
    for h in r.headers:
        hv, hcut = _b64(h.value)
        vcut = vcut or hcut
        headers.append({"key": h.key, "value": hv})
    return {"partition": partition, "offset": r.offset, "timestamp": r.timestamp,
            "key": key, "value": value, "headers": headers,
            "key_size": -1 if r.key is None else len(r.key),
            "value_size": -1 if r.value is None else len(r.value),
            "truncated": kcut or vcut}


def offsets_of(replicas, topic: str, partition: int) -> dict:
    """log_start_offset, high_watermark (ListOffsets earliest/latest) of a partition led
    here; raises ReplicaError otherwise."""
    _, start, _ = replicas.list_offset(topic, partition, EARLIEST_TIMESTAMP)
    _, end, _ = replicas.list_offset(topic, partition, LATEST_TIMESTAMP)
    return {"log_start_offset": start, "high_watermark": end}


class _Budget:
    def __init__(self, limit: int):
        self.bytes_left = MAX_READ_BYTES
        self.limit = limit


def _read_forward(replicas, topic: str, partition: int, offset: int, stop: int,
                  want: int, budget: _Budget) -> tuple[list[dict], int]:
    """Records [offset, stop) up to ``want`` of them; returns (records, next offset)."""
    out: list[dict] = []
    pos = offset
    while pos < stop and len(out) < want and budget.bytes_left > 0:
        res = replicas.read_partition(FetchSpec(topic, partition, pos, READ_CHUNK),
                                      min(READ_CHUNK, budget.bytes_left),
                                      isolation_level=READ_UNCOMMITTED, min_one=True)
        if res.error_code:
            raise ReplicaError(res.error_code)
        if res.records is None:
            break
        data = res.records.read_bytes()
        budget.bytes_left -= len(data)
        advanced = pos
        for bpos, header in rec.iter_batches(data, allow_truncated_tail=True):
            advanced = max(advanced, header.next_offset)
            if header.is_control:
                continue
            for r in rec.decode_records(data, bpos, header):
                if r.offset < pos or r.offset >= stop:
                    continue
                out.append(_render(partition, r))
                if len(out) >= want:
                    return out, r.offset + 1
        if advanced <= pos:
            break               # nothing whole in the chunk: stop rather than spin
        pos = advanced
    return out, min(pos, stop)


def _partitions(image, topic: str, partition: int | None) -> list[int]:
    t = image.topics.get(topic)
    if t is None:
        raise ApiFailure(3, f"Topic '{topic}' does not exist.", status=404)
    if partition is None:
        return sorted(t.partitions)
    if partition not in t.partitions:
        raise ApiFailure(3, f"Topic '{topic}' has no partition {partition} "
                            f"(partitions 0..{len(t.partitions) - 1}).", status=404)
    return [partition]


async def browse(broker, topic: str, *, mode: str = "newest", partition: int | None = None,
                 offset: int | None = None, timestamp: int | None = None,
                 positions: dict[int, int] | None = None, limit: int = DEFAULT_LIMIT) -> dict:
    """One page of records; ``mode`` is ``newest``, ``offset``, ``timestamp``, ``tail``
    (after ``positions``, the ``next`` of an earlier page) or ``before`` (the page before
    ``positions``, the ``older`` of an earlier page, newest first)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ApiFailure(42, f"limit must be between 1 and {MAX_LIMIT}")
    require(broker, READ, TOPIC, topic)        # as Fetch
    replicas = broker.replicas
    image = broker.metadata
    parts = _partitions(image, topic, partition)
    budget = _Budget(limit)
    found: list[dict] = []
    nxt: dict[int, int] = {}
    errors: list[dict] = []
    ranges: dict[int, dict] = {}
    older: dict[int, int] = {}
    for p in parts:
        await trio.lowlevel.checkpoint()
        try:
            bounds = offsets_of(replicas, topic, p)
            ranges[p] = bounds
            start_off, hw = bounds["log_start_offset"], bounds["high_watermark"]
            if mode == "newest":
                begin = max(start_off, hw - limit)
            elif mode == "offset":
                if offset is None or offset < 0:
                    raise ApiFailure(1, "offset must be a number ≥ 0")
                if partition is not None and not start_off <= offset <= hw:
                    raise ApiFailure(1, f"offset {offset} is out of range for partition {p}: "
                                        f"it holds offsets {start_off} to {hw - 1}"
                                        if hw > start_off else
                                        f"offset {offset} is out of range for partition {p}: "
                                        f"it is empty (next offset {hw})")
                begin = min(max(offset, start_off), hw)
            elif mode == "timestamp":
                if timestamp is None or timestamp < 0:
                    raise ApiFailure(42, "timestamp must be milliseconds since the epoch (≥ 0)")
                _, off, _ = replicas.list_offset(topic, p, timestamp)
                begin = hw if off < 0 else off
            elif mode == "tail":
                begin = (positions or {}).get(p, hw)
                begin = min(max(begin, start_off), hw)
            elif mode == "before":
                end = min(max((positions or {}).get(p, start_off), start_off), hw)
                begin = max(start_off, end - limit)
            else:
                raise ApiFailure(42, f"unknown mode {mode!r}: newest, offset, timestamp, tail or before")
            stop = end if mode == "before" else hw
            got, after = _read_forward(replicas, topic, p, begin, stop, limit, budget)
            found.extend(got)
            nxt[p] = after
            older[p] = begin
        except ReplicaError as e:
            leader = image.topics[topic].partitions[p].leader
            errors.append({"partition": p, "error": error_name(e.error_code),
                           "message": (f"partition {p} is led by node {leader}: its records "
                                       f"are browsed on that node's console")
                           if e.error_code == 6 else (e.args[0] if e.args and isinstance(e.args[0], str)
                                                       else error_name(e.error_code))})
    if mode in ("newest", "before"):
        found.sort(key=lambda r: (r["timestamp"], r["offset"]), reverse=True)
        if len(found) > limit:
            # the next older page of a partition ends after its newest record left out here
            for p in older:
                cut = [r["offset"] for r in found[limit:] if r["partition"] == p]
                if cut:
                    older[p] = max(cut) + 1
    else:
        found.sort(key=lambda r: (r["timestamp"], r["partition"], r["offset"]))
    found = found[:limit]
    if mode not in ("newest", "before") and len(parts) > 1:
        # continue each partition after what this page really shows
        shown: dict[int, int] = {}
        for r in found:
            shown[r["partition"]] = max(shown.get(r["partition"], -1), r["offset"] + 1)
        if len(found) >= limit:
            for p in list(nxt):
                if p in shown:
                    nxt[p] = shown[p]
    return {"topic": topic, "mode": mode, "records": found, "next": {str(k): v for k, v in nxt.items()},
            "older": {str(k): v for k, v in older.items()},
            "partitions": {str(k): v for k, v in ranges.items()}, "errors": errors, "limit": limit}
