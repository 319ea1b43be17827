"""What the member-epoch group protocols share: :class:`EpochGroupProtocol`, the base of the
consumer (KIP-848, :mod:`kbroker.group.consumer.protocol`) and streams (KIP-1071,
:mod:`kbroker.group.streams.protocol`) protocols.

Both handle a heartbeat the same way (Kafka 4.3's ``GroupMetadataManager``): check the request,
then, with a copy of the group taken first, either let the member leave (epoch -1/-2) or run
the type's heartbeat; every state change is a record *replayed* at once and appended before
the response is released, and a refused request or a failed append puts the group back as it
was (Kafka reverts its timeline). Session and rebalance timers fence a member by the same
path. What differs per type lives in the subclass: ``_validate``, ``_heartbeat``, ``_leave``,
``_fence_expired`` and ``replay``.

A subclass names its group class (``group_class``), its heartbeat response class
(``response_class``), its word in messages (``group_type``: ``"consumer"``, ``"streams"``) and
the prefix of its timer keys (``timer_prefix``). Pure: no clock, no I/O.
"""
from __future__ import annotations

from typing import Any, Callable

from kbroker.wire.error_codes import ErrorCode as E

from .base import (ShardPart, append_error_to_response_error, validate_offset_fetch_epoch,
                   validate_txn_offset_commit_epoch)
from .classic.state import ClassicGroup
from .consumer.state import (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                             GroupError)


def check_not_empty(value: str | None, what: str) -> None:
    """A string field that may be null but not empty (``"<what> can't be empty."``)."""
    if value is not None and value == "":
        raise GroupError(E.INVALID_REQUEST, f"{what} can't be empty.")


