"""Every group state × every event: the reply and the state afterwards. Plus bad input
and a seeded random simulation that checks the group invariants after every event."""
import random

import pytest

from kbroker.group.manager import GroupConfig
from kbroker.group.classic.state import GroupState
from kbroker.wire.error_codes import ErrorCode as E

from .harness import Harness, consumer_meta


def in_state(state):
    """A harness with group "g" in ``state``; returns (h, known member id, generation)."""
    h = Harness()
    if state == "Empty":
        h.commit("g", {("t", 0): 1})
        return h, "ghost", 0
    if state == "CompletingRebalance":
        a = h.join_new("g", client="a")
        b = h.join_new("g", client="b")
        h.advance_until(lambda: a.done and b.done)
        follower = b.value.member_id if a.value.leader == a.value.member_id else a.value.member_id
        return h, follower, a.value.generation_id
    (m1, m2), gen = h.stable_group(2)
    follower = m2 if h.group().leader_id == m1 else m1
    if state == "PreparingRebalance":
        h.join_new("g", client="x")
    if state == "Dead":
        h.group().state = GroupState.DEAD
    assert h.state() == state
    return h, follower, gen


STATES = ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]

# event -> {state: (expected error or "parked", state after)}
EXPECT = {
    "join_new": {"Empty": (E.MEMBER_ID_REQUIRED, "Empty"),
                 "PreparingRebalance": (E.MEMBER_ID_REQUIRED, "PreparingRebalance"),
                 "CompletingRebalance": (E.MEMBER_ID_REQUIRED, "CompletingRebalance"),
                 "Stable": (E.MEMBER_ID_REQUIRED, "Stable"),
                 "Dead": (E.COORDINATOR_NOT_AVAILABLE, "Dead")},
    "join_existing": {"Empty": (E.UNKNOWN_MEMBER_ID, "Empty"),
                      "PreparingRebalance": ("parked", "PreparingRebalance"),
                      "CompletingRebalance": (E.NONE, "CompletingRebalance"),
                      "Stable": (E.NONE, "Stable"),
                      "Dead": (E.COORDINATOR_NOT_AVAILABLE, "Dead")},
    "sync": {"Empty": (E.UNKNOWN_MEMBER_ID, "Empty"),
             "PreparingRebalance": (E.REBALANCE_IN_PROGRESS, "PreparingRebalance"),
             "CompletingRebalance": ("parked", "CompletingRebalance"),
             "Stable": (E.NONE, "Stable"),
             "Dead": (E.COORDINATOR_NOT_AVAILABLE, "Dead")},
    "heartbeat": {"Empty": (E.UNKNOWN_MEMBER_ID, "Empty"),
                  "PreparingRebalance": (E.REBALANCE_IN_PROGRESS, "PreparingRebalance"),
                  "CompletingRebalance": (E.NONE, "CompletingRebalance"),
                  "Stable": (E.NONE, "Stable"),
                  "Dead": (E.COORDINATOR_NOT_AVAILABLE, "Dead")},
    "commit_member": {"Empty": (E.UNKNOWN_MEMBER_ID, "Empty"),
                      "PreparingRebalance": (E.NONE, "PreparingRebalance"),
                      "CompletingRebalance": (E.REBALANCE_IN_PROGRESS, "CompletingRebalance"),
                      "Stable": (E.NONE, "Stable"),
                      "Dead": (E.COORDINATOR_NOT_AVAILABLE, "Dead")},
    "commit_simple": {"Empty": (E.NONE, "Empty"),
                      "PreparingRebalance": (E.UNKNOWN_MEMBER_ID, "PreparingRebalance"),
                      "CompletingRebalance": (E.UNKNOWN_MEMBER_ID, "CompletingRebalance"),
                      "Stable": (E.UNKNOWN_MEMBER_ID, "Stable"),
                      "Dead": (E.COORDINATOR_NOT_AVAILABLE, "Dead")},
    "leave": {"Empty": (E.UNKNOWN_MEMBER_ID, "Empty"),
              "PreparingRebalance": (E.NONE, "PreparingRebalance"),
              "CompletingRebalance": (E.NONE, "PreparingRebalance"),
              "Stable": (E.NONE, "PreparingRebalance"),
              "Dead": (E.COORDINATOR_NOT_AVAILABLE, "Dead")},
    "wrong_generation_heartbeat": {"Empty": (E.UNKNOWN_MEMBER_ID, "Empty"),
                                   "PreparingRebalance": (E.ILLEGAL_GENERATION, "PreparingRebalance"),
                                   "CompletingRebalance": (E.ILLEGAL_GENERATION, "CompletingRebalance"),
                                   "Stable": (E.ILLEGAL_GENERATION, "Stable"),
                                   "Dead": (E.COORDINATOR_NOT_AVAILABLE, "Dead")},
}


