"""Static membership (KIP-345), committed offsets, retention, admin operations, replay."""
from kbroker.group.manager import GroupConfig, GroupManager
from kbroker.wire.error_codes import ErrorCode as E

from .harness import Harness, consumer_meta


def static_group(h, n=2, version=9, **kw):
    slots = [h.join("g", instance=f"i{i}", client=f"c{i}", version=version, **kw) for i in range(n)]
    h.advance_until(lambda: all(s.done for s in slots))
    gen = slots[0].value.generation_id
    leader = slots[0].value.leader
    ids = {f"i{i}": s.value.member_id for i, s in enumerate(slots)}
    for mid in ids.values():
        if mid != leader:
            h.sync("g", mid, gen)
    h.sync("g", leader, gen, [(m, f"A{m}".encode()) for m in ids.values()])
    assert h.state() == "Stable"
    return ids, gen, leader


def test_static_member_restart_rejoins_without_rebalance_and_fences_old_id():
    h = Harness()
    ids, gen, leader = static_group(h)
    follower_inst = next(i for i, m in ids.items() if m != leader)
    old = ids[follower_inst]
    r = h.join("g", instance=follower_inst, client="restarted")
    new = r.value.member_id
    assert r.value.error == 0 and new != old
    assert r.value.generation_id == gen and h.state() == "Stable"
    assert h.group().generation_id == gen
    # the new id gets the old assignment without any rebalance
    s = h.sync("g", new, gen, instance=follower_inst)
    assert s.value.assignment == f"A{old}".encode()
    # the old incarnation is fenced
    assert h.heartbeat("g", old, gen, instance=follower_inst) == E.FENCED_INSTANCE_ID
    assert h.sync("g", old, gen, instance=follower_inst).value.error == E.FENCED_INSTANCE_ID
    # and the identity change was persisted
    assert h.log[-1].parsed_key.group == "g"


def test_static_leader_restart_v8_told_old_leader_v9_skip_assignment():
    h = Harness()
    ids, gen, leader = static_group(h)
    inst = next(i for i, m in ids.items() if m == leader)
    r8 = h.join("g", instance=inst, version=8).value
    assert r8.leader == leader and r8.member_id != leader and r8.members == []
    assert h.group().leader_id == r8.member_id
    r9 = h.join("g", instance=inst, version=9).value
    assert r9.leader == r9.member_id and r9.skip_assignment and len(r9.members) == 2
    assert h.state() == "Stable" and h.group().generation_id == gen


def test_static_member_with_changed_protocol_triggers_rebalance():
    h = Harness()
    ids, gen, leader = static_group(h, protocols=[("range", b"m"), ("roundrobin", b"m")])
    for inst in ids:
        h.join("g", instance=inst, protocols=[("roundrobin", b"m")])
    assert h.group().generation_id > gen or h.state() != "Stable"


def test_static_member_rejoin_with_wrong_member_id_is_fenced():
    h = Harness()
    ids, gen, _ = static_group(h)
    r = h.join("g", "someone-else", instance="i0")
    assert r.value.error == E.FENCED_INSTANCE_ID


def test_static_member_not_removed_at_rebalance_timeout_but_at_session_timeout():
    h = Harness()
    ids, gen, leader = static_group(h, session=10000, rebalance=5000)
    t0 = h.now
    other = next(m for m in ids.values() if m != leader)
    inst = next(i for i, m in ids.items() if m == leader)
    j = h.join("g", leader, instance=inst, session=10000, rebalance=5000)
    h.advance(4999)
    assert not j.done
    h.advance(1)                            # rebalance timeout: the static laggard stays
    assert j.value.generation_id == gen + 1 and other in h.group().members
    assert [m[0] for m in j.value.members] == [leader, other] or \
        {m[0] for m in j.value.members} == {leader, other}
    h.advance_to(t0 + 9999)
    assert other in h.group().members
    h.advance(1)                            # its session (from its last sync) runs out
    assert other not in h.group().members