class EpochGroupProtocol(ShardPart):
    """The heartbeat frame, the undo of a refused or unwritten request, timer fencing and the
    per-type answers that are the same for every group whose members carry an epoch."""

    group_class: type = object
    response_class: type = object
    group_type: str = ""
    timer_prefix: str = ""

    # ----------------------------------------------------------------- helpers
    def _get(self, gid: str):
        g = self.groups.get(gid)
        return g if isinstance(g, self.group_class) else None

    def _apply(self, records: list, record) -> None:
        """Replay ``record`` into the state now and queue it for the append."""
        records.append(record)
        self.replay(record.parsed_key, record.value, record.parsed_value)

    def replay(self, k, value_bytes, value=None) -> None:    # pragma: no cover - abstract
        raise NotImplementedError

    # ----------------------------------------------------------------- the heartbeat frame
    def heartbeat(self, req, now: int):
        try:
            self._validate(req)
            err = self.coordinator_error(req.group_id)
            if err:
                raise GroupError(err)
        except GroupError as e:
            return self.response_class(error=e.code, message=e.message)
        before = self._snapshot(req.group_id)
        records: list = []
        try:
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                resp = self._leave(req, records, now)
            else:
                resp = self._heartbeat(req, records, now)
        except GroupError as e:
            self._restore(req.group_id, before)      # nothing of a refused request stays
            return self.response_class(error=e.code, message=e.message)
        self._emit_with_revert(req.group_id, before, records)
        return resp

    def _snapshot(self, gid: str):
        g = self.groups.get(gid)
        if isinstance(g, self.group_class):
            return ("group", g.snapshot())
        return ("absent",) if g is None else ("other", g)

    def _restore(self, gid: str, snap) -> None:
        g = self.groups.get(gid)
        if snap[0] == "absent":
            if isinstance(g, self.group_class):
                del self.groups[gid]
                prefix = self.timer_prefix
                self.timers.cancel_where(lambda k: len(k) > 2 and k[0].startswith(prefix)
                                         and k[1] == gid)
        elif snap[0] == "group":
            if isinstance(g, self.group_class):
                g.__dict__.update(snap[1].__dict__)      # in place: references stay valid
            else:
                self.groups[gid] = snap[1]
        else:
            self.groups[gid] = snap[1]

    def _emit_with_revert(self, gid: str, before, records: list, respond: bool = True) -> None:
        if not records:
            return

        def then(error: int, t: int) -> None:
            if error:
                # the group as it was before this request (Kafka reverts its timeline)
                self._restore(gid, before)
                if respond:
                    self._out.response = self.response_class(
                        error=append_error_to_response_error(error))
        self._emit(records, then=then)

    # ----------------------------------------------------------------- timers
    def _fence_by_timer(self, gid: str, member_id: str, check: Callable[[Any], bool],
                        now: int = 0) -> None:
        """A session or rebalance timer fired: fence the member if ``check`` still holds."""
        group = self._get(gid)
        m = None if group is None else group.members.get(member_id)
        if m is None or not check(m):
            return
        before = self._snapshot(gid)
        records: list = []
        self._fence_expired(group, m, records, now)
        self.counters["members_expired"] += 1
        self._emit_with_revert(gid, before, records, respond=False)

    def _fence_expired(self, group, member, records: list, now: int) -> None:  # pragma: no cover
        raise NotImplementedError

    # ----------------------------------------------------------------- replay pieces
    def _group_for_replay(self, gid: str, tombstone: bool, on_replace=None):
        """The group a record of this type applies to, created if needed; None when the
        record is to be ignored (a tombstone for nothing, or a live group of another type
        holding the id). ``on_replace`` sees an empty classic group before it makes way."""
        g = self.groups.get(gid)
        if isinstance(g, self.group_class):
            return g
        if tombstone:
            return None
        if g is not None and not (isinstance(g, ClassicGroup) and g.is_empty()):
            return None                        # a live group of another type keeps its id
        if g is not None and on_replace is not None:
            on_replace(g)
        g = self.groups[gid] = self.group_class(gid)
        return g

    def _replay_group_tombstone(self, gid: str) -> None:
        """The group's metadata tombstone: the group goes, its committed offsets stay (under
        an empty classic group, as Kafka keeps them)."""
        self.shard._remove_group(gid, keep_offsets=True)
        if gid in self.shard.offsets:
            self.groups[gid] = ClassicGroup(gid, state_timestamp_ms=-1)

    @staticmethod
    def _replay_target_metadata(g, value, tombstone: bool) -> None:
        if tombstone:
            g.assignment_epoch, g.assignment_timestamp_ms = 0, 0
        else:
            g.assignment_epoch = value.assignment_epoch
            g.assignment_timestamp_ms = value.assignment_timestamp

    # ----------------------------------------------------------------- lifecycle hooks
    def on_removed(self, g) -> None:
        g.dead = True

    def abort_parked(self, g, error: int) -> list[tuple[Any, Any]]:
        return []                              # heartbeats are never parked

    # ----------------------------------------------------------------- describe
    def _describe_lookup(self, gid: str, described_class: type):
        """``(group, None)`` for a group of this type, else ``(None, answer)`` with the error
        a ``*GroupDescribe`` gives for it."""
        if not gid:
            return None, described_class(gid, E.INVALID_GROUP_ID, "GroupId can't be empty.")
        err = self.coordinator_error(gid)
        if err:
            return None, described_class(gid, err)
        g = self.groups.get(gid)
        if g is None or g.is_dead():
            return None, described_class(gid, E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
        if not isinstance(g, self.group_class):
            return None, described_class(gid, E.GROUP_ID_NOT_FOUND,
                                         f"Group {gid} is not a {self.group_type} group.")
        return g, None

    # ----------------------------------------------------------------- offsets (per type)
    def validate_txn_offset_commit(self, g, mid: str, instance: str | None, epoch: int) -> int:
        return validate_txn_offset_commit_epoch(g.members, mid, instance, epoch)

    def validate_offset_fetch(self, g, mid: str | None, epoch: int) -> int:
        return validate_offset_fetch_epoch(g.members, mid, epoch)
