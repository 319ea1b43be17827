"""The server-side assignors (``uniform``, ``range``) on tables of member/partition layouts,
including the examples of Kafka's documentation, and their invariants on many random
layouts: every subscribed partition assigned exactly once, only to a subscriber, balance,
and stickiness of the uniform assignor."""
from __future__ import annotations

import random
import uuid

import pytest

from kbroker.group.consumer.assignors import (AssignorError, GroupSpec, MemberSpec, assign,
                                              range_assign, uniform_assign)

T = {n: uuid.uuid5(uuid.NAMESPACE_URL, n) for n in ("t1", "t2", "t3", "t4")}
NAMES = {v: k for k, v in T.items()}


def spec(partitions: dict[str, int], members: dict[str, tuple], current=None, instances=None):
    current = current or {}
    instances = instances or {}
    ms = tuple(MemberSpec(mid, instances.get(mid), frozenset(T[t] for t in topics),
                          {T[t]: frozenset(ps) for t, ps in current.get(mid, {}).items()})
               for mid, topics in members.items())
    return GroupSpec(ms, {T[t]: n for t, n in partitions.items()}, NAMES)


def by_name(result):
    return {mid: {NAMES[t]: sorted(ps) for t, ps in a.items() if ps} for mid, a in result.items()}


# ------------------------------------------------------------------ range
@pytest.mark.parametrize("partitions, members, expected", [
    # Kafka's RangeAssignor documentation: 2 consumers, 2 topics of 3 partitions
    ({"t1": 3, "t2": 3}, {"C0": ("t1", "t2"), "C1": ("t1", "t2")},
     {"C0": {"t1": [0, 1], "t2": [0, 1]}, "C1": {"t1": [2], "t2": [2]}}),
    # more members than partitions: the last ones get nothing
    ({"t1": 2}, {"a": ("t1",), "b": ("t1",), "c": ("t1",)},
     {"a": {"t1": [0]}, "b": {"t1": [1]}, "c": {}}),
    # heterogeneous: each topic ranged over its own subscribers
    ({"t1": 4, "t2": 2}, {"a": ("t1",), "b": ("t1", "t2"), "c": ("t2",)},
     {"a": {"t1": [0, 1]}, "b": {"t1": [2, 3], "t2": [0]}, "c": {"t2": [1]}}),
    ({"t1": 7}, {"a": ("t1",), "b": ("t1",), "c": ("t1",)},
     {"a": {"t1": [0, 1, 2]}, "b": {"t1": [3, 4]}, "c": {"t1": [5, 6]}}),
])
def test_range_table(partitions, members, expected):
    assert by_name(range_assign(spec(partitions, members))) == expected


def test_range_orders_static_members_first_by_instance_id():
    s = spec({"t1": 3}, {"a": ("t1",), "z": ("t1",), "m": ("t1",)}, instances={"z": "i1", "m": "i2"})
    assert by_name(range_assign(s)) == {"z": {"t1": [0]}, "m": {"t1": [1]}, "a": {"t1": [2]}}


# ------------------------------------------------------------------ uniform
@pytest.mark.parametrize("partitions, members, current, expected", [
    # first assignment: sorted members fill from the free partitions in order
    ({"t1": 3, "t2": 3}, {"A": ("t1", "t2"), "B": ("t1", "t2")}, {},
     {"A": {"t1": [0, 1, 2]}, "B": {"t2": [0, 1, 2]}}),
    # sticky: a new member only takes what exceeds the others' quota
    ({"t1": 6}, {"A": ("t1",), "B": ("t1",)}, {"A": {"t1": range(6)}},
     {"A": {"t1": [0, 1, 2]}, "B": {"t1": [3, 4, 5]}}),
    # a member leaves: its partitions go to the remaining one, the others keep theirs
    ({"t1": 4}, {"A": ("t1",)}, {"A": {"t1": [0, 1]}, "B": {"t1": [2, 3]}},
     {"A": {"t1": [0, 1, 2, 3]}}),
    # unsubscribed topics are dropped from the previous assignment
    ({"t1": 2}, {"A": ("t1",), "B": ("t1",)}, {"A": {"t2": [0]}, "B": {"t1": [0, 1]}},
     {"A": {"t1": [1]}, "B": {"t1": [0]}}),
    # heterogeneous: t2 only for B
    ({"t1": 2, "t2": 2}, {"A": ("t1",), "B": ("t1", "t2")}, {},
     {"A": {"t1": [0, 1]}, "B": {"t2": [0, 1]}}),
])
def test_uniform_table(partitions, members, current, expected):
    assert by_name(uniform_assign(spec(partitions, members, current))) == expected


def test_unknown_topic_is_an_assignor_error():
    s = GroupSpec((MemberSpec("a", None, frozenset({uuid.uuid4()})),), {})
    with pytest.raises(AssignorError):
        assign("range", s)
    with pytest.raises(AssignorError):
        assign("uniform", s)


@pytest.mark.parametrize("seed", range(40))
def test_invariants_on_random_layouts(seed):
    rnd = random.Random(seed)
    partitions = {t: rnd.randint(1, 12) for t in rnd.sample(sorted(T), rnd.randint(1, 4))}
    topics = sorted(partitions)
    homogeneous = rnd.random() < 0.5
    members = {}
    for i in range(rnd.randint(1, 9)):
        members[f"m{i}"] = tuple(topics) if homogeneous else tuple(
            rnd.sample(topics, rnd.randint(1, len(topics))))
    current = {}
    for mid in members:
        if rnd.random() < 0.6:
            t = rnd.choice(topics)
            current[mid] = {t: rnd.sample(range(partitions[t]), rnd.randint(0, partitions[t]))}
    for name in ("uniform", "range"):
        s = spec(partitions, members, current)
        result = assign(name, s)
        seen = {}
        for mid, a in result.items():
            for t, ps in a.items():
                assert T_NAME(t) in members[mid], "assigned an unsubscribed topic"
                for p in ps:
                    assert (t, p) not in seen, "partition assigned twice"
                    seen[(t, p)] = mid
        subscribed = {T[t] for ts in members.values() for t in ts}
        assert set(seen) == {(t, p) for t in subscribed for p in range(partitions[NAMES[t]])}
        if name == "uniform" and homogeneous:
            counts = [sum(len(ps) for ps in result.get(m, {}).values()) for m in members]
            assert max(counts) - min(counts) <= 1
    # stickiness: recomputing from its own output changes nothing
    s = spec(partitions, members)
    first = uniform_assign(s)
    again = uniform_assign(GroupSpec(tuple(MemberSpec(m.member_id, None, m.topics, first[m.member_id])
                                           for m in s.members), s.partitions, NAMES))
    assert by_name(first) == by_name(again)


def T_NAME(topic_id):
    return NAMES[topic_id]
