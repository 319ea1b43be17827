"""The share group coordinator's driver: the table of share groups this broker
coordinates, what ShareGroupHeartbeat and ShareGroupDescribe call, and the task that
expires members whose session timed out.

The rules are :class:`~kbroker.group.share.state.ShareGroup`'s; here the broker's metadata
image (topics, GROUP configs) and clock are read and handed in. A member that leaves or
times out has its acquired records released on this broker's share-partitions (the
``on_member_gone`` callback).

Not implemented: the share group records in ``__consumer_offsets`` (ShareGroupMetadata,
member and assignment records) — membership lives in memory, and a restarted coordinator
starts with empty groups that members rejoin (their heartbeats get UNKNOWN_MEMBER_ID, and
the clients rejoin at epoch 0). The delivery state of records is durable elsewhere
(:mod:`kbroker.share.persister`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import trio

from kbroker.wire.error_codes import ErrorCode as E

from .config import ShareGroupConfig
from .state import HeartbeatRequest, HeartbeatResult, ShareGroup

log = logging.getLogger("kbroker.group.share")


@dataclass
class DescribedShareMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: list[tuple]          # (topic id, name, partitions)


@dataclass
class DescribedShareGroup:
    group_id: str
    error: int
    message: str | None = None
    state: str = "Dead"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = "simple"
    members: list[DescribedShareMember] | None = None


def topics_of_image(image) -> dict:
    """name → (topic id, partition count) of the image's topics (internal ones excluded)."""
    out = {}
    for name, t in getattr(image, "topics", {}).items():
        if name.startswith("__"):
            continue
        out[name] = (t.topic_id, len(t.partitions))
    return out


class ShareGroupCoordinator:
    def __init__(self, broker, *, on_member_gone: Callable[[str, str], None] | None = None) -> None:
        self.broker = broker
        self.groups: dict[str, ShareGroup] = {}
        self.on_member_gone = on_member_gone or (lambda group_id, member_id: None)
        get = broker.config.values.get if hasattr(broker.config, "values") else (lambda k, d: d)
        self.base_config = ShareGroupConfig.from_broker(get)
        self.stats = {"heartbeats": 0, "expired_members": 0}

    def config_for(self, group_id: str) -> ShareGroupConfig:
        overrides = getattr(self.broker.metadata, "group_configs", {}).get(group_id)
        try:
            return self.base_config.for_group(overrides)
        except (TypeError, ValueError):
            return self.base_config

    def coordinator_error(self, group_id: str) -> int:
        """Share groups are coordinated where their ``__consumer_offsets`` partition is led,
        as every other group type (FindCoordinator answers the same node)."""
        gc = getattr(self.broker, "group_coordinator", None)
        manager = getattr(gc, "manager", None)
        if manager is None or not hasattr(manager, "coordinator_error"):
            return E.NONE
        return manager.coordinator_error(group_id)

    def heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        self.stats["heartbeats"] += 1
        err = self.coordinator_error(req.group_id)
        if err:
            return HeartbeatResult(error=err)
        other = self._other_type(req.group_id)
        if other:
            return HeartbeatResult(error=E.GROUP_ID_NOT_FOUND,
                                   message=f"Group {req.group_id} is not a share group.")
        now = self.broker.now_ms()
        topics = topics_of_image(self.broker.metadata)
        self.expire(now)
        g = self.groups.get(req.group_id)
        if g is None:
            if req.member_epoch != 0:
                return HeartbeatResult(error=E.GROUP_ID_NOT_FOUND if req.member_epoch > 0
                                       else E.UNKNOWN_MEMBER_ID,
                                       message=f"Group {req.group_id} not found.")
            g = ShareGroup(req.group_id)
        before = set(g.members)
        r = g.heartbeat(req, topics, now, self.config_for(req.group_id))
        if g.members or req.group_id in self.groups:
            self.groups[req.group_id] = g
        for mid in before - set(g.members):
            self.on_member_gone(req.group_id, mid)
        return r

    def _other_type(self, group_id: str) -> bool:
        """Whether a classic or consumer group of this id exists (a group id has one type)."""
        gc = getattr(self.broker, "group_coordinator", None)
        groups = getattr(getattr(gc, "manager", None), "groups", None) or {}
        g = groups.get(group_id)
        return g is not None and not (hasattr(g, "is_dead") and g.is_dead())

    def expire(self, now_ms: int) -> None:
        topics = None
        for g in self.groups.values():
            d = g.next_deadline_ms()
            if d is None or d > now_ms:
                continue
            topics = topics if topics is not None else topics_of_image(self.broker.metadata)
            for mid in g.expire(now_ms, topics):
                self.stats["expired_members"] += 1
                log.info("share group %s: member %s session timed out", g.group_id, mid)
                self.on_member_gone(g.group_id, mid)

    def describe(self, group_ids: list[str]) -> list[DescribedShareGroup]:
        out = []
        image = self.broker.metadata
        for gid in group_ids:
            err = self.coordinator_error(gid)
            g = self.groups.get(gid)
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

    def listed(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group (ListGroups)."""
        return [(gid, g.state_name()) for gid, g in self.groups.items()]

    def delete(self, group_id: str) -> int | None:
        """DeleteGroups: None if no such share group; NON_EMPTY_GROUP if it has members."""
        g = self.groups.get(group_id)
        if g is None:
            return None
        if g.members:
            return E.NON_EMPTY_GROUP
        del self.groups[group_id]
        return E.NONE

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await trio.sleep(0.5)
            try:
                self.expire(self.broker.now_ms())
            except Exception:              # noqa: BLE001 - the timer must keep running
                log.exception("share group expiry failed")

    def statistics(self) -> dict:
        return {**self.stats, "groups": len(self.groups),
                "members": sum(len(g.members) for g in self.groups.values())}
