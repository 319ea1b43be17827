"""Wiring of share groups into a broker: the share group front (share groups themselves are
groups of the group coordinator), the share-partition manager (with the persister of the
share-partitions' state) and its timer task.

Started with the feature's first use (issue 32, start-up), not with the broker: the share
APIs reach the front and the manager through :func:`share_groups` and
:func:`share_partitions`, which start them in the broker's nursery. Nothing is lost by
waiting: a share-partition's state is read from the persister when it is first fetched,
and a node that never started the manager holds no acquired records to release when a
member leaves (the member-gone callback is handed to the group manager's share part
whenever that part is made, before or after). Monitoring (metrics, console) reads the
broker's attributes and finds None until then: nothing in flight, nothing to report.
"""
from __future__ import annotations


def start_share_groups(broker) -> None:
    """Make the share front and the share-partition manager of ``broker`` if it has none,
    and run the manager's timers in the broker's nursery (``Broker.start`` set it)."""
    if getattr(broker, "share_partitions", None) is not None:
        return
    nursery = getattr(broker, "_nursery", None)
    if nursery is None:
        raise RuntimeError("share groups start in a started broker (Broker.start's nursery)")
    from kbroker.group.share.coordinator import ShareGroupCoordinator

    from .manager import SharePartitionManager
    from .persister import make_persister

    groups = ShareGroupCoordinator(broker)
    manager = SharePartitionManager(broker, groups, make_persister(broker))

    def member_gone(group_id: str, member_id: str) -> None:
        manager.close_session(group_id, member_id)
        manager.release_member(group_id, member_id)

    groups.on_member_gone = member_gone
    broker.share_groups = groups
    broker.share_partitions = manager
    nursery.start_soon(manager.run)


def share_groups(broker):
    """The broker's share group front (``ShareGroupCoordinator``), started on first use."""
    start_share_groups(broker)
    return broker.share_groups


def share_partitions(broker):
    """The broker's share-partition manager, started on first use."""
    start_share_groups(broker)
    return broker.share_partitions


def share_groups_among(broker, group_ids) -> object | None:
    """The share front when one of ``group_ids`` is a live share group here (started then,
    if it was not: deleting such a group deletes its share-partitions' state), else the
    front only if already started, else None."""
    if getattr(broker, "share_groups", None) is None:
        manager = getattr(getattr(broker, "group_coordinator", None), "manager", None)
        groups = getattr(manager, "groups", None) or {}
        if not any(getattr(groups.get(g), "group_type", None) == "share" for g in group_ids):
            return None
        start_share_groups(broker)
    return broker.share_groups
