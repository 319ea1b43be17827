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
"""
from __future__ import annotations

from kbroker.wire.error_codes import ErrorCode as E


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

    def _forget_static(self, m) -> None:
        """Drop ``m``'s instance id from the static members if it still names ``m``."""
        if m.instance_id is not None and self.static_members.get(m.instance_id) == m.member_id:
            del self.static_members[m.instance_id]
