"""The leader's read path: consumer reads, follower reads and ListOffsets, on one partition
whose leadership and epoch the manager has already checked (Kafka's
``Partition.fetchRecords`` / ``readFromLog`` / ``fetchOffsetForTimestamp``).

Rules it keeps:

- Consumers read up to the high watermark (read_uncommitted) or the last stable offset
  (read_committed, with the aborted transactions of the returned data from ``.txnindex``);
  followers read up to the log end offset with no isolation.
- A fetch outside [log start, log end] is OFFSET_OUT_OF_RANGE with unknown (-1) watermarks.
- Only the first partition with data may exceed the byte limit (``min_one``): it returns at
  least one whole batch so a consumer never stalls on a large batch.
- A follower's ``last_fetched_epoch`` that diverges from the leader's epoch cache is answered
  with ``diverging_epoch`` and no data (KIP-595's truncation on fetch).
- ListOffsets: a new leader whose high watermark still lags the start of its epoch cannot
  answer "latest" to clients yet (OFFSET_NOT_AVAILABLE).

No waiting and no follower bookkeeping here: parking is :mod:`kbroker.replica.delayed`,
the follower's fetch state is :mod:`kbroker.replica.state`'s, both driven by the manager.
"""
from __future__ import annotations

from kbroker.replica.partition import Partition
from kbroker.replica.results import (EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP,
                                     LATEST_TIMESTAMP, MAX_TIMESTAMP, READ_COMMITTED,
                                     FetchResult, FetchSpec, ReplicaError, error_from)
from kbroker.wire.error_codes import ErrorCode


def out_of_range(res: FetchResult) -> FetchResult:
    """Kafka answers a fetch outside [log start, log end] with OFFSET_OUT_OF_RANGE and
    unknown (-1) watermarks, as for every read error (``createLogReadResult``): clients ask
    ListOffsets where to go next."""
    res.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
    res.high_watermark = res.last_stable_offset = res.log_start_offset = -1
    return res


def read_for_consumer(part: Partition, spec: FetchSpec, max_bytes: int, *,
                      isolation_level: int, min_one: bool) -> FetchResult:
    """Read one led partition for a consumer without waiting; errors are returned."""
    res = FetchResult(spec.topic, spec.partition)
    hw = part.high_watermark
    lso = part.last_stable_offset
    res.high_watermark = hw
    res.last_stable_offset = lso
    res.log_start_offset = part.log_start_offset
    res.leader_epoch = part.leader_epoch
    res.aborted_transactions = [] if isolation_level == READ_COMMITTED else None
    offset = spec.fetch_offset
    if offset < part.log_start_offset or offset > part.log_end_offset:
        return out_of_range(res)
    max_offset = lso if isolation_level == READ_COMMITTED else hw
    if offset >= max_offset:
        return res
    limit = max(0, min(spec.partition_max_bytes, max_bytes))
    if limit == 0 and not min_one:
        return res
    try:
        region = part.log.read(offset, limit, max_offset=max_offset)
    except Exception as exc:  # noqa: BLE001 - typed log errors carry their code
        if not hasattr(exc, "error_code"):
            raise
        res.error_code = error_from(exc).error_code
        return res
    if region is not None and region.length > 0:
        if region.length > limit and not min_one:
            return res  # Kafka: only the first partition with data may exceed the limit
        res.records = region
        if isolation_level == READ_COMMITTED:
            # reads stay within one segment: its end bounds the data returned
            upper = min(max_offset, part.log.segment_end_offset(offset))
            res.aborted_transactions = [
                (a.producer_id, a.first_offset)
                for a in part.log.collect_aborted_transactions(offset, upper)]
    return res


def read_for_follower(part: Partition, spec: FetchSpec, max_bytes: int, *,
                      min_one: bool) -> tuple[FetchResult, int | None]:
    """Read one led partition for a follower: divergence check with ``last_fetched_epoch``,
    then up to the log end offset. Returns the answer and the leader's log end offset as of
    before the read (appends during the fetch must not keep a follower out of sync), or None
    when the fetch does not count as one (out of range, diverging, read error)."""
    res = FetchResult(spec.topic, spec.partition)
    log_ = part.log
    leo = log_.log_end_offset
    res.high_watermark = log_.high_watermark
    res.last_stable_offset = part.last_stable_offset
    res.log_start_offset = log_.log_start_offset
    res.leader_epoch = part.leader_epoch
    offset = spec.fetch_offset
    if spec.last_fetched_epoch >= 0:
        epoch, end = log_.end_offset_for_epoch(spec.last_fetched_epoch)
        if epoch < 0 or end < 0 or offset < log_.log_start_offset:
            return out_of_range(res), None
        if epoch < spec.last_fetched_epoch or end < offset:
            res.diverging_epoch = (epoch, end)
            return res, None
    if offset < log_.log_start_offset or offset > leo:
        return out_of_range(res), None
    limit = max(0, min(spec.partition_max_bytes, max_bytes))
    if offset < leo and (limit > 0 or min_one):
        try:
            region = log_.read(offset, limit)
        except Exception as exc:  # noqa: BLE001 - typed log errors carry their code
            if not hasattr(exc, "error_code"):
                raise
            res.error_code = error_from(exc).error_code
            return res, None
        if region is not None and region.length > 0 and (region.length <= limit or min_one):
            res.records = region
    return res, leo


def list_offset(part: Partition, timestamp: int, *, isolation_level: int,
                replica_id: int) -> tuple[int, int, int]:
    """(timestamp, offset, leader_epoch) for ListOffsets on a led partition; (-1, -1, -1)
    when no record qualifies. A follower (``replica_id`` >= 0) reads with no isolation:
    latest is the log end offset. Raises ReplicaError."""
    client = replica_id < 0
    if not client:
        fetchable = part.log_end_offset
    elif isolation_level == READ_COMMITTED:
        fetchable = part.last_stable_offset
    else:
        fetchable = part.high_watermark
    # Kafka: a new leader whose HW still lags the start of its epoch cannot answer
    # "latest" (or a timestamp past what is fetchable) for clients yet
    lagging = client and part.leader_epoch_start > part.high_watermark
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        off = part.log_start_offset
        return -1, off, _epoch_for_offset(part, off)
    if timestamp == LATEST_TIMESTAMP:
        if lagging:
            raise ReplicaError(ErrorCode.OFFSET_NOT_AVAILABLE)
        return -1, fetchable, part.leader_epoch
    if timestamp == MAX_TIMESTAMP:
        found = part.log.max_timestamp_offset()
        if found is None:
            return -1, -1, -1
        off, ts = _as_offset_ts(found)
        if off < 0 or off >= fetchable:
            return -1, -1, -1
        return ts, off, _epoch_for_offset(part, off)
    if timestamp < 0:
        raise ReplicaError(ErrorCode.INVALID_REQUEST, f"unknown special timestamp {timestamp}")
    found = part.log.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1, -1
    off, ts = _as_offset_ts(found)
    if off >= fetchable:
        if lagging:
            raise ReplicaError(ErrorCode.OFFSET_NOT_AVAILABLE)
        return -1, -1, -1
    return ts, off, _epoch_for_offset(part, off)


def _as_offset_ts(found) -> tuple[int, int]:
    if hasattr(found, "offset"):
        return found.offset, found.timestamp
    return found[0], found[1]


def _epoch_for_offset(part: Partition, offset: int) -> int:
    epoch = part.log.epoch_for_offset(offset)
    return -1 if epoch is None else epoch