def run_event(h, event, member, gen):
    if event == "join_new":
        s = h.join("g")
    elif event == "join_existing":
        s = h.join("g", member)
    elif event == "sync":
        s = h.sync("g", member, gen)
    elif event == "heartbeat":
        return h.heartbeat("g", member, gen)
    elif event == "wrong_generation_heartbeat":
        return h.heartbeat("g", member, gen + 5)
    elif event == "commit_member":
        return h.commit("g", {("t", 0): 5}, member, gen)[0][1][0][1]
    elif event == "commit_simple":
        return h.commit("g", {("t", 0): 5})[0][1][0][1]
    elif event == "leave":
        err, members = h.leave("g", member)
        return err or members[0][2]
    return s.value.error if s.done else "parked"


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("event", sorted(EXPECT))
def test_state_event_matrix(state, event):
    h, member, gen = in_state(state)
    expected_reply, expected_state = EXPECT[event][state]
    assert run_event(h, event, member, gen) == expected_reply
    assert h.state() == expected_state


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_session_expiry_in_each_state(state):
    h, member, gen = in_state(state)
    h.advance_until(lambda: member not in h.group().members)
    assert h.state() in ("PreparingRebalance", "CompletingRebalance", "Empty")


# ------------------------------------------------------------------ bad input
def test_bad_join_input_gets_error_codes_and_other_groups_are_unaffected():
    h = Harness()
    (m1, m2), gen = h.stable_group(2, group="other")
    assert h.join("").value.error == E.INVALID_GROUP_ID
    assert h.join("g", session=10).value.error == E.INVALID_SESSION_TIMEOUT
    assert h.join("g", session=10**9).value.error == E.INVALID_SESSION_TIMEOUT
    assert h.join("g", protocols=[]).value.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("g", ptype="").value.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("g", "never-issued").value.error == E.UNKNOWN_MEMBER_ID
    assert h.join("other", "never-issued").value.error == E.UNKNOWN_MEMBER_ID
    # duplicate protocol names: the first wins, nothing breaks
    s = h.join_new("dup", protocols=[("range", b"1"), ("range", b"2")])
    h.advance_until(lambda: s.done)
    assert s.value.members[0][2] == b"1"
    # malformed consumer metadata is opaque to the join path; subscription unknown
    junk = h.join_new("junk", protocols=[("range", b"\xff\xff\xff")])
    h.advance_until(lambda: junk.done)
    assert junk.value.error == 0 and h.group("junk").subscribed_topics is None
    err, parts = h.drive(h.mgr.delete_offsets("junk", [("t", [0])], h.now))
    assert parts == [("t", [(0, E.GROUP_SUBSCRIBED_TO_TOPIC)])]
    assert h.state("other") == "Stable" and h.heartbeat("other", m1, gen) == 0


def test_group_max_size_with_many_members():
    cfg = GroupConfig(max_size=100, initial_rebalance_delay_ms=0)
    h = Harness(config=cfg)
    slots = [h.join("big", version=3, client=f"c{i}") for i in range(150)]
    h.advance(0)
    rejected = [s for s in slots if s.done and s.value.error == E.GROUP_MAX_SIZE_REACHED]
    assert len(h.group("big").members) <= 100
    h.advance_until(lambda: all(s.done for s in slots))
    ok = [s for s in slots if s.value.error == 0]
    assert len(ok) == 100 and len(rejected) + len(ok) == 150
    assert all(s.value.member_id == "" for s in rejected)
    more = h.join("big")
    assert more.value.error == E.GROUP_MAX_SIZE_REACHED


