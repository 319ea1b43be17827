"""What a librdkafka group member's own statistics say about its group, for tests that must
wait until a rebalance *would* have reached a member before they check that none did.

A member's thread passes :meth:`GroupStats.update` as the consumer's ``stats_cb`` (with a
short ``statistics.interval.ms``, see :data:`GroupStats.CONF`). librdkafka keeps one
Heartbeat in flight at a time and sends the next only after it handled the answer to the
last one -- a refused heartbeat starts the rebalance there and then -- and the statistics
come through the consumer's poll, in order with the rebalance callbacks. So once a member's
Heartbeat count has grown far enough past a mark (:func:`heard_since`), a heartbeat it sent
after the mark was answered and the member has already taken whatever rebalance that answer
started: a coordinator that dropped it, or began a rebalance, before the mark has been heard.
"""
from __future__ import annotations

import json


class GroupStats:
    """``heartbeats``: Heartbeats sent to the group coordinator; ``join_state``: the group's
    join state (``steady`` when no rebalance is under way in this member);
    ``rebalances``: rebalances this member went through."""

    CONF = {"statistics.interval.ms": 200}

    def __init__(self) -> None:
        self.heartbeats = 0
        self.join_state = ""
        self.rebalances = 0

    def update(self, text: str) -> None:
        stats = json.loads(text)
        self.heartbeats = sum(b.get("req", {}).get("Heartbeat", 0)
                              for b in stats.get("brokers", {}).values())
        group = stats.get("cgrp", {})
        self.join_state = group.get("join_state", "")
        self.rebalances = group.get("rebalance_cnt", 0)


def heard_since(stats: list[GroupStats], marks: list[int]) -> bool:
    """Whether each member has had a Heartbeat answered that it sent after its count was
    ``marks[i]`` (read from the same statistics). A count read from statistics may lag the
    real one by a heartbeat, so the mark may too: at three past the mark, the heartbeat two
    past it was sent after the mark, and answered before the third was sent."""
    return all(s.heartbeats >= n + 3 for s, n in zip(stats, marks))


def settled(admin, group: str, members: list[tuple[GroupStats, list[int] | set[int]]]) -> bool:
    """Whether no rebalance is under way: the group is Stable, every member (its statistics
    and the partitions its rebalance callbacks gave it) is steady, and the members hold
    exactly the assignments the coordinator holds for them."""
    desc = admin.describe_consumer_groups([group])[group].result(timeout=10)
    held = sorted(sorted(tp.partition for tp in x.assignment.topic_partitions)
                  for x in desc.members)
    return (desc.state.name == "STABLE" and all(s.join_state == "steady" for s, _ in members)
            and held == sorted(sorted(a) for _, a in members))