def test_leave_by_instance_id_admin_removal():
    h = Harness()
    ids, gen, _ = static_group(h)
    err, res = h.leave("g", ("", "i1"), ("", "nope"))
    assert res == [("", "i1", 0), ("", "nope", E.UNKNOWN_MEMBER_ID)]
    assert ids["i1"] not in h.group().members


# ------------------------------------------------------------------ offsets
def test_simple_consumer_commit_creates_group_and_metadata_round_trips():
    h = Harness()
    resp = h.commit("simple", {("t", 0): (42, "meta-ä"), ("t", 1): (7, "")})
    assert resp == [("t", [(0, 0), (1, 0)])]
    assert h.fetch("simple", [("t", [0, 1, 2])]) == {
        ("t", 0): (42, "meta-ä", 0), ("t", 1): (7, "", 0), ("t", 2): (-1, "", 0)}
    assert h.fetch("simple") == {("t", 0): (42, "meta-ä", 0), ("t", 1): (7, "", 0)}
    assert h.state("simple") == "Empty"
    assert h.mgr.list_groups() == [("simple", "", "Empty")]


def test_commit_errors_by_state_and_version():
    h = Harness()
    assert h.commit("nogroup", {("t", 0): 1}, "m", 3, version=8) == [("t", [(0, E.ILLEGAL_GENERATION)])]
    assert h.commit("nogroup", {("t", 0): 1}, "m", 3, version=9) == [("t", [(0, E.GROUP_ID_NOT_FOUND)])]
    assert h.commit("", {("t", 0): 1}) == [("t", [(0, E.INVALID_GROUP_ID)])]
    (m1, m2), gen = h.stable_group(2)
    assert h.commit("g", {("t", 0): 5}, m1, gen) == [("t", [(0, 0)])]
    assert h.commit("g", {("t", 0): 5}, m1, gen + 1) == [("t", [(0, E.ILLEGAL_GENERATION)])]
    assert h.commit("g", {("t", 0): 5}, "ghost", gen) == [("t", [(0, E.UNKNOWN_MEMBER_ID)])]
    assert h.commit("g", {("t", 0): 5}) == [("t", [(0, E.UNKNOWN_MEMBER_ID)])]   # gen -1, not empty
    big = "x" * 4097
    assert h.commit("g", {("t", 0): (5, big), ("t", 1): 6}, m1, gen) == \
        [("t", [(0, E.OFFSET_METADATA_TOO_LARGE), (1, 0)])]
    # PreparingRebalance: a member of the current generation may still commit
    h.join_new("g", client="x")
    assert h.commit("g", {("t", 0): 9}, m1, gen) == [("t", [(0, 0)])]
    h.join("g", m1)
    h.join("g", m2)
    assert h.state() == "CompletingRebalance"
    assert h.commit("g", {("t", 0): 10}, m1, gen + 1) == [("t", [(0, E.REBALANCE_IN_PROGRESS)])]
    assert h.commit("g", {("t", 0): 10}, m1, gen) == [("t", [(0, E.ILLEGAL_GENERATION)])]
    assert h.fetch("g", [("t", [0, 1])]) == {("t", 0): (9, "", 0), ("t", 1): (6, "", 0)}


def test_commit_append_failure_maps_error_and_changes_nothing():
    h = Harness()
    h.fail_next_append = E.NOT_LEADER_OR_FOLLOWER
    assert h.commit("s", {("t", 0): 1}) == [("t", [(0, E.NOT_COORDINATOR)])]
    assert h.fetch("s", [("t", [0])]) == {("t", 0): (-1, "", 0)}


def test_require_stable_with_pending_transactional_offsets():
    h = Harness()
    h.commit("s", {("t", 0): 1})
    h.mgr.pending_txn_offsets[77] = {"s": {("t", 0): None}}
    assert h.fetch("s", [("t", [0])], require_stable=True) == {("t", 0): (-1, "", E.UNSTABLE_OFFSET_COMMIT)}
    assert h.fetch("s", [("t", [0])]) == {("t", 0): (1, "", 0)}