def test_thousands_of_members_join_quickly():
    cfg = GroupConfig(initial_rebalance_delay_ms=0)
    h = Harness(config=cfg)
    slots = [h.join_new("huge", client=f"c{i}") for i in range(3000)]
    h.advance_until(lambda: all(s.done for s in slots))
    assert all(s.value.error == 0 for s in slots)
    leader = [s for s in slots if s.value.members]
    assert len(leader) == 1 and len(leader[0].value.members) == 3000


def test_junk_bytes_in_consumer_offsets_records_are_rejected_not_crashing():
    from kbroker.group.records import decode_key
    assert decode_key(b"\x00\x09whatever") is None
    assert decode_key(b"") is None
    h = Harness()
    h.mgr.replay(b"\x00\x63junk", b"\x00\x00")      # unknown record type: skipped
    with pytest.raises(Exception):                   # a consumer-group key (type 5), truncated
        h.mgr.replay(b"\x00\x05junk", b"\x00\x00")
    with pytest.raises(Exception):
        h.mgr.replay(b"\x00\x01\x00", b"")           # truncated key: a typed error


# ------------------------------------------------------------------ simulation
def check_invariants(h):
    for gid, g in h.mgr.groups.items():
        assert g.num_awaiting_join == sum(m.awaiting_join is not None for m in g.members.values())
        if g.members:
            assert g.leader_id in g.members
        else:
            assert g.state in (GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
        if g.state is GroupState.EMPTY:
            assert not g.members
        if g.state is GroupState.STABLE:
            assert g.num_awaiting_join == 0
        for inst, mid in g.static_members.items():
            assert g.members[mid].group_instance_id == inst
        for name, count in g.supported_protocols.items():
            assert count == sum(name in m.protocol_names() for m in g.members.values())
        for mid, m in g.members.items():
            # every member is either parked or has a session deadline
            assert (m.awaiting_join is not None or m.awaiting_sync is not None
                    or ("heartbeat", gid, mid) in h.mgr.timers)


@pytest.mark.parametrize("seed", range(20))
def test_random_simulation_keeps_invariants(seed):
    rng = random.Random(seed)
    h = Harness(config=GroupConfig(initial_rebalance_delay_ms=rng.choice([0, 100, 3000])))
    known: dict[str, int] = {}          # member id -> last generation seen
    instances = ["s1", "s2", None, None, None]
    parked = []
    for _ in range(300):
        op = rng.random()
        if op < 0.2:
            s = h.join("g", version=rng.choice([3, 4, 9]), instance=rng.choice(instances),
                       session=rng.choice([6000, 10000]), rebalance=rng.choice([5000, 20000]),
                       protocols=rng.choice([[("range", b"a")], [("range", b"b"), ("rr", b"")]]))
            if s.done and s.value.error == E.MEMBER_ID_REQUIRED:
                s = h.join("g", s.value.member_id)
            parked.append(s)
        elif op < 0.35 and known:
            mid = rng.choice(list(known))
            parked.append(h.join("g", mid))
        elif op < 0.55 and known:
            mid = rng.choice(list(known))
            g = h.group()
            assign = [(m, b"x") for m in (g.members if g else [])]
            h.sync("g", mid, known[mid], assign)
        elif op < 0.75 and known:
            mid = rng.choice(list(known))
            h.heartbeat("g", mid, known[mid])
        elif op < 0.8 and known:
            h.leave("g", rng.choice(list(known)))
        elif op < 0.85 and known:
            mid = rng.choice(list(known))
            h.commit("g", {("t", 0): rng.randrange(100)}, mid, known[mid])
        else:
            h.advance(rng.choice([1, 100, 1000, 5000, 7000]))
        # learn completed parked joins (every parked request is answered exactly once)
        for s in [s for s in parked if s.done]:
            parked.remove(s)
            assert len(s.replies) == 1
            if s.value.error == 0:
                known[s.value.member_id] = s.value.generation_id
        check_invariants(h)
    h.advance(10**6)            # everything settles: no request stays parked forever
    assert not [s for s in parked if not s.done]
