"""What every group protocol whose members heartbeat shares: :class:`MemberSessionProtocol`,
the base of the consumer (KIP-848), streams (KIP-1071) and share (KIP-932) protocols.

The rules kept (Kafka 4.4's ``GroupMetadataManager``, the same for the three types):

- a member's **session** is one timer of the shard, ``(<prefix>session, group, member)``,
  re-armed by every heartbeat and for every member of a group loaded from
  ``__consumer_offsets``; when it fires the type's ``_session_expired`` removes the member;
- the session timeout and the **heartbeat interval** a member is told come from the type's
  broker configs, overridden per group by GROUP config resources (``session_timeout_ms``,
  ``heartbeat_interval_ms``);
- a member that goes loses all its timers (``member_timer_kinds``), a group that goes is
  marked dead; heartbeats are never parked, and the classic DescribeGroups answers such a
  group Dead.

Timers are delays on the shard's monotonic clock (:mod:`kbroker.group.timers`). What the
consumer and streams protocols add (rebalance timers, static members, the records of a
member and its replay) is :class:`~kbroker.group.epoch_protocol.EpochGroupProtocol`. Pure: no
clock, no I/O.
"""
from __future__ import annotations

from typing import Any

from kbroker.wire.error_codes import ErrorCode as E

from .base import DescribedGroup, ShardPart


class MemberSessionProtocol(ShardPart):
    """Session timers, heartbeat intervals and the lifecycle hooks every heartbeating group
    type answers alike. A subclass sets ``timer_prefix`` (``"consumer-"``...), lists its
    per-member timer kinds and implements the three hooks below."""

    timer_prefix: str = ""
    member_timer_kinds: tuple[str, ...] = ("session",)

    # ----------------------------------------------------------------- per-type settings
    def session_timeout_ms(self, gid: str) -> int:           # pragma: no cover - abstract
        raise NotImplementedError

    def heartbeat_interval_ms(self, gid: str) -> int:        # pragma: no cover - abstract
        raise NotImplementedError

    def _session_expired(self, gid: str, member_id: str, now: int) -> None:  # pragma: no cover
        raise NotImplementedError

    # ----------------------------------------------------------------- timers
    def _timer_key(self, kind: str, gid: str, member_id: str) -> tuple[str, str, str]:
        return (self.timer_prefix + kind, gid, member_id)

    def _schedule_session(self, gid: str, member_id: str, timeout_ms: int | None = None) -> None:
        """(Re)arm ``member_id``'s session; ``timeout_ms`` overrides the group's (a classic
        member of a consumer group keeps its JoinGroup's)."""
        timeout = self.session_timeout_ms(gid) if timeout_ms is None else timeout_ms
        self.timers.schedule(self._timer_key("session", gid, member_id), timeout,
                             lambda t: self._session_expired(gid, member_id, t))

    def _cancel_member_timers(self, gid: str, member_id: str) -> None:
        for kind in self.member_timer_kinds:
            self.timers.cancel(self._timer_key(kind, gid, member_id))

    # ----------------------------------------------------------------- lifecycle hooks
    def on_removed(self, g) -> None:
        g.dead = True                      # the shard cancels the group's timers

    def abort_parked(self, g, error: int) -> list[tuple[Any, Any]]:
        return []                          # heartbeats are never parked

    def describe(self, g) -> DescribedGroup:
        """DescribeGroups (the classic API) on a group of this type: ``Dead``, as Kafka
        answers for a group that is not a classic one."""
        return DescribedGroup(g.group_id, E.NONE, "Dead", "", "", [])
