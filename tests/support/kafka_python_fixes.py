"""A client-side race in kafka-python 3.x consumer groups, and the one-line patch tests apply.

The bug (kafka-python 3.0.12, still on dpkp/kafka-python master as of 3.1.0.dev):
``BaseCoordinator.join_group_async`` loops ``while self.need_rejoin():`` and, when the
caller's poll timer expires, leaves the JoinGroup→SyncGroup task (``_join_task``) running on
the client's I/O thread so that the next poll re-awaits it. But the consumer's
``need_rejoin()`` is computed from state that task itself changes: the leader's
``_perform_assignment`` sets ``_assignment_snapshot = _metadata_snapshot``. So when a rejoin
was triggered by a metadata change (assignment snapshot ≠ metadata snapshot) and the poll
timer expires while the join is in flight, the task finishes in the background and the next
poll sees ``need_rejoin() == False``: it never collects the finished task, never runs
``_on_join_complete`` (the new assignment is dropped) and never re-enables the heartbeat,
which ``join_group_async`` disabled. The consumer then sits forever with its old — typically
empty — assignment, and the coordinator expires it after the session timeout.

Common trigger: a consumer subscribes to a topic it has no metadata for yet, joins at once
(``group.initial.rebalance.delay.ms=0``), the range assignor logs "No partition metadata for
topic", the metadata arrives, and the rejoin lands in the gap between two short polls. It
happens the same way against Apache Kafka 4.3.1 (same request sequence, same stall); the
broker answers correctly throughout.

Java's consumer avoids it by looping on ``rejoinNeededOrPending()`` (``rejoinNeeded ||
joinFuture != null``), and kafka-python 2.x had the same guard (``_rejoin_incomplete()``,
dpkp/kafka-python#1695); the async rewrite (#2955) dropped it. :func:`apply` restores it:
a join task that has not been collected yet counts as "rejoin needed". If the finished task is
then found done, ``join_group_async`` starts one more JoinGroup round, which the coordinator
completes at once — a correct, if one-round-longer, rebalance.

Only the client is patched; nothing about the broker's answers is relaxed.
"""
from __future__ import annotations

_APPLIED = False


def has_rejoin_race() -> bool:
    """True when the installed kafka-python has the unguarded ``_join_task`` loop."""
    try:
        from kafka.coordinator.base import BaseCoordinator
        from kafka.coordinator.consumer import ConsumerCoordinator
    except ImportError:
        return False
    return (hasattr(BaseCoordinator, "join_group_async")
            and "_join_task" in BaseCoordinator.__init__.__code__.co_names
            and not getattr(ConsumerCoordinator.need_rejoin, "_kbroker_guarded", False))


def apply() -> None:
    """Make ``ConsumerCoordinator.need_rejoin`` also true while a join task is uncollected.

    Idempotent; does nothing on kafka-python versions without the race.
    """
    global _APPLIED
    if _APPLIED or not has_rejoin_race():
        return
    from kafka.coordinator.consumer import ConsumerCoordinator

    unguarded = ConsumerCoordinator.need_rejoin

    def need_rejoin(self):
        return unguarded(self) or getattr(self, "_join_task", None) is not None

    need_rejoin._kbroker_guarded = True
    need_rejoin.__doc__ = unguarded.__doc__
    ConsumerCoordinator.need_rejoin = need_rejoin
    _APPLIED = True
