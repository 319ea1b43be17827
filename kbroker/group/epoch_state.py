"""What the state of every member-epoch group shares: :class:`EpochGroupMixin`, mixed into the
consumer (KIP-848, :class:`~kbroker.group.consumer.state.ConsumerGroup`) and streams
(KIP-1071, :class:`~kbroker.group.streams.state.StreamsGroup`) groups.

Kafka 4.3's ``ModernGroup`` derives the group state from its epochs the same way for both:
Dead once removed, Empty without members, Assigning while the group epoch is ahead of the
target assignment's epoch, Reconciling while a member has not reached that epoch, else
Stable; a streams group whose topology cannot be configured is NotReady in between. Offsets
of such a group may always be deleted one by one and expire from their commit. Pure: no I/O.

The group class declares its ``states`` enum and the fields ``dead``, ``members``,
``group_epoch``, ``assignment_epoch`` and ``static_members`` (instance id → member id).

Also here, for every group type whose members carry a member epoch (consumer, streams and
share groups): the leave epochs, :class:`GroupError` and the member-epoch fencing rule
(:func:`check_epoch`, Kafka's ``throwIf*GroupMemberEpochIsInvalid``).
"""
from __future__ import annotations

import enum
from typing import Callable

from kbroker.wire.error_codes import ErrorCode as E

LEAVE_GROUP_MEMBER_EPOCH = -1           # a member leaves
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2    # a static member leaves for now (consumer, streams)


class EpochMemberState(enum.IntEnum):
    """The base of a type's member state enum (the byte its current-assignment record
    stores; each type names its members, ``UNKNOWN`` = 127 among them)."""

    @classmethod
    def of(cls, value: int):
        """The state a stored byte names; an unknown byte is UNKNOWN."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class GroupError(Exception):
    """A Kafka error for the request being handled (code + message)."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or E(code).name)
        self.code = int(code)
        self.message = message


def check_epoch(group_type: str, member, received: int,
                previous_ok: Callable[[], bool] = lambda: True) -> None:
    """Fencing by member epoch, the same for every type: epoch 0 (a join) passes; a greater
    epoch than the member's is FENCED_MEMBER_EPOCH; a smaller one passes only as the
    member's previous epoch (the answer that moved it on was lost) and when
    ``previous_ok()`` (a consumer or streams member must still own a subset of what it
    is assigned; a share member owns nothing, so any previous epoch passes)."""
    if received == 0 or received == member.member_epoch:
        return
    if received < member.member_epoch and received == member.previous_member_epoch \
            and previous_ok():
        return
    which = "greater" if received > member.member_epoch else "smaller"
    raise GroupError(E.FENCED_MEMBER_EPOCH,
                     f"The {group_type} group member has a {which} member epoch ({received}) "
                     f"than the one known by the group coordinator ({member.member_epoch}). "
                     "The member must abandon all its partitions and rejoin.")


class EpochGroupMixin:
    """The answers of a member-epoch group that depend only on its epochs and members."""

    states: type                            # the group type's state enum

    def is_ready(self) -> bool:
        """False while the group cannot be assigned (a streams group's topology)."""
        return True

    def state(self):
        s = self.states
        if self.dead:
            return s.DEAD
        if not self.members:
            return s.EMPTY
        if not self.is_ready():
            return s.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return s.ASSIGNING
        for m in self.members.values():
            if not m.is_reconciled_to(self.assignment_epoch):
                return s.RECONCILING
        return s.STABLE

    def state_name(self) -> str:
        return self.state().value

    def is_empty(self) -> bool:
        return not self.members

    def is_dead(self) -> bool:
        return self.dead

    def validate_offset_delete(self) -> int:
        return E.NONE

    def offsets_expiry_base(self):
        """An offset's retention runs from its commit (Kafka's
        ``ConsumerGroup.offsetExpirationCondition``); subscribed topics never expire."""
        return lambda o: o.commit_timestamp_ms

    def static_member(self, instance_id: str | None):
        """The live member holding ``instance_id``, or None."""
        mid = self.static_members.get(instance_id) if instance_id is not None else None
        return None if mid is None else self.members.get(mid)

    def _forget_static(self, m) -> None:
        """Drop ``m``'s instance id from the static members if it still names ``m``."""
        if m.instance_id is not None and self.static_members.get(m.instance_id) == m.member_id:
            del self.static_members[m.instance_id]
