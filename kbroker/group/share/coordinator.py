"""What the share APIs call to reach share groups: a thin front of the group coordinator.

Share groups are groups of the coordinator shard (:mod:`kbroker.group.share.protocol`):
their membership is durable in ``__consumer_offsets`` and they move with its partitions on
failover. This class answers ShareGroupHeartbeat through the
:class:`~kbroker.group.service.GroupCoordinator` (lock, append, acks=all), describes the
groups, and gives the share-partition code the effective ``ShareGroupConfig`` of a group
(broker ``group.share.*`` keys and GROUP config overrides). A member that leaves or times
out has its acquired records released on this broker's share-partitions (the
``on_member_gone`` callback, run once the removal is durable).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from kbroker.wire.error_codes import ErrorCode as E

from .config import ShareGroupConfig
if TYPE_CHECKING:
    from .state import HeartbeatRequest, HeartbeatResult, ShareGroup

log = logging.getLogger("kbroker.group.share")


@dataclass
class DescribedShareMember:
    """One member of a share group as ShareGroupDescribe lists it."""
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: list[tuple]          # (topic id, name, partitions)


@dataclass
class DescribedShareGroup:
    """A share group as ShareGroupDescribe answers it (or the error for that group id)."""
    group_id: str
    error: int
    message: str | None = None
    state: str = "Dead"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = "simple"
    members: list[DescribedShareMember] | None = None


class ShareGroupCoordinator:
    def __init__(self, broker, *, on_member_gone: Callable[[str, str], None] | None = None) -> None:
        self.broker = broker
        self.stats = {"heartbeats": 0}
        if on_member_gone is not None:
            self.on_member_gone = on_member_gone

    @property
    def _gc(self):
        return self.broker.group_coordinator

    @property
    def _part(self):
        return self._gc.manager.share

    @property
    def on_member_gone(self) -> Callable[[str, str], None]:
        return self._part.on_member_gone

    @on_member_gone.setter
    def on_member_gone(self, fn: Callable[[str, str], None]) -> None:
        # kept for the share part, which the group manager makes on first use
        self._gc.manager.set_part_attr("share", "on_member_gone", fn)

    @property
    def base_config(self) -> ShareGroupConfig:
        return self._part.base_config

    @property
    def groups(self) -> dict[str, ShareGroup]:
        """The live share groups this node coordinates."""
        return {gid: g for gid, g in self._gc.manager.groups.items()
                if g.group_type == "share" and not g.is_dead()}

    def config_for(self, group_id: str) -> ShareGroupConfig:
        return self._part.config_for(group_id)

    def coordinator_error(self, group_id: str) -> int:
        """Share groups are coordinated where their ``__consumer_offsets`` partition is led,
        as every other group type (FindCoordinator answers the same node)."""
        return self._gc.manager.coordinator_error(group_id)

    def _other_type(self, group_id: str) -> bool:
        """Whether a live group of another type has this id (a group id has one type)."""
        return self._part.other_type(group_id)

    async def heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        self.stats["heartbeats"] += 1
        return await self._gc.share_group_heartbeat(req)

    def describe(self, group_ids: list[str]) -> list[DescribedShareGroup]:
        out = []
        image = self.broker.metadata
        groups = self.groups
        for gid in group_ids:
            err = self.coordinator_error(gid)
            g = groups.get(gid)
            if err:
                out.append(DescribedShareGroup(gid, err))
            elif g is None:
                out.append(DescribedShareGroup(
                    gid, E.GROUP_ID_NOT_FOUND,
                    f"Group {gid} not found." if not self._other_type(gid)
                    else f"Group {gid} is not a share group."))
            else:
                by_id = getattr(image, "topics_by_id", {})
                members = [DescribedShareMember(
                    m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                    list(m.subscribed_topic_names),
                    [(t, by_id[t].name if t in by_id else "", sorted(ps))
                     for t, ps in m.assigned.items() if ps])
                    for m in g.members.values()]
                out.append(DescribedShareGroup(gid, E.NONE, None, g.state_name(), g.group_epoch,
                                               g.assignment_epoch, "simple", members))
        return out

    def statistics(self) -> dict:
        groups = self.groups
        return {**self.stats, "groups": len(groups),
                "members": sum(len(g.members) for g in groups.values())}
