"""ShareGroupHeartbeat's rules as scripted traces (pure state, injected wall-clock ``now_ms``)."""
from __future__ import annotations

import uuid

import pytest

from kbroker.group.share.config import ShareGroupConfig
from kbroker.group.share.state import HeartbeatRequest, ShareGroup, simple_assign
from kbroker.wire.error_codes import ErrorCode as E

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
TOPICS = {"a": (T1, 3), "b": (T2, 1)}
CFG = ShareGroupConfig(assignment_interval_ms=0)     # every heartbeat may run the assignment


def hb(g, mid, epoch, topics=None, now=0, meta=TOPICS):
    return g.heartbeat(HeartbeatRequest("g", mid, epoch, subscribed_topic_names=topics), meta, now, CFG)


@pytest.mark.parametrize("members,partitions,expected", [
    (["m1"], 3, {"m1": {0, 1, 2}}),
    (["m1", "m2"], 3, {"m1": {0, 2}, "m2": {1}}),
    (["m1", "m2", "m3"], 3, {"m1": {0}, "m2": {1}, "m3": {2}}),
    (["m1", "m2", "m3"], 1, {"m1": {0}, "m2": {0}, "m3": {0}}),
    (["m1", "m2", "m3", "m4"], 2, {"m1": {0}, "m2": {1}, "m3": {0}, "m4": {1}}),
])
def test_simple_assignor_spreads_every_partition(members, partitions, expected):
    out = simple_assign({m: ["a"] for m in members}, {"a": (T1, partitions)})
    assert {m: set(a.get(T1, ())) for m, a in out.items()} == expected
    # every partition has at least one member
    assert set().union(*expected.values()) == set(range(partitions))


def test_join_gets_epoch_and_assignment_then_second_member_shares():
    g = ShareGroup("g")
    r = hb(g, "m1", 0, ["a"])          # +1 new member, +1 subscription, +1 assignment batch
    assert (r.error, r.member_epoch, r.assignment) == (0, 3, {T1: [0, 1, 2]})
    assert r.heartbeat_interval_ms == 5000
    r2 = hb(g, "m2", 0, ["a"])         # +1 new member (same topics), +1 assignment batch
    assert (r2.error, r2.member_epoch, r2.assignment) == (0, 5, {T1: [1]})
    # m1 learns its new assignment on its next heartbeat, at the new epoch
    r = hb(g, "m1", 3)
    assert (r.error, r.member_epoch, r.assignment) == (0, 5, {T1: [0, 2]})
    # a heartbeat with nothing new carries no assignment
    r = hb(g, "m1", 5)
    assert (r.error, r.member_epoch, r.assignment) == (0, 5, None)
    assert g.state_name() == "Stable"


def test_assignment_waits_for_the_assignment_interval():
    """Kafka 4.3.1 (observed): a first member is at epoch 2 with an empty assignment; the
    background assignment (group.share.assignment.interval.ms) then gives it epoch 3."""
    from dataclasses import replace
    cfg = replace(CFG, assignment_interval_ms=1000)
    g = ShareGroup("g")
    r = g.heartbeat(HeartbeatRequest("g", "m1", 0, subscribed_topic_names=["a"]), TOPICS, 0, cfg)
    assert (r.member_epoch, r.assignment) == (2, {})
    r = g.heartbeat(HeartbeatRequest("g", "m1", 2), TOPICS, 999, cfg)
    assert (r.member_epoch, r.assignment) == (2, None)
    r = g.heartbeat(HeartbeatRequest("g", "m1", 2), TOPICS, 1000, cfg)
    assert (r.member_epoch, r.assignment) == (3, {T1: [0, 1, 2]})


@pytest.mark.parametrize("step,expected", [
    (("m9", 3, None), E.UNKNOWN_MEMBER_ID),
    (("m1", 7, None), E.FENCED_MEMBER_EPOCH),       # greater than known
    (("", 0, ["a"]), E.INVALID_REQUEST),            # member id required (v1)
    (("m2", 0, None), E.INVALID_REQUEST),           # first heartbeat names topics
    (("m2", 0, []), E.INVALID_REQUEST),
    (("m9", -1, None), E.UNKNOWN_MEMBER_ID),
    (("m1", -5, None), E.INVALID_REQUEST),
])
def test_errors(step, expected):
    g = ShareGroup("g")
    hb(g, "m1", 0, ["a"])
    assert hb(g, *step).error == expected