def test_offset_commit_keeps_the_session_alive():
    h = Harness()
    (m1, m2), gen = h.stable_group(2, session=10000)
    for _ in range(5):
        h.advance(6000)
        h.commit("g", {("t", 0): 1}, m1, gen)
        h.heartbeat("g", m2, gen)
    assert h.state() == "Stable"


# ------------------------------------------------------------------ retention
def test_simple_group_offsets_expire_at_retention_then_group_is_deleted():
    cfg = GroupConfig(offsets_retention_ms=60000, offsets_retention_check_interval_ms=1000)
    h = Harness(config=cfg)
    h.mgr.schedule_offsets_expiry(h.mono)
    h.commit("s", {("t", 0): 1})
    h.advance(59000)
    assert h.fetch("s", [("t", [0])])[("t", 0)][0] == 1
    h.advance(1000)                                      # check at 60000: 60000-0 >= 60000
    assert h.fetch("s", [("t", [0])])[("t", 0)][0] == -1
    assert h.group("s") is None


def test_consumer_group_offsets_expire_counting_from_empty():
    cfg = GroupConfig(offsets_retention_ms=60000, offsets_retention_check_interval_ms=1000,
                      initial_rebalance_delay_ms=0)
    h = Harness(config=cfg)
    h.mgr.schedule_offsets_expiry(h.mono)
    (m1,), gen = h.stable_group(1)
    h.commit("g", {("t", 0): 3}, m1, gen)
    for _ in range(100):                                  # members keep offsets alive
        h.advance(1000)
        h.heartbeat("g", m1, gen)
    assert h.fetch("g", [("t", [0])])[("t", 0)][0] == 3
    h.leave("g", m1)
    empty_at = h.now
    h.advance_until(lambda: h.group("g") is None)
    assert h.now - empty_at >= 60000 and h.now - empty_at < 61000


def test_explicit_retention_v2_to_v4_sets_expire_timestamp():
    cfg = GroupConfig(offsets_retention_check_interval_ms=1000)
    h = Harness(config=cfg)
    h.mgr.schedule_offsets_expiry(h.mono)
    h.commit("s", {("t", 0): 1}, version=2, retention=5000)
    h.advance(4000)
    assert h.fetch("s", [("t", [0])])[("t", 0)][0] == 1
    h.advance(1000)
    assert h.fetch("s", [("t", [0])])[("t", 0)][0] == -1


# ------------------------------------------------------------------ admin
def test_delete_groups_and_offset_delete():
    h = Harness()
    (m1,), gen = h.stable_group(1, protocols=[("range", consumer_meta(["t"]))])
    h.commit("g", {("t", 0): 1, ("u", 0): 2}, m1, gen)
    h.commit("s", {("t", 0): 1})
    res = h.drive(h.mgr.delete_groups(["g", "s", "missing", ""], h.now))
    assert res == [("g", E.NON_EMPTY_GROUP), ("s", 0), ("missing", E.GROUP_ID_NOT_FOUND),
                   ("", E.INVALID_GROUP_ID)]
    assert h.group("s") is None and h.fetch("s", [("t", [0])])[("t", 0)][0] == -1
    err, parts = h.drive(h.mgr.delete_offsets("g", [("t", [0]), ("u", [0])], h.now))
    assert err == 0 and parts == [("t", [(0, E.GROUP_SUBSCRIBED_TO_TOPIC)]), ("u", [(0, 0)])]
    assert h.fetch("g") == {("t", 0): (1, "", 0)}
    assert h.drive(h.mgr.delete_offsets("missing", [("t", [0])], h.now)) == (E.GROUP_ID_NOT_FOUND, [])
    h.leave("g", m1)
    err, parts = h.drive(h.mgr.delete_offsets("g", [("t", [0])], h.now))
    assert parts == [("t", [(0, 0)])] and h.fetch("g") == {}


