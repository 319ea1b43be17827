"""The join/sync protocol, scripted against a mock clock (milliseconds, no sleeping)."""
from kbroker.wire.error_codes import ErrorCode as E

from .harness import Harness


def test_first_member_kip394_then_initial_delay_to_the_millisecond():
    h = Harness()
    first = h.join("g")
    assert first.value.error == E.MEMBER_ID_REQUIRED and first.value.member_id
    mid = first.value.member_id
    assert h.state() == "Empty"
    slot = h.join("g", mid)
    assert h.state() == "PreparingRebalance" and not slot.done
    h.advance(2999)
    assert not slot.done
    h.advance(1)
    r = slot.value
    assert (r.error, r.generation_id, r.leader, r.member_id) == (0, 1, mid, mid)
    assert r.protocol_type == "consumer" and r.protocol_name == "range"
    assert [m[0] for m in r.members] == [mid]
    assert h.state() == "CompletingRebalance"
    s = h.sync("g", mid, 1, [(mid, b"A")])
    assert s.value.error == 0 and s.value.assignment == b"A"
    assert s.value.protocol_type == "consumer" and s.value.protocol_name == "range"
    assert h.state() == "Stable"


def test_initial_delay_extends_while_members_arrive_capped_by_rebalance_timeout():
    h = Harness()
    a = h.join_new("g", client="a", rebalance=10000)    # t=0: join timer at 3000, 7000 left
    h.advance(1000)
    b = h.join_new("g", client="b", rebalance=10000)    # new member during the delay
    h.advance(1999)
    assert not a.done
    h.advance(1)                                         # t=3000: extend by 3000
    assert not a.done and h.mgr.timers.deadline(("join", "g")) == 6000
    h.advance(2999)
    assert not a.done
    h.advance(1)                                         # t=6000: nobody new, complete
    assert a.value.generation_id == b.value.generation_id == 1
    assert len(a.value.members) == 2 and b.value.members == []


def test_a_zero_initial_rebalance_delay_still_waits_a_tick_and_extends_while_members_arrive():
    """``group.initial.rebalance.delay.ms=0``: the first generation does not complete in the
    millisecond the first member joined (Kafka's timers tick by the millisecond), so
    members joining back to back share it; each tick in which a member arrived extends it
    by one more tick."""
    from kbroker.group.manager import GroupConfig
    h = Harness(config=GroupConfig(initial_rebalance_delay_ms=0))
    a = h.join_new("g", client="a")
    h.advance(0)
    assert not a.done and h.state() == "PreparingRebalance"
    b = h.join_new("g", client="b")                      # the same millisecond
    h.advance(1)                                         # a member arrived: one more tick
    assert not a.done
    c = h.join_new("g", client="c")
    h.advance(1)
    assert not a.done
    h.advance(1)                                         # a tick without a newcomer
    assert {s.value.generation_id for s in (a, b, c)} == {1}
    assert len(a.value.members) == 3 and b.value.members == c.value.members == []


def test_join_v3_has_no_member_id_round_trip():
    h = Harness()
    s = h.join("g", version=3)
    assert not s.done and len(h.group().members) == 1
    h.advance(3000)
    assert s.value.error == 0 and s.value.member_id.startswith("c-")


def test_new_member_triggers_rebalance_and_both_get_assignments():
    h = Harness()
    (m1,), gen = h.stable_group(1)
    newcomer = h.join_new("g", client="n")
    assert h.state() == "PreparingRebalance" and not newcomer.done
    assert h.heartbeat("g", m1, gen) == E.REBALANCE_IN_PROGRESS
    old = h.join("g", m1)                  # everyone is in: completes at once
    assert h.state() == "CompletingRebalance"
    assert old.value.generation_id == newcomer.value.generation_id == gen + 1
    leader = old.value.leader
    assert leader == m1 and len(old.value.members) == 2
    n = newcomer.value.member_id
    follower = h.sync("g", n, gen + 1)
    assert not follower.done                         # parked until the leader's assignment
    lead = h.sync("g", m1, gen + 1, [(m1, b"p0"), (n, b"p1")])
    assert lead.value.assignment == b"p0" and follower.value.assignment == b"p1"
    assert h.state() == "Stable"