def test_smaller_epoch_only_as_previous():
    g = ShareGroup("g")
    hb(g, "m1", 0, ["a"])          # epoch 3
    hb(g, "m2", 0, ["a"])          # group epoch 5
    assert hb(g, "m1", 3).member_epoch == 5      # m1 moves to 5, previous 3
    assert hb(g, "m1", 3).error == 0             # the answer was lost: previous epoch is fine
    hb(g, "m3", 0, ["a"])                        # group epoch 7
    assert hb(g, "m1", 5).member_epoch == 7      # previous now 5
    assert hb(g, "m1", 3).error == E.FENCED_MEMBER_EPOCH


def test_leave_and_session_timeout_reassign():
    """A member that leaves, or whose session ran out (the protocol's session timer removes
    it: tests/share/test_share_group_records.py), gives its partitions to the others."""
    g = ShareGroup("g")
    hb(g, "m1", 0, ["a"], now=0)
    hb(g, "m2", 0, ["a"], now=10_000)
    r = hb(g, "m2", -1)
    assert (r.error, r.member_epoch) == (0, -1)
    hb(g, "m3", 0, ["a"], now=20_000)
    g.remove("m1", TOPICS, 45_000)
    assert set(g.members) == {"m3"}
    r = hb(g, "m3", g.members["m3"].member_epoch, now=45_001)
    assert r.assignment == {T1: [0, 1, 2]}
    assert hb(g, "m1", 5).error == E.UNKNOWN_MEMBER_ID


def test_subscription_and_partition_changes_bump_the_group_epoch():
    g = ShareGroup("g")
    hb(g, "m1", 0, ["a"])
    r = g.heartbeat(HeartbeatRequest("g", "m1", 3, subscribed_topic_names=["a", "b"]), TOPICS, 0, CFG)
    assert (r.member_epoch, r.assignment) == (5, {T1: [0, 1, 2], T2: [0]})
    grown = {"a": (T1, 4), "b": (T2, 1)}
    r = hb(g, "m1", 5, meta=grown)
    assert (r.member_epoch, r.assignment) == (7, {T1: [0, 1, 2, 3], T2: [0]})


def test_rejoin_of_an_empty_group_is_assigned_at_once_and_the_last_leave_moves_the_assignment_epoch():
    """Kafka 4.4 (measured with ShareGroupHeartbeat/ShareGroupDescribe): the last member
    leaving leaves an Empty group whose assignment epoch is its group epoch; a member joining
    it again, its partitions' share state initialized, is one new epoch and assigned at once."""
    g = ShareGroup("g")
    hb(g, "m1", 0, ["a"])                                   # epoch 3 (4.3 rules: a new group)
    g.initialized = {T1: ("a", frozenset({0, 1, 2}))}      # as the state-partition record says
    assert hb(g, "m1", -1).member_epoch == -1
    assert (g.state_name(), g.group_epoch, g.assignment_epoch) == ("Empty", 4, 4)
    r = hb(g, "m2", 0, ["a"])
    assert (r.error, r.member_epoch, r.assignment) == (0, 5, {T1: [0, 1, 2]})
    assert (g.group_epoch, g.assignment_epoch) == (5, 5)
    g.remove("m2", TOPICS, 1)                               # a session that ran out: the same
    assert (g.state_name(), g.group_epoch, g.assignment_epoch) == ("Empty", 6, 6)


def test_rejoin_without_share_state_keeps_the_new_group_rules():
    g = ShareGroup("g")
    hb(g, "m1", 0, ["a"])
    hb(g, "m1", -1)                                          # 4/4, nothing initialized
    r = hb(g, "m2", 0, ["a"])                                # +1 member, +1 topics, +1 batch
    assert (r.member_epoch, g.group_epoch, g.assignment_epoch) == (7, 7, 7)


def test_group_max_size():
    from dataclasses import replace
    cfg = replace(CFG, max_size=1)
    g = ShareGroup("g")
    assert g.heartbeat(HeartbeatRequest("g", "m1", 0, subscribed_topic_names=["a"]), TOPICS, 0, cfg).error == 0
    assert g.heartbeat(HeartbeatRequest("g", "m2", 0, subscribed_topic_names=["a"]), TOPICS, 0,
                       cfg).error == E.GROUP_MAX_SIZE_REACHED
