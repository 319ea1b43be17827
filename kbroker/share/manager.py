"""The share-partition manager (Kafka's ``SharePartitionManager``): the share-partitions this
broker leads, read from the log for ShareFetch and acknowledged by ShareFetch and
ShareAcknowledge, with the lock-expiry timer and the persister behind them.

A share-partition is created on first use: its start offset comes from the persisted
state when there is one, otherwise from ``share.auto.offset.reset`` (GROUP config;
``latest`` by default = the high watermark, or the last stable offset under
``share.isolation.level=read_committed``; ``earliest`` = the log start offset).

Reading: from the first AVAILABLE in-flight offset (or the end offset), whole batches as
Fetch returns them; the batches are walked (headers only) to learn their offsets, which are
control records, and which belong to aborted transactions (read_committed) — those are
archived, never delivered. The answer holds the batches that contain acquired records and
the acquired ranges (``AcquiredRecords``); the client delivers only those.

Long polling: with nothing to acquire, the request waits up to ``MaxWaitMs`` for new data
(woken by appends), re-checking every 250 ms for released or expired records.

Every change of a share-partition's state is written through the persister before the
request is answered (acknowledgements) or right after (acquisitions: a lost acquisition
only means a redelivery, which the delivery count allows).

Records archived for good (delivery count limit, REJECT) are written to the group's
dead-letter topic by a task beside the lock timer, as Kafka's DLQ manager sends them from a
thread of its own (KIP-1191, ``dlq.py``).

Acquisition locks run on the broker clock's monotonic reading (``lock_clock_ms``), as
Kafka's share-partitions time them on ``hiResClockMs``: a step of the node's wall clock
neither releases every acquired record at once (forward) nor keeps records locked past their
duration (back). What the persister writes (snapshot timestamps) stays on the wall clock.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

import trio

from kbroker.common.clock import monotonic_reader
from kbroker.replica import (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, READ_COMMITTED,
                             READ_UNCOMMITTED, FetchSpec, ReplicaError)
from kbroker.wire import records as wire_records
from kbroker.wire.error_codes import ErrorCode as E

from .dlq import DeadLetter, DeadLetterWriter
from .partition import AcquiredRange, SharePartition, StateBatch
from .sessions import ShareSessionCache

log = logging.getLogger("kbroker.share")

Key = tuple[str, uuid.UUID, int]       # group id, topic id, partition


@dataclass
class PartitionFetch:
    """One share partition's part of a ShareFetch answer: records and acquired ranges."""
    error: int = 0
    records: bytes = b""
    acquired: list[AcquiredRange] = field(default_factory=list)
    leader_epoch: int = -1