def test_list_and_describe():
    h = Harness()
    (m1, m2), gen = h.stable_group(2)
    h.commit("s", {("t", 0): 1})
    assert sorted(h.mgr.list_groups()) == [("g", "consumer", "Stable"), ("s", "", "Empty")]
    assert h.mgr.list_groups(states=["stable"]) == [("g", "consumer", "Stable")]
    assert h.mgr.list_groups(types=["consumer"]) == []
    d = h.mgr.describe_group("g")
    assert (d.state, d.protocol_type, d.protocol_data) == ("Stable", "consumer", "range")
    assert {m.member_id for m in d.members} == {m1, m2}
    assert d.members[0].assignment.startswith(b"assign-") and d.members[0].metadata == b"m"
    assert h.mgr.describe_group("nope").state == "Dead"
    h.join_new("g", client="x")
    d = h.mgr.describe_group("g")
    assert d.state == "PreparingRebalance" and d.protocol_data == "" and d.members[0].metadata == b""


# ------------------------------------------------------------------ replay
def replayed(h: Harness, now: int) -> Harness:
    """A fresh coordinator that loads everything ``h`` appended."""
    h2 = Harness(config=h.config, now=now, loaded=False)
    for r in h.log:
        h2.mgr.replay(r.key, r.value)
    for p in range(h.config.num_partitions):
        h2.drive(h2.mgr.complete_load(p, h2.now, h2.mono))
    return h2


def test_replay_restores_stable_group_offsets_and_expects_heartbeats():
    h = Harness()
    (m1, m2), gen = h.stable_group(2, session=10000)
    h.commit("g", {("t", 0): (11, "hello"), ("t", 1): 12}, m1, gen)
    h.commit("s", {("u", 3): 99})
    h.drive(h.mgr.delete_groups(["s"], h.now))
    h.commit("s2", {("u", 3): 5})
    h2 = replayed(h, h.now + 1000)
    g = h2.group("g")
    assert g.state.value == "Stable" and g.generation_id == gen and set(g.members) == {m1, m2}
    assert g.leader_id == h.group().leader_id
    assert g.members[m1].assignment == f"assign-{m1}".encode()
    assert h2.fetch("g") == {("t", 0): (11, "hello", 0), ("t", 1): (12, "", 0)}
    assert h2.group("s") is None and h2.fetch("s2") == {("u", 3): (5, "", 0)}
    # members keep working against the new coordinator, at the same generation
    assert h2.heartbeat("g", m1, gen) == 0
    assert h2.sync("g", m1, gen).value.assignment == f"assign-{m1}".encode()
    # m2 never heartbeats: expired one session timeout after load
    h2.advance(9999)
    assert m2 in h2.group().members
    h2.advance(1)
    assert m2 not in h2.group().members


def test_replay_of_static_identity_change_and_empty_group():
    h = Harness()
    ids, gen, leader = static_group(h)
    r = h.join("g", instance="i1").value
    h.join_new("e", client="z")
    h.leave("e", h.group("e").leader_id)
    h.advance(3000)
    h2 = replayed(h, h.now)
    assert h2.group("g").static_members["i1"] == r.member_id
    assert h2.state("e") == "Empty"


def test_not_coordinator_before_load_and_load_in_progress():
    h = Harness(loaded=False)
    s = h.join("g")
    assert s.value.error == E.NOT_COORDINATOR
    p = h.mgr.partition_for("g")
    h.mgr.begin_load(p)
    assert h.join("g").value.error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.heartbeat("g", "m", 1) == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.commit("g", {("t", 0): 1}) == [("t", [(0, E.COORDINATOR_LOAD_IN_PROGRESS)])]
    h.drive(h.mgr.complete_load(p, h.now))
    assert h.join("g").value.error == E.MEMBER_ID_REQUIRED


def test_sync_append_failure_propagates_error_and_rebalances():
    h = Harness()
    a = h.join_new("g", client="a")
    b = h.join_new("g", client="b")
    h.advance_until(lambda: a.done)
    gen, leader = a.value.generation_id, a.value.leader
    other = b.value.member_id if leader == a.value.member_id else a.value.member_id
    fs = h.sync("g", other, gen)
    h.fail_next_append = E.REQUEST_TIMED_OUT
    ls = h.sync("g", leader, gen, [(leader, b"x"), (other, b"y")])
    assert ls.value.error == fs.value.error == E.COORDINATOR_NOT_AVAILABLE
    assert h.state() == "PreparingRebalance"
