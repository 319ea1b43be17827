"""Committed offsets of every group, durable in ``__consumer_offsets`` (Kafka's
``OffsetMetadataManager``): OffsetCommit, OffsetFetch, OffsetDelete, transactional
offsets (staged until their marker), and retention.

Offsets belong to a group id whatever the group's type; what a commit must prove is the
type's business (a classic member's generation, a consumer member's epoch), so the
checks are delegated to the group type's protocol (``validate_offset_commit``). Offset
changes take effect by *replaying* their records once appended. Retention follows
``offsets.retention.minutes``, counted as the group type says
(``offsets_expiry_base``). Timer: ``("offsets-expiry",)``, every
``offsets.retention.check.interval.ms`` on the shard's monotonic timers; whether an offset
has expired compares wall-clock times (its commit or expire timestamp, the group's state
timestamp) with the wall-clock ``now``, as Kafka's ``cleanupExpiredOffsets`` does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbroker.wire.error_codes import ErrorCode as E

from . import records as rec
from .base import ShardPart, append_error_to_response_error
from .classic.state import ClassicGroup
from .records import CoordinatorRecord, OffsetKey


@dataclass
class OffsetAndMetadata:
    """A committed offset with its metadata."""
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None


class OffsetMetadataManager(ShardPart):
    """Owns ``offsets`` (group → (topic, partition) → OffsetAndMetadata) and
    ``pending_txn_offsets`` (producer id → group → staged offsets)."""

    def __init__(self, shard) -> None:
        super().__init__(shard)
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        # producer id -> group -> {(topic, partition): OffsetAndMetadata}: staged by
        # transactional offset commits, visible only once the transaction commits
        self.pending_txn_offsets: dict[int, dict[str, dict[tuple[str, int], OffsetAndMetadata]]] = {}

    def _simple_group(self, gid: str, now: int) -> ClassicGroup:
        """Offsets committed outside any group protocol make an Empty classic group (as
        Kafka: a "simple" group)."""
        g = self.groups[gid] = ClassicGroup(gid, state_timestamp_ms=now)
        return g

    # ----------------------------------------------------------------- OffsetCommit
    def commit(self, gid, mid, gen, instance, topics, now, retention_ms, api_version):
        """``topics``: [(topic, [(partition, offset, leader_epoch, metadata)])]. Response:
        [(topic, [(partition, error)])]. Offsets become visible when the records are
        appended (replay)."""
        def all_failed(code):
            return [(t, [(p[0], int(code)) for p in parts]) for t, parts in topics]
        if not gid:
            return all_failed(E.INVALID_GROUP_ID)
        err = self.coordinator_error(gid)
        if err:
            return all_failed(err)
        group = self.groups.get(gid)
        if group is None:
            if gen >= 0:
                return all_failed(E.GROUP_ID_NOT_FOUND if api_version >= 9 else E.ILLEGAL_GENERATION)
            # a simple consumer (assign + commit): the group exists from now on, Empty
            group = self._simple_group(gid, now)
        err = self.shard.protocol_of(group).validate_offset_commit(group, mid, instance, gen,
                                                                   now, api_version)
        per_partition = None
        if callable(err):
            per_partition, err = err, E.NONE        # KIP-1251: checked partition by partition
        if err:
            return all_failed(err)
        expire = None if retention_ms is None or retention_ms < 0 else now + retention_ms
        part = self.partition_for(gid)
        records, response = [], []
        for topic, parts in topics:
            presp = []
            for p, offset, epoch, metadata in parts:
                metadata = "" if metadata is None else metadata
                if len(metadata) > self.config.offset_metadata_max_bytes:
                    presp.append((p, int(E.OFFSET_METADATA_TOO_LARGE)))
                    continue
                code = per_partition(topic, p) if per_partition is not None else E.NONE
                if code:
                    presp.append((p, int(code)))
                    continue
                records.append(rec.offset_commit_record(
                    part, gid, topic, p, offset=offset, leader_epoch=epoch, metadata=metadata,
                    commit_timestamp=now, expire_timestamp=expire))
                presp.append((p, int(E.NONE)))
            response.append((topic, presp))

        def then(error: int, t: int) -> None:
            if error:
                code = append_error_to_response_error(error)
                self._out.response = [(tp, [(p, code if c == E.NONE else c) for p, c in ps])
                                      for tp, ps in response]
            else:
                self.counters["offset_commits"] += len(records)
        self._emit(records, replay=True, then=then)
        return response

    # ----------------------------------------------------------------- OffsetFetch
    def fetch(self, group_id: str, topics: list[tuple[str, list[int]]] | None,
              require_stable: bool = False, member_id: str | None = None,
              member_epoch: int = -1):
        """Returns (error, [(topic, [(partition, offset, leader_epoch, metadata, error)])]).
        ``topics`` None means every committed offset of the group. ``member_id`` and
        ``member_epoch`` (OffsetFetch v9+) are checked by consumer groups."""
        if not group_id:
            return E.INVALID_GROUP_ID, []
        err = self.coordinator_error(group_id)
        if err:
            return err, []
        group = self.groups.get(group_id)
        check = getattr(self.shard.protocol_of(group), "validate_offset_fetch", None) \
            if group is not None else None
        if check is not None:
            err = check(group, member_id, member_epoch)
            if err:
                return err, []
        offsets = {} if group is None or group.is_dead() else self.offsets.get(group_id, {})
        pending = self._pending_partitions(group_id) if require_stable else set()

        def entry(t, p):
            if (t, p) in pending:
                return (p, -1, -1, "", int(E.UNSTABLE_OFFSET_COMMIT))
            o = offsets.get((t, p))
            if o is None:
                return (p, -1, -1, "", 0)
            return (p, o.offset, o.leader_epoch, o.metadata, 0)
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for (t, p) in offsets:
                by_topic.setdefault(t, []).append(p)
            topics = [(t, sorted(ps)) for t, ps in by_topic.items()]
        return E.NONE, [(t, [entry(t, p) for p in ps]) for t, ps in topics]

    def _pending_partitions(self, group_id: str) -> set[tuple[str, int]]:
        out: set[tuple[str, int]] = set()
        for by_group in self.pending_txn_offsets.values():
            out.update(by_group.get(group_id, {}))
        return out

    # ----------------------------------------------------------------- OffsetDelete
    def delete(self, gid, topics, now):
        """OffsetDelete. Response: (error, [(topic, [(partition, error)])])."""
        if not gid:
            return E.INVALID_GROUP_ID, []
        err = self.coordinator_error(gid)
        if err:
            return err, []
        group = self.groups.get(gid)
        if group is None or group.is_dead():
            return E.GROUP_ID_NOT_FOUND, []
        err = group.validate_offset_delete()
        if err:
            return err, []
        offsets = self.offsets.get(gid, {})
        part = self.partition_for(gid)
        records, response = [], []
        for topic, parts in topics:
            subscribed = not group.is_empty() and group.is_subscribed_to(topic)
            presp = []
            for p in parts:
                if subscribed:
                    presp.append((p, int(E.GROUP_SUBSCRIBED_TO_TOPIC)))
                    continue
                if (topic, p) in offsets:
                    records.append(rec.offset_tombstone(part, gid, topic, p))
                presp.append((p, int(E.NONE)))
            response.append((topic, presp))

        def then(error: int, t: int) -> None:
            if error:
                self._out.response = (append_error_to_response_error(error), [])
            else:
                self.counters["offset_deletions"] += len(records)   # Kafka's OffsetDeletions
        self._emit(records, replay=True, then=then)
        return E.NONE, response

    def deletion_records(self, gid: str) -> list[CoordinatorRecord]:
        """Tombstones for every committed offset of ``gid`` (DeleteGroups)."""
        part = self.partition_for(gid)
        return [rec.offset_tombstone(part, gid, t, p) for (t, p) in self.offsets.get(gid, {})]

    # ----------------------------------------------------------------- retention
    def schedule_expiry(self) -> None:
        self.timers.schedule(("offsets-expiry",), self.config.offsets_retention_check_interval_ms,
                             self._expiry_timer)

    def _expiry_timer(self, now: int) -> None:
        self._emit(self.expired_records(now), replay=True)
        self.schedule_expiry()

    def expired_records(self, now: int) -> list[CoordinatorRecord]:
        """Tombstones for offsets past retention at the wall-clock time ``now``, and for
        Empty groups left with none."""
        out: list[CoordinatorRecord] = []
        retention = self.config.offsets_retention_ms
        loaded = self.shard.loaded
        for gid, g in list(self.groups.items()):
            if self.partition_for(gid) not in loaded or g.is_dead():
                continue
            offsets = self.offsets.get(gid, {})
            base = g.offsets_expiry_base()
            if base is None:
                continue
            pending = self._pending_partitions(gid)
            part = self.partition_for(gid)
            all_expired = True
            for (t, p), o in offsets.items():
                if o.expire_timestamp_ms is not None:
                    expired = now >= o.expire_timestamp_ms
                else:
                    expired = now - base(o) >= retention
                if expired and (t, p) not in pending and not g.is_subscribed_to(t):
                    out.append(rec.offset_tombstone(part, gid, t, p))
                    self.counters["offsets_expired"] += 1
                else:
                    all_expired = False
            if all_expired and g.is_empty() and not pending:
                out.extend(self.shard.protocol_of(g).group_tombstones(g))
        return out

    # ----------------------------------------------------------------- replay
    def replay(self, k: OffsetKey, value: bytes | None) -> None:
        decoded = rec.decode_offset_value(value)
        offsets = self.offsets.setdefault(k.group, {})
        if decoded is None:
            offsets.pop((k.topic, k.partition), None)
            if not offsets:
                del self.offsets[k.group]
            return
        v, version = decoded
        offsets[(k.topic, k.partition)] = OffsetAndMetadata(
            v.offset, v.leader_epoch if version >= 3 else -1, v.metadata, v.commit_timestamp,
            v.expire_timestamp if version == 1 and v.expire_timestamp >= 0 else None)
        if k.group not in self.groups:
            self.groups[k.group] = ClassicGroup(k.group, state_timestamp_ms=-1)

    # ----------------------------------------------------------------- transactional offsets
    # Hooks for the transaction coordinator (kbroker/txn): TxnOffsetCommit writes offset
    # records in a transactional batch of the producer; they are staged here and become
    # visible when the commit marker reaches their __consumer_offsets partition.
    def validate_txn_commit(self, group_id: str, member_id: str,
                            group_instance_id: str | None, generation_id: int) -> int:
        """Kafka's ``validateTransactionalOffsetCommit``: an unknown group with generation
        -1 becomes a simple group; otherwise the group's type decides."""
        if not group_id:
            return E.INVALID_GROUP_ID
        err = self.coordinator_error(group_id)
        if err:
            return err
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return E.ILLEGAL_GENERATION
            return E.NONE
        return self.shard.protocol_of(group).validate_txn_offset_commit(
            group, member_id, group_instance_id, generation_id)

    def stage_txn(self, producer_id: int, group_id: str,
                  offsets: dict[tuple[str, int], OffsetAndMetadata]) -> None:
        if group_id not in self.groups:
            self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=-1)
        self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)

    def replay_txn_records(self, producer_id: int, records) -> None:
        """Load: ``(key, value)`` of a transactional batch in ``__consumer_offsets``."""
        for key, value in records:
            k = rec.decode_key(key)
            if not isinstance(k, OffsetKey):
                continue
            decoded = rec.decode_offset_value(value)
            if decoded is None:
                continue
            v, version = decoded
            self.stage_txn(producer_id, k.group, {(k.topic, k.partition): OffsetAndMetadata(
                v.offset, v.leader_epoch if version >= 3 else -1, v.metadata, v.commit_timestamp)})

    def complete_txn(self, producer_id: int, partition: int, commit: bool) -> int:
        """A marker of ``producer_id`` reached ``__consumer_offsets-partition``: its staged
        offsets of groups on that partition become committed (or are dropped)."""
        by_group = self.pending_txn_offsets.get(producer_id)
        if not by_group:
            return 0
        n = 0
        for gid in [g for g in by_group if self.partition_for(g) == partition]:
            staged = by_group.pop(gid)
            n += len(staged)
            if commit:
                self.offsets.setdefault(gid, {}).update(staged)
                if gid not in self.groups:
                    self.groups[gid] = ClassicGroup(gid, state_timestamp_ms=-1)
        if not by_group:
            del self.pending_txn_offsets[producer_id]
        return n

    def statistics(self) -> dict:
        return {"committed_offsets": sum(len(o) for o in self.offsets.values()),
                "pending_txn_offsets": sum(len(o) for g in self.pending_txn_offsets.values()
                                           for o in g.values())}