def test_member_not_rejoining_is_removed_at_rebalance_timeout():
    h = Harness()
    (m1, m2), gen = h.stable_group(2, rebalance=20000, session=30000)
    t0 = h.now
    j1 = h.join("g", m1, rebalance=20000, session=30000)   # leader rejoins → rebalance
    h.heartbeat("g", m2, gen)                               # m2 alive but does not rejoin
    h.advance_to(t0 + 19999)
    assert not j1.done and m2 in h.group().members
    h.advance(1)
    assert j1.value.error == 0 and [m[0] for m in j1.value.members] == [m1]
    assert m2 not in h.group().members
    assert h.heartbeat("g", m2, gen) == E.UNKNOWN_MEMBER_ID


def test_session_timeout_expiry_exact_and_heartbeat_extends():
    h = Harness()
    (m1, m2), gen = h.stable_group(2, session=10000)
    t0 = h.now
    h.advance(9999)
    assert h.heartbeat("g", m1, gen) == 0          # m1 renews at t0+9999
    h.advance(1)                                    # m2's deadline t0+10000 passes
    assert m2 not in h.group().members
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat("g", m1, gen) == E.REBALANCE_IN_PROGRESS
    j = h.join("g", m1)
    assert j.value.generation_id == gen + 1 and h.state() == "CompletingRebalance"
    assert h.now == t0 + 10000


def test_follower_not_syncing_is_removed_at_rebalance_timeout():
    h = Harness()
    a = h.join_new("g", client="a", rebalance=15000, session=20000)
    b = h.join_new("g", client="b", rebalance=15000, session=20000)
    h.advance_until(lambda: a.done)
    gen, leader = a.value.generation_id, a.value.leader
    other = b.value.member_id if leader == a.value.member_id else a.value.member_id
    t0 = h.now
    ls = h.sync("g", leader, gen, [(leader, b"x"), (other, b"y")])
    assert ls.value.error == 0 and h.state() == "Stable"   # leader synced, follower pending
    h.heartbeat("g", other, gen)
    h.advance_to(t0 + 14999)
    assert other in h.group().members
    h.advance(1)
    assert other not in h.group().members and h.state() == "PreparingRebalance"


def test_rejoin_in_completing_rebalance_with_same_metadata_returns_same_generation():
    h = Harness()
    a = h.join_new("g", client="a")
    h.advance(3000)
    mid = a.value.member_id
    again = h.join("g", mid)
    assert again.value.generation_id == a.value.generation_id
    assert h.state() == "CompletingRebalance"
    changed = h.join("g", mid, protocols=[("range", b"other")])
    assert h.state() in ("PreparingRebalance", "CompletingRebalance")
    assert changed.value.generation_id == 2


def test_stable_follower_rejoin_same_metadata_no_rebalance_leader_rejoin_rebalances():
    h = Harness()
    (m1, m2), gen = h.stable_group(2)
    leader = h.group().leader_id
    follower = m2 if leader == m1 else m1
    r = h.join("g", follower)
    assert r.value.generation_id == gen and h.state() == "Stable" and r.value.members == []
    h.join("g", leader)
    assert h.state() == "PreparingRebalance"


def test_sync_errors():
    h = Harness()
    (m1, m2), gen = h.stable_group(2)
    assert h.sync("nope", m1, gen).value.error == E.UNKNOWN_MEMBER_ID
    assert h.sync("g", "ghost", gen).value.error == E.UNKNOWN_MEMBER_ID
    assert h.sync("g", m1, gen + 7).value.error == E.ILLEGAL_GENERATION
    assert h.sync("g", m1, gen, ptype="connect").value.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync("g", m1, gen, pname="roundrobin").value.error == E.INCONSISTENT_GROUP_PROTOCOL
    ok = h.sync("g", m1, gen, ptype="consumer", pname="range").value
    assert ok.error == 0 and ok.assignment == f"assign-{m1}".encode()
    h.join_new("g", client="x")                     # rebalance starts
    assert h.sync("g", m1, gen).value.error == E.REBALANCE_IN_PROGRESS


def test_rebalance_during_completing_answers_parked_syncs_with_rebalance_in_progress():
    h = Harness()
    a = h.join_new("g", client="a")
    b = h.join_new("g", client="b")
    h.advance_until(lambda: a.done)
    gen, leader = a.value.generation_id, a.value.leader
    follower = b.value.member_id if leader == a.value.member_id else a.value.member_id
    fs = h.sync("g", follower, gen)
    assert not fs.done
    h.join_new("g", client="c")                     # new member while CompletingRebalance
    assert fs.value.error == E.REBALANCE_IN_PROGRESS
    assert h.state() == "PreparingRebalance"