class SharePartitionManager:
    def __init__(self, broker, share_groups, persister=None) -> None:
        self.broker = broker
        self.share_groups = share_groups
        self.persister = persister
        self.partitions: dict[Key, SharePartition] = {}
        self.sessions = ShareSessionCache(
            int(getattr(broker.config, "values", {}).get("group.share.max.share.sessions", 2000)))
        self.stats = {"acquired": 0, "acknowledged": 0, "lock_expiries": 0, "persist_errors": 0}
        # share-partitions to write -> whether the write is one Kafka makes too (it moves the
        # written start offset on, F-970) or kbroker's own record of an acquisition
        self.dirty: dict[Key, bool] = {}
        self._epochs: dict[Key, int] = {}          # leader epoch each share-partition was loaded in
        self.lock_clock_ms = monotonic_reader(broker.clock)   # acquisition locks' clock
        # dead letters (KIP-1191, share.version 2) go to the group's DLQ topic
        self.dlq = DeadLetterWriter(broker, rpc=getattr(persister, "_rpc", None))

    # ------------------------------------------------------------------ share-partitions
    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        t = getattr(self.broker.metadata, "topics_by_id", {}).get(topic_id)
        return None if t is None else t.name

    def _isolation(self, group_id: str) -> int:
        cfg = self.share_groups.config_for(group_id)
        return READ_COMMITTED if cfg.isolation_level == "read_committed" else READ_UNCOMMITTED

    def _leader_epoch(self, name: str, partition: int) -> int:
        part = self.broker.replicas.get_partition(name, partition)      # leader check
        return getattr(part, "leader_epoch", -1)

    async def get(self, group_id: str, topic_id: uuid.UUID, partition: int) -> SharePartition:
        """The share-partition, created (from persisted state or the reset policy) on
        first use in this leadership. Raises ReplicaError (not the leader, unknown
        partition)."""
        key = (group_id, topic_id, partition)
        cfg = self.share_groups.config_for(group_id)
        name = self._topic_name(topic_id)
        if name is None:
            raise ReplicaError(E.UNKNOWN_TOPIC_OR_PARTITION)
        epoch = self._leader_epoch(name, partition)
        sp = self.partitions.get(key)
        if sp is not None and self._epochs.get(key) == epoch:
            sp.lock_duration_ms = cfg.record_lock_duration_ms
            sp.delivery_count_limit = cfg.delivery_count_limit
            sp.max_in_flight = cfg.partition_max_record_locks
            return sp
        kw = dict(lock_duration_ms=cfg.record_lock_duration_ms,
                  delivery_count_limit=cfg.delivery_count_limit,
                  max_in_flight=cfg.partition_max_record_locks)
        saved = await self.persister.read_async(group_id, topic_id, partition) \
            if self.persister else None
        existing = self.partitions.get(key)
        if existing is not None and self._epochs.get(key) == epoch:
            return existing                     # created meanwhile by another request
        if saved is not None and saved[0] >= 0:
            start, state_epoch, batches = saved
            sp = SharePartition.from_state(start, batches, state_epoch=state_epoch, **kw)
            self.partitions[key] = sp
        else:
            iso = self._isolation(group_id)
            ts = EARLIEST_TIMESTAMP if cfg.auto_offset_reset == "earliest" else LATEST_TIMESTAMP
            _, start, _ = self.broker.replicas.list_offset(name, partition, ts, isolation_level=iso)
            sp = SharePartition(max(start, 0), **kw)
            self.partitions[key] = sp
            # the start offset is durable before anything is delivered: a restart must not
            # re-apply "latest" and skip what was produced meanwhile
            self._persist(group_id, topic_id, partition, sp)
            await self.flush()
        self._epochs[key] = epoch
        return sp

    def _persist(self, group_id, topic_id, partition, sp: SharePartition | None = None,
                 *, advance: bool = True) -> None:
        """Mark a share-partition's state to be written by the next :meth:`flush`;
        ``advance`` False for an acquisition, which Kafka does not write (kbroker does, so
        delivery counts outlive a restart): it repeats the start offset last written."""
        if self.persister is not None:
            key = (group_id, topic_id, partition)
            self.dirty[key] = self.dirty.get(key, False) or advance

    async def flush(self) -> dict:
        """Write every changed share-partition's snapshot; ``{key: error}`` of failed ones."""
        failed: dict = {}
        while self.dirty:
            key = next(iter(self.dirty))
            advance = self.dirty.pop(key)
            sp = self.partitions.get(key)
            if sp is None:
                continue
            start, batches = sp.take_snapshot(advance=advance)   # one write behind (F-970)
            code = await self.persister.write_async(*key, start, sp.state_epoch, batches)
            if code:
                failed[key] = code
                self.stats["persist_errors"] += 1
                log.warning("writing the state of share-partition %s failed: %s", key, E(code).name)
        return failed

    async def _write_dead_letters(self) -> None:
        """Hand the offsets archived for good since the last flush to the group's DLQ
        (``kbroker/share/dlq.py``; nothing is written without one or below share.version 2)."""
        for (group_id, tid, p), sp in list(self.partitions.items()):
            if not sp.dead_letters:
                continue
            letters = [DeadLetter(*d) for d in sp.take_dead_letters()]
            name = self._topic_name(tid)
            if name is None:
                continue
            try:
                await self.dlq.write(group_id, name, p, letters, now_ms=self.broker.clock.now_ms())
            except Exception:                  # noqa: BLE001 - a DLQ write never fails the state
                log.exception("writing dead letters of %s-%d for %s failed", name, p, group_id)

    # ------------------------------------------------------------------ acknowledgements
    async def acknowledge(self, group_id: str, member_id: str, topic_id: uuid.UUID,
                          partition: int, batches) -> int:
        """``batches``: (first offset, last offset, [types]). All-or-nothing per batch; the
        first error is answered. Durable before it returns NONE."""
        try:
            sp = await self.get(group_id, topic_id, partition)
        except ReplicaError as e:
            return e.error_code
        now = self.lock_clock_ms()
        renew_enabled = self.share_groups.config_for(group_id).renew_acknowledge_enable
        err = E.NONE
        changed = False
        for first, last, types in batches:
            if last - first + 1 > 1_000_000:
                return E.INVALID_REQUEST
            code = sp.acknowledge(member_id, first, last, list(types), now,
                                  renew_enabled=renew_enabled)
            if code:
                err = err or code
            else:
                changed = True
                self.stats["acknowledged"] += last - first + 1
        if changed:
            self._persist(group_id, topic_id, partition, sp)
            failed = await self.flush()
            if (group_id, topic_id, partition) in failed:
                return failed[(group_id, topic_id, partition)]
        return err

    def release_member(self, group_id: str, member_id: str) -> None:
        for (g, tid, p), sp in self.partitions.items():
            if g == group_id and sp.release_member(member_id):
                self._persist(g, tid, p, sp)

    def close_session(self, group_id: str, member_id: str) -> None:
        if self.sessions.close(group_id, member_id) is not None:
            self.release_member(group_id, member_id)

    def connection_closed(self, group_id: str, member_id: str, connection) -> None:
        """The connection that opened the member's share session closed: the session ends
        and the member's acquired records are released (Kafka's share session cache)."""
        if self.sessions.close_if_on(group_id, member_id, connection) is not None:
            self.release_member(group_id, member_id)

    # ------------------------------------------------------------------ fetching
    async def fetch(self, group_id: str, member_id: str, partitions: list[tuple[uuid.UUID, int]],
                    *, max_records: int, max_wait_ms: int, max_bytes: int) -> dict:
        deadline = trio.current_time() + max(0, max_wait_ms) / 1000.0
        while True:
            out = await self._fetch_once(group_id, member_id, partitions, max_records, max_bytes)
            await self.flush()
            if any(r.acquired or r.error for r in out.values()) or trio.current_time() >= deadline:
                return out
            specs = []
            for tid, p in partitions:
                sp = self.partitions.get((group_id, tid, p))
                name = self._topic_name(tid)
                if sp is not None and name is not None:
                    specs.append(FetchSpec(name, p, sp.end_offset, 1))
            wait = min(deadline - trio.current_time(), 0.25)
            if wait <= 0:
                return out
            if specs:
                try:
                    await self.broker.replicas.fetch(specs, max_bytes=1, min_bytes=1,
                                                     max_wait_ms=int(wait * 1000),
                                                     isolation_level=self._isolation(group_id))
                except ReplicaError:
                    pass
                if trio.current_time() < deadline:
                    await trio.sleep(0)
            else:
                await trio.sleep(wait)

    async def _fetch_once(self, group_id, member_id, partitions, max_records, max_bytes) -> dict:
        out: dict = {}
        left = max(1, max_records)
        iso = self._isolation(group_id)
        for tid, p in partitions:
            try:
                sp = await self.get(group_id, tid, p)
            except ReplicaError as e:
                out[(tid, p)] = PartitionFetch(error=e.error_code)
                continue
            if left <= 0:       # MaxRecords reached: not read this round, nor answered
                continue
            now = self.lock_clock_ms()
            if sp.expire_locks(now):
                self.stats["lock_expiries"] += 1
                self._persist(group_id, tid, p, sp)
            r = self._read_partition(group_id, member_id, sp, tid, p, left, max_bytes, iso, now)
            if r.acquired:
                n = sum(a.last_offset - a.first_offset + 1 for a in r.acquired)
                left -= n
                self.stats["acquired"] += n
                self._persist(group_id, tid, p, sp, advance=False)
            out[(tid, p)] = r
        return out

    def _read_partition(self, group_id, member_id, sp: SharePartition, tid, p, max_records,
                        max_bytes, iso, now) -> PartitionFetch:
        name = self._topic_name(tid)
        if name is None:
            return PartitionFetch(error=E.UNKNOWN_TOPIC_OR_PARTITION)
        avail = [o for o, r in sp.in_flight.items() if r.state == 0]
        start = min(avail) if avail else sp.end_offset
        spec = FetchSpec(name, p, start, max(1, max_bytes))
        res = self.broker.replicas.read_all([spec], max(1, max_bytes), isolation_level=iso)[0]
        if res.error_code == E.OFFSET_OUT_OF_RANGE and res.log_start_offset > start:
            sp.advance_start_to(res.log_start_offset)
            self._persist(group_id, tid, p, sp)
            return PartitionFetch()
        if res.error_code:
            return PartitionFetch(error=res.error_code)
        if res.log_start_offset > sp.start_offset:
            sp.advance_start_to(res.log_start_offset)
        if res.records is None or res.size == 0:
            return PartitionFetch(leader_epoch=res.leader_epoch)
        data = res.records.read_bytes() if hasattr(res.records, "read_bytes") else bytes(res.records)
        batches, skip = _walk(data, res.aborted_transactions if iso == READ_COMMITTED else None)
        if not batches:
            return PartitionFetch(leader_epoch=res.leader_epoch)
        limit = batches[-1][1] + 1
        available_end = res.last_stable_offset if iso == READ_COMMITTED else res.high_watermark
        acquired = sp.acquire(member_id, available_end, max_records, now, skip=skip,
                              limit_offset=limit, batch_ends=[b[1] for b in batches])
        if not acquired:
            return PartitionFetch(leader_epoch=res.leader_epoch)
        parts = []
        for first, last, pos, end in batches:
            if any(a.first_offset <= last and a.last_offset >= first for a in acquired):
                parts.append(data[pos:end])
        return PartitionFetch(records=b"".join(parts), acquired=acquired,
                              leader_epoch=res.leader_epoch)

    # ------------------------------------------------------------------ timers
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            # dead letters are written beside the timer, so neither an acknowledgement's
            # answer nor the lock expiries wait for a DLQ partition's replication
            nursery.start_soon(self._dead_letter_loop)
            task_status.started()
            while True:
                await trio.sleep(0.25)
                now = self.lock_clock_ms()
                for (g, tid, p), sp in list(self.partitions.items()):
                    d = sp.next_lock_deadline_ms()
                    if d is not None and d <= now and sp.expire_locks(now):
                        self.stats["lock_expiries"] += 1
                        self._persist(g, tid, p, sp)
                try:
                    await self.flush()
                except Exception:                  # noqa: BLE001 - keep the timer alive
                    log.exception("persisting share-partitions failed")

    async def _dead_letter_loop(self) -> None:
        while True:
            await trio.sleep(0.25)
            await self._write_dead_letters()

    def statistics(self) -> dict:
        return {**self.stats, **self.dlq.statistics(), "share_partitions": len(self.partitions),
                "share_sessions": len(self.sessions.sessions)}


def _walk(data: bytes, aborted) -> tuple[list[tuple[int, int, int, int]], set[int]]:
    """(first offset, last offset, start, end) of each whole batch in ``data``, and the
    offsets not to deliver: control records, and (``aborted`` not None) the records of
    aborted transactions (``aborted``: (producer id, first offset) pairs)."""
    out, skip = [], set()
    pending = sorted((first, pid) for pid, first in (aborted or []))
    active: set[int] = set()
    for pos, h in wire_records.iter_batches(data, allow_truncated_tail=True):
        first = h.base_offset
        last = first + h.last_offset_delta
        end = pos + wire_records.LOG_OVERHEAD + h.batch_length \
            if hasattr(wire_records, "LOG_OVERHEAD") else pos + 12 + h.batch_length
        out.append((first, last, pos, end))
        while pending and pending[0][0] <= last:
            active.add(pending.pop(0)[1])
        if h.is_control:
            skip.update(range(first, last + 1))
            active.discard(h.producer_id)
        elif h.is_transactional and h.producer_id in active:
            skip.update(range(first, last + 1))
    return out, skip
