"""Wiring of share groups into a broker: the share group front (share groups themselves are
groups of the group coordinator), the share-partition manager (with the persister of the
share-partitions' state) and its timer task."""
from __future__ import annotations


async def start_share_groups(broker, nursery) -> None:
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
    await nursery.start(manager.run)