def test_heartbeat_errors():
    h = Harness()
    (m1, m2), gen = h.stable_group(2)
    assert h.heartbeat("g", m1, gen) == 0
    assert h.heartbeat("missing", m1, gen) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("g", "ghost", gen) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("g", m1, gen - 1) == E.ILLEGAL_GENERATION
    assert h.heartbeat("", m1, gen) == E.INVALID_GROUP_ID


def test_leave_batched_and_by_instance_id():
    h = Harness()
    (a, b, c), gen = h.stable_group(3)
    err, members = h.leave("g", a, "ghost")
    assert err == 0 and members == [(a, None, 0), ("ghost", None, E.UNKNOWN_MEMBER_ID)]
    assert h.state() == "PreparingRebalance"
    err, _ = h.leave("g", b, c)
    assert err == 0
    assert h.state() == "Empty" and not h.group().members


def test_leave_from_an_unknown_group_answers_per_member():
    """F-008: as Kafka, a group the coordinator does not know is no top-level error; every
    member of the batch is answered UNKNOWN_MEMBER_ID (static ones by instance id too), and
    no group springs into existence."""
    h = Harness()
    err, members = h.leave("missing", "x", ("", "inst-1"), ("y", "inst-2"))
    assert err == E.NONE
    assert members == [("x", None, E.UNKNOWN_MEMBER_ID),
                       ("", "inst-1", E.UNKNOWN_MEMBER_ID),
                       ("y", "inst-2", E.UNKNOWN_MEMBER_ID)]
    assert "missing" not in h.mgr.groups
    assert h.leave("missing") == (E.NONE, [])


def test_leave_mixing_known_and_unknown_members_removes_only_the_known():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    err, members = h.leave("g", "ghost", a, ("", "no-such-instance"))
    assert err == E.NONE
    assert members == [("ghost", None, E.UNKNOWN_MEMBER_ID), (a, None, E.NONE),
                       ("", "no-such-instance", E.UNKNOWN_MEMBER_ID)]
    assert set(h.group().members) == {b}
    assert h.state() == "PreparingRebalance"


def test_leave_completes_join_when_the_last_laggard_leaves():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    j = h.join("g", a)                              # a rejoins; b has not
    assert not j.done
    h.leave("g", b)
    assert j.value.error == 0 and j.value.generation_id == gen + 1


def test_pending_member_expires_after_session_timeout():
    h = Harness()
    first = h.join("g", session=7000)
    pid = first.value.member_id
    assert h.group().is_pending_member(pid)
    h.advance(6999)
    assert h.group().is_pending_member(pid)
    h.advance(1)
    assert not h.group().is_pending_member(pid)
    assert h.join("g", pid).value.error == E.UNKNOWN_MEMBER_ID


def test_new_member_join_timeout_bounds_a_parked_join():
    h = Harness()
    (a, b), gen = h.stable_group(2, session=10000, rebalance=600000)
    n = h.join_new("g", client="n", rebalance=600000)
    h.join("g", a, rebalance=600000)                 # b never rejoins, heartbeats keep it
    for _ in range(40):
        h.advance(9000)
        h.heartbeat("g", b, gen)
        if n.done:
            break
    # the new member's parked join is bounded by 5 minutes: it gets UNKNOWN_MEMBER_ID
    assert n.value.error == E.UNKNOWN_MEMBER_ID


def test_protocol_selection_by_votes_and_inconsistent_protocols():
    h = Harness()
    a = h.join_new("g", client="a", protocols=[("roundrobin", b"1"), ("range", b"2")])
    b = h.join_new("g", client="b", protocols=[("range", b"3"), ("roundrobin", b"4")])
    c = h.join_new("g", client="c", protocols=[("range", b"5")])
    h.advance_until(lambda: a.done)
    assert a.value.protocol_name == "range"
    leader = next(s.value for s in (a, b, c) if s.value.members)
    metas = {m[0]: m[2] for m in leader.members}
    assert metas[a.value.member_id] == b"2"
    bad = h.join("g", protocols=[("sticky", b"")])
    assert bad.value.error == E.INCONSISTENT_GROUP_PROTOCOL
    bad2 = h.join("g", ptype="connect", protocols=[("range", b"")])
    assert bad2.value.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_cooperative_protocol_bytes_are_opaque():
    h = Harness()
    junk = bytes(range(256)) * 3
    a = h.join_new("g", client="a", protocols=[("cooperative-sticky", junk)])
    h.advance(3000)
    assert a.value.members[0][2] == junk
    mid = a.value.member_id
    s = h.sync("g", mid, 1, [(mid, junk[::-1])])
    assert s.value.assignment == junk[::-1]
