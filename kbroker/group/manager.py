"""The group coordinator's shard: every group of every type and every committed offset
this node serves, as one pure state machine.

Inputs are events with the current time: the group APIs, timer expiry, records replayed
from ``__consumer_offsets``. Outputs are a :class:`~kbroker.group.base.Result`: records to
append, replies for parked requests (``(slot, response)``), an immediate response, and
continuations to run once the records are durable. Deadlines live in a
:class:`~kbroker.group.timers.TimerTable` the driver polls. Nothing here reads a clock,
sleeps, does I/O or imports trio (ARCHITECTURE.md, rules 1, 4 and 7); :mod:`kbroker.group.service`
is the trio driver.

Two readings of time come with every event, as Kafka's coordinator reads two clocks:

- ``now_ms``, the wall clock: what records carry and what is compared with what records
  carry — commit and expire timestamps and offsets retention, group state timestamps,
  target assignment timestamps and the assignment interval measured from them, resolved
  regular expressions' refresh times (Kafka: ``time.milliseconds()``);
- ``mono_ms``, a monotonic clock: every timer of the shard — session timeouts, rebalance,
  join and sync timeouts, the initial rebalance delays, the offsets expiry period (Kafka's
  ``CoordinatorTimer``, on ``SystemTimer``'s ``hiResClockMs``). Protocols schedule a *delay*
  (``timers.schedule(key, delay_ms, op)``); a step of the wall clock, forward or back,
  neither expires a member nor holds a rebalance back. Leaving ``mono_ms`` out passes the
  same reading as ``now_ms`` (scripted traces whose two clocks agree).

The shape is Kafka 4's group coordinator (``GroupCoordinatorShard``): this class owns the
plumbing every group type shares — the group table (one group id → one group of one
type), the timers, the outbox, which ``__consumer_offsets`` partitions are loaded, replay
dispatch by record key — and hands each event to its part:

- :class:`~kbroker.group.classic.protocol.ClassicGroupProtocol` — JoinGroup, SyncGroup,
  Heartbeat, LeaveGroup (``GroupMetadataManager.classicGroup*``);
- :class:`~kbroker.group.consumer.protocol.ConsumerGroupProtocol` — ConsumerGroupHeartbeat
  and ConsumerGroupDescribe (KIP-848, ``GroupMetadataManager.consumerGroup*``);
- :class:`~kbroker.group.share.protocol.ShareGroupProtocol` — ShareGroupHeartbeat and
  ShareGroupDescribe (KIP-932, ``GroupMetadataManager.shareGroup*``);
- :class:`~kbroker.group.offsets.OffsetMetadataManager` — OffsetCommit/Fetch/Delete,
  transactional offsets, retention (``OffsetMetadataManager``).

A group type plugs in with its own group class (pure state machine) and protocol part;
``protocol_of(group)`` finds the part of a group.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Callable

from kbroker.wire.error_codes import ErrorCode as E

from . import records as rec
from .base import (DescribedGroup, Result, append_error_to_response_error)  # noqa: F401
from .classic.protocol import ClassicGroupProtocol, JoinRequest, JoinResponse, SyncResponse  # noqa: F401
from .classic.state import ClassicGroup, GroupState
from .config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupConfig  # noqa: F401
from .offsets import OffsetAndMetadata, OffsetMetadataManager  # noqa: F401
from .records import CoordinatorRecord, GroupKey, OffsetKey
from .timers import TimerTable

if TYPE_CHECKING:
    from .consumer.protocol import ConsumerGroupProtocol, HeartbeatRequest
    from .consumer.topics import TopicsView
    from .share.protocol import ShareGroupProtocol
    from .streams.protocol import StreamsGroupProtocol, StreamsHeartbeatRequest

# The record key classes of the group types loaded on first use, by class name (a key of
# such a type only exists once kbroker.group.records.decode_key imported its module).
_PART_OF_KEY = {"ConsumerKey": "consumer", "StreamsKey": "streams", "ShareKey": "share"}


def _default_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


class GroupManager:
    """Owns every group and every committed offset of this coordinator.

    Invariants: a group id maps to at most one live group (of one type); timers are keyed
    by a tuple whose second element (if any) is the group id; entry points never raise on
    bad client input — they answer with a Kafka error code.
    """

    def __init__(self, config: GroupConfig | None = None,
                 member_id_factory: Callable[[str], str] = _default_member_id) -> None:
        self.config = config or GroupConfig()
        self.groups: dict[str, Any] = {}
        self.timers = TimerTable()
        self.loaded: set[int] = set()     # __consumer_offsets partitions we serve
        self.loading: set[int] = set()
        self._new_id = member_id_factory
        self._out: Result | None = None
        # monotonic counts of what this shard did (statistics(), /metrics' group coordinator
        # families): ``rebalances`` classic rebalances begun; Kafka's GroupCoordinatorMetrics
        # sensors are ``classic_rebalances_completed`` (CompletedRebalances: a leader's
        # assignment written, the group Stable), ``<type>_rebalances`` (a heartbeat bumped
        # a consumer, share or streams group's epoch), ``offset_commits`` (offsets committed,
        # transactional ones when the TxnOffsetCommit is written), ``offsets_expired`` and
        # ``offset_deletions`` (OffsetDelete). Only integer adds on the paths that count.
        self.counters = {"rebalances": 0, "members_expired": 0, "offsets_expired": 0,
                         "offset_commits": 0, "offset_deletions": 0,
                         "classic_rebalances_completed": 0, "consumer_rebalances": 0,
                         "share_rebalances": 0, "streams_rebalances": 0}
        self.classic = ClassicGroupProtocol(self)
        self.offset_manager = OffsetMetadataManager(self)
        self._protocols: dict[type, Any] = {ClassicGroup: self.classic}
        # consumer (KIP-848), share (KIP-932) and streams (KIP-1071) groups: their
        # protocol parts (and modules) are made on first use, see _part()
        self._parts: dict[str, Any] = {}
        self._topics: TopicsView | None = None
        # called with (name, part) when a part is made: the driver gives it its configs
        self.part_setup: Callable[[str, Any], None] | None = None
        self._part_attrs: dict[str, dict[str, Any]] = {}

    # ----------------------------------------------------------------- group types
    @property
    def consumer(self) -> "ConsumerGroupProtocol":
        return self._parts.get("consumer") or self._part("consumer")

    @property
    def share(self) -> "ShareGroupProtocol":
        return self._parts.get("share") or self._part("share")

    @property
    def streams(self) -> "StreamsGroupProtocol":
        return self._parts.get("streams") or self._part("streams")

    def _part(self, name: str) -> Any:
        """Make the protocol part of a group type on its first use: a node that never
        sees a consumer, share or streams group never imports their modules (start-up)."""
        if name == "consumer":
            from .consumer.protocol import ConsumerGroupProtocol
            from .consumer.state import ConsumerGroup
            part, group_cls = ConsumerGroupProtocol(self), ConsumerGroup
            if self._topics is not None:
                part.topics = self._topics
        elif name == "share":
            from .share.protocol import ShareGroupProtocol
            from .share.state import ShareGroup
            part, group_cls = ShareGroupProtocol(self), ShareGroup
        elif name == "streams":
            from .streams.protocol import StreamsGroupProtocol
            from .streams.state import StreamsGroup
            part, group_cls = StreamsGroupProtocol(self), StreamsGroup
        else:
            raise KeyError(name)
        self._parts[name] = part
        self._protocols[group_cls] = part
        for attr, value in self._part_attrs.get(name, {}).items():
            setattr(part, attr, value)
        if self.part_setup is not None:
            self.part_setup(name, part)
        return part

    def set_part_attr(self, name: str, attr: str, value: Any) -> None:
        """Set ``attr`` on the group type's part now if it is made, else when it is."""
        self._part_attrs.setdefault(name, {})[attr] = value
        part = self._parts.get(name)
        if part is not None:
            setattr(part, attr, value)

    # ----------------------------------------------------------------- plumbing
    @property
    def offsets(self) -> dict:
        return self.offset_manager.offsets

    @property
    def pending_txn_offsets(self) -> dict:
        return self.offset_manager.pending_txn_offsets

    def protocol_of(self, group) -> Any:
        """The protocol part that rules ``group``'s type."""
        return self._protocols[type(group)]

    def partition_for(self, group_id: str) -> int:
        return rec.partition_for(group_id, self.config.num_partitions)

    def _run(self, fn: Callable[[], Any], now_ms: int | None = None,
             mono_ms: int | None = None) -> Result:
        """Handle one event at ``now_ms``/``mono_ms`` (the timers' clock moves to the
        monotonic reading first); the event's outbox is the result."""
        if mono_ms is not None or now_ms is not None:
            self.timers.advance(now_ms if mono_ms is None else mono_ms)
        outer, self._out = self._out, Result()
        try:
            resp = fn()
            res = self._out
            if resp is not None:
                res.response = resp
            return res
        finally:
            self._out = outer

    def _reply(self, slot: Any, response: Any) -> bool:
        if slot is None:
            return False
        self._out.replies.append((slot, response))
        return True

    def _emit(self, records: list[CoordinatorRecord], *, replay: bool = False,
              then: Callable[[int, int], None] | None = None) -> None:
        out = self._out
        out.records.extend(records)
        out.replay.extend([replay] * len(records))
        if then is not None:
            out.continuations.append(then)

    def after_append(self, result: Result, error: int, now_ms: int,
                     mono_ms: int | None = None) -> Result:
        """Run once ``result.records`` were appended (``error`` 0) or failed to be."""
        def go():
            if error == 0:
                for r, flag in zip(result.records, result.replay):
                    if flag:
                        self.replay(r.key, r.value, parsed_key=r.parsed_key)
            for cont in result.continuations:
                cont(error, now_ms)
        return self._run(go, now_ms, mono_ms)

    def coordinator_error(self, group_id: str) -> int:
        """NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / NONE for this group's partition."""
        p = self.partition_for(group_id)
        if p in self.loaded:
            return E.NONE
        if p in self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return E.NOT_COORDINATOR

    # ----------------------------------------------------------------- timers
    def next_deadline(self) -> int | None:
        """The earliest timer's deadline, on the monotonic clock (``mono_ms``)."""
        return self.timers.next_deadline()

    def fire_due(self, now_ms: int, mono_ms: int | None = None) -> Result:
        """Run every timer whose deadline is ``<= mono_ms``, earliest first (each with the
        wall-clock ``now_ms`` for what it writes)."""
        def go():
            while True:
                due = self.timers.pop_due()
                if due is None:
                    return
                due[1](now_ms)
        return self._run(go, now_ms, mono_ms)

    # ----------------------------------------------------------------- classic protocol
    def join_group(self, req: JoinRequest, slot: Any, now_ms: int,
                   mono_ms: int | None = None) -> Result:
        """Handle a JoinGroup. The reply for ``slot`` comes in this result or a later one
        (when the join phase completes)."""
        return self._run(lambda: self.classic.join(req, slot, now_ms), now_ms, mono_ms)

    def sync_group(self, group_id: str, member_id: str, generation_id: int,
                   group_instance_id: str | None, protocol_type: str | None,
                   protocol_name: str | None, assignments: list[tuple[str, bytes]],
                   slot: Any, now_ms: int, mono_ms: int | None = None) -> Result:
        return self._run(lambda: self.classic.sync(group_id, member_id, generation_id,
                                                   group_instance_id, protocol_type,
                                                   protocol_name, assignments, slot, now_ms),
                         now_ms, mono_ms)

    def heartbeat(self, group_id: str, member_id: str, generation_id: int,
                  group_instance_id: str | None, now_ms: int,
                  mono_ms: int | None = None) -> Result:
        return self._run(lambda: self.classic.heartbeat(group_id, member_id, generation_id,
                                                        group_instance_id, now_ms),
                         now_ms, mono_ms)

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]],
                    now_ms: int, mono_ms: int | None = None) -> Result:
        """``members``: (member_id, group_instance_id). Response: (top-level error,
        [(member_id, group_instance_id, error)])."""
        return self._run(lambda: self.classic.leave(group_id, members, now_ms), now_ms, mono_ms)

    # ----------------------------------------------------------------- consumer protocol
    def set_topics(self, topics: TopicsView) -> None:
        """The topics the consumer protocol sees from now on (the driver passes the
        metadata image's view before each event)."""
        self._topics = topics
        part = self._parts.get("consumer")
        if part is not None:
            part.topics = topics

    def consumer_group_heartbeat(self, req: HeartbeatRequest, now_ms: int,
                                 mono_ms: int | None = None) -> Result:
        """ConsumerGroupHeartbeat; the response is a ``HeartbeatResponse``."""
        return self._run(lambda: self.consumer.heartbeat(req, now_ms), now_ms, mono_ms)

    def consumer_group_describe(self, group_ids: list[str]):
        return [self.consumer.consumer_describe(g) for g in group_ids]

    # ----------------------------------------------------------------- streams protocol
    def streams_group_heartbeat(self, req: StreamsHeartbeatRequest, now_ms: int,
                                mono_ms: int | None = None) -> Result:
        """StreamsGroupHeartbeat (KIP-1071); the response is a ``StreamsHeartbeatResponse``."""
        return self._run(lambda: self.streams.heartbeat(req, now_ms), now_ms, mono_ms)

    def streams_group_describe(self, group_ids: list[str]):
        return [self.streams.streams_describe(g) for g in group_ids]

    # ----------------------------------------------------------------- share protocol
    def share_group_heartbeat(self, req, now_ms: int, mono_ms: int | None = None) -> Result:
        """ShareGroupHeartbeat; the response is a share ``HeartbeatResult``."""
        return self._run(lambda: self.share.heartbeat(req, now_ms), now_ms, mono_ms)

    # ----------------------------------------------------------------- offsets
    def commit_offsets(self, group_id: str, member_id: str, generation_id: int,
                       group_instance_id: str | None,
                       topics: list[tuple[str, list[tuple[int, int, int, str | None]]]],
                       now_ms: int, *, retention_ms: int = -1, api_version: int = 9,
                       mono_ms: int | None = None) -> Result:
        """``topics``: [(topic, [(partition, offset, leader_epoch, metadata)])]. Response:
        [(topic, [(partition, error)])]."""
        return self._run(lambda: self.offset_manager.commit(
            group_id, member_id, generation_id, group_instance_id, topics, now_ms,
            retention_ms, api_version), now_ms, mono_ms)

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None,
                      require_stable: bool = False, member_id: str | None = None,
                      member_epoch: int = -1):
        """(error, [(topic, [(partition, offset, leader_epoch, metadata, error)])])."""
        return self.offset_manager.fetch(group_id, topics, require_stable, member_id,
                                         member_epoch)

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]],
                       now_ms: int, mono_ms: int | None = None) -> Result:
        """OffsetDelete. Response: (error, [(topic, [(partition, error)])])."""
        return self._run(lambda: self.offset_manager.delete(group_id, topics, now_ms),
                         now_ms, mono_ms)

    def schedule_offsets_expiry(self, mono_ms: int) -> None:
        """Start the offsets expiry period (``offsets.retention.check.interval.ms`` after
        the monotonic reading ``mono_ms``)."""
        self.timers.advance(mono_ms)
        self.offset_manager.schedule_expiry()

    def expired_offset_records(self, now: int) -> list[CoordinatorRecord]:
        return self.offset_manager.expired_records(now)

    # transactional offsets (kbroker/txn's hooks)
    def validate_txn_offset_commit(self, group_id: str, member_id: str,
                                   group_instance_id: str | None, generation_id: int) -> int:
        return self.offset_manager.validate_txn_commit(group_id, member_id, group_instance_id,
                                                       generation_id)

    def stage_txn_offsets(self, producer_id: int, group_id: str,
                          offsets: dict[tuple[str, int], OffsetAndMetadata]) -> None:
        self.offset_manager.stage_txn(producer_id, group_id, offsets)
        # Kafka counts a TxnOffsetCommit's offsets when it is written, committed or not
        self.counters["offset_commits"] += len(offsets)

    def replay_txn_offset_records(self, producer_id: int, records) -> None:
        self.offset_manager.replay_txn_records(producer_id, records)

    def complete_txn_offsets(self, producer_id: int, partition: int, commit: bool) -> int:
        return self.offset_manager.complete_txn(producer_id, partition, commit)

    # ----------------------------------------------------------------- admin (every type)
    def _listable(self, g) -> bool:
        return not g.is_dead() and self.partition_for(g.group_id) in self.loaded

    def list_groups(self, states: list[str] | None = None,
                    types: list[str] | None = None) -> list[tuple[str, str, str]]:
        """[(group_id, protocol_type, state)] of loaded groups, filtered case-insensitively."""
        return [(g.group_id, g.protocol_type, g.state)
                for g in self.list_groups_typed(states, types)]

    def list_groups_typed(self, states=None, types=None):
        """ListGroups v5 (KIP-848): :class:`~kbroker.group.base.ListedGroup` entries."""
        from .base import ListedGroup
        want_types = {t.lower() for t in types} if types else None
        want = {s.lower() for s in states} if states else None
        out = []
        for g in self.groups.values():
            if not self._listable(g):
                continue
            if want_types is not None and g.group_type not in want_types:
                continue
            if want is not None and g.state_name().lower() not in want:
                continue
            out.append(ListedGroup(g.group_id, g.protocol_type_name(), g.state_name(),
                                   g.group_type))
        return out

    def describe_group(self, group_id: str) -> DescribedGroup:
        err = self.coordinator_error(group_id)
        if err:
            return DescribedGroup(group_id, err, "", "", "", [])
        g = self.groups.get(group_id)
        if g is None:
            return DescribedGroup(group_id, E.NONE, GroupState.DEAD.value, "", "", [],
                                  not_found=f"Group {group_id} not found.")
        return self.protocol_of(g).describe(g)

    def delete_groups(self, group_ids: list[str], now_ms: int,
                      mono_ms: int | None = None) -> Result:
        """DeleteGroups. Response: [(group_id, error)]."""
        return self._run(lambda: self._delete_groups(group_ids, now_ms), now_ms, mono_ms)

    def _delete_groups(self, group_ids, now):
        response, records = [], []
        for gid in group_ids:
            if not gid:
                response.append((gid, int(E.INVALID_GROUP_ID)))
                continue
            err = self.coordinator_error(gid)
            if err:
                response.append((gid, int(err)))
                continue
            g = self.groups.get(gid)
            if g is None or g.is_dead():
                response.append((gid, int(E.GROUP_ID_NOT_FOUND)))
                continue
            if not g.is_empty():
                response.append((gid, int(E.NON_EMPTY_GROUP)))
                continue
            records.extend(self.offset_manager.deletion_records(gid))
            records.extend(self.protocol_of(g).group_tombstones(g))
            response.append((gid, int(E.NONE)))

        def then(error: int, t: int) -> None:
            if error:
                code = append_error_to_response_error(error)
                self._out.response = [(g, code if c == E.NONE else c) for g, c in response]
        self._emit(records, replay=True, then=then)
        return response

    # ----------------------------------------------------------------- replay / load
    def replay(self, key: bytes, value: bytes | None, *, parsed_key=None) -> None:
        """Apply one ``__consumer_offsets`` record (load, or after our own append)."""
        k = parsed_key if parsed_key is not None else rec.decode_key(key)
        if isinstance(k, OffsetKey):
            self.offset_manager.replay(k, value)
        elif type(k).__name__ in _PART_OF_KEY:
            getattr(self, _PART_OF_KEY[type(k).__name__]).replay(k, value)
        elif isinstance(k, GroupKey):
            decoded = rec.decode_group_value(value)
            if decoded is None:
                if isinstance(self.groups.get(k.group), ClassicGroup):
                    # offsets are tombstoned on their own; any left keep a simple group
                    self._remove_group(k.group, keep_offsets=True)
                    if k.group in self.offset_manager.offsets:
                        self.groups[k.group] = ClassicGroup(k.group, state_timestamp_ms=-1)
                return
            v, _ = decoded
            if getattr(self.groups.get(k.group), "group_type", None) in ("consumer", "share"):
                return              # another type took the id over (stale classic snapshot)
            self._remove_group(k.group, keep_offsets=True)
            self.groups[k.group] = self.classic.group_from_record(k.group, v)

    def _remove_group(self, gid: str, *, keep_offsets: bool = False) -> None:
        g = self.groups.pop(gid, None)
        if g is not None:
            self.protocol_of(g).on_removed(g)
        self.timers.cancel_where(lambda k: len(k) > 1 and k[1] == gid)
        if not keep_offsets:
            self.offset_manager.offsets.pop(gid, None)

    def begin_load(self, partition: int) -> None:
        self.loading.add(partition)

    def complete_load(self, partition: int, now_ms: int, mono_ms: int | None = None) -> Result:
        """Partition ``partition`` replayed: start serving its groups (each type arms its
        timers: sessions of restored members)."""
        def go():
            self.loading.discard(partition)
            self.loaded.add(partition)
            for gid, g in list(self.groups.items()):
                if self.partition_for(gid) == partition:
                    self.protocol_of(g).on_loaded(g, now_ms)
        return self._run(go, now_ms, mono_ms)

    def unload(self, partition: int) -> Result:
        """This node no longer leads ``__consumer_offsets-partition`` (Kafka's
        ``onResignation``): forget its groups, offsets and timers; parked requests are
        answered NOT_COORDINATOR so the clients look for the new coordinator."""
        def go():
            self.loaded.discard(partition)
            self.loading.discard(partition)
            for gid in [g for g in self.groups if self.partition_for(g) == partition]:
                g = self.groups[gid]
                for slot, reply in self.protocol_of(g).abort_parked(g, E.NOT_COORDINATOR):
                    self._reply(slot, reply)
                self._remove_group(gid)
            for gid in [g for g in self.offset_manager.offsets if self.partition_for(g) == partition]:
                del self.offset_manager.offsets[gid]
            for by_group in self.offset_manager.pending_txn_offsets.values():
                for gid in [g for g in by_group if self.partition_for(g) == partition]:
                    del by_group[gid]
        return self._run(go)

    def abort_parked(self, error: int) -> list[tuple[Any, Any]]:
        """(slot, reply) for every parked request of every group (shutdown)."""
        out = []
        for g in self.groups.values():
            out.extend(self.protocol_of(g).abort_parked(g, error))
        return out

    # ----------------------------------------------------------------- introspection
    def statistics(self) -> dict:
        states: dict[str, int] = {}
        types: dict[str, int] = {}
        for g in self.groups.values():
            states[g.state_name()] = states.get(g.state_name(), 0) + 1
            types[g.group_type] = types.get(g.group_type, 0) + 1
        return {"groups": len(self.groups), "groups_by_state": states, "groups_by_type": types,
                "members": sum(len(g.members) for g in self.groups.values()),
                **self.offset_manager.statistics(),
                "timers": len(self.timers), "loaded_partitions": len(self.loaded),
                **self.counters}
