"""KIP-848 consumer groups as scripted traces over the pure shard (mock clock): epochs,
target assignment, reconciliation with revocation before assignment, fencing, static
membership, session and rebalance timeouts, regex subscriptions, limits, offsets with
member epochs, and replay of the records."""
from __future__ import annotations

import pytest

from kbroker.group.consumer.state import ConsumerGroupState, MemberState
from kbroker.group.manager import GroupManager
from kbroker.wire.error_codes import ErrorCode as E

from .consumer_harness import ConsumerHarness, names, tid


def test_kip848_walkthrough_revocation_before_assignment():
    """KIP-848's example: A owns everything; B joins; A revokes before B is assigned."""
    h = ConsumerHarness({"foo": 6})
    r = h.join("A", ["foo"])
    # a new member subscribing to topics: epoch 2 (Kafka 4.3.1 bumps for the new member and
    # for the subscription)
    assert r.error == 0 and r.member_epoch == 2
    assert names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5]}
    g = h.group()
    assert (g.group_epoch, g.assignment_epoch, g.state()) == (2, 2, ConsumerGroupState.STABLE)

    r = h.join("B", ["foo"])
    # B's target partitions are still held by A: epoch 4, nothing yet
    assert r.member_epoch == 4 and names(r.assignment) == {}
    assert g.members["B"].state is MemberState.UNRELEASED_PARTITIONS
    assert g.group_epoch == 4 and g.assignment_epoch == 4
    a_target = sorted(g.target["A"][tid("foo")])
    b_target = sorted(g.target["B"][tid("foo")])
    assert len(a_target) == 3 and len(b_target) == 3 and set(a_target) | set(b_target) == set(range(6))
    assert g.state() is ConsumerGroupState.RECONCILING

    # A heartbeats at epoch 2 owning all: asked to revoke, stays at epoch 2
    r = h.hb("A", h.ep("A"), owned={"foo": range(6)})
    assert r.member_epoch == 2 and names(r.assignment) == {"foo": a_target}
    assert g.members["A"].state is MemberState.UNREVOKED_PARTITIONS
    # B still waits: A has not released
    r = h.hb("B", h.ep("B"), owned={})
    assert r.member_epoch == 4 and r.assignment is None
    # A acknowledges the revocation
    r = h.hb("A", h.ep("A"), owned={"foo": a_target})
    assert r.member_epoch == 4 and g.members["A"].state is MemberState.STABLE
    # now B gets its partitions
    r = h.hb("B", h.ep("B"), owned={})
    assert r.member_epoch == 4 and names(r.assignment) == {"foo": b_target}
    assert g.state() is ConsumerGroupState.STABLE
    # partitions are never owned twice
    assert set(g.owners) == {(tid("foo"), p) for p in range(6)}


def test_member_leaves_and_partitions_move_to_the_other():
    h = ConsumerHarness({"t": 4})
    h.join("A", ["t"])
    h.join("B", ["t"])
    h.hb("A", h.ep("A"), owned={"t": range(4)})
    g = h.group()
    a = sorted(g.target["A"][tid("t")])
    h.hb("A", h.ep("A"), owned={"t": a})
    h.hb("B", h.ep("B"), owned={})
    r = h.hb("A", -1)
    assert r.error == 0 and r.member_epoch == -1
    assert "A" not in g.members and g.group_epoch == 5
    r = h.hb("B", h.ep("B"), owned={"t": sorted(g.members["B"].assigned[tid("t")])})
    assert r.member_epoch == 5 and names(r.assignment) == {"t": [0, 1, 2, 3]}


@pytest.mark.parametrize("case, expected", [
    ("greater_epoch", E.FENCED_MEMBER_EPOCH),
    ("older_epoch_not_previous", E.FENCED_MEMBER_EPOCH),
    ("unknown_member", E.UNKNOWN_MEMBER_ID),
    ("previous_epoch_subset", E.NONE),
    ("previous_epoch_not_subset", E.FENCED_MEMBER_EPOCH),
])
def test_fencing(case, expected):
    h = ConsumerHarness({"t": 2})
    first = h.join("A", ["t"]).member_epoch     # owns 0 and 1
    h.join("B", ["t"])                           # a new group epoch
    h.hb("A", first, owned={"t": [0, 1]})        # asked to revoke one
    kept = sorted(h.group().members["A"].assigned[tid("t")])
    h.hb("A", first, owned={"t": kept})          # now at the new epoch, previous = first
    now = h.group().members["A"].member_epoch
    assert now > first and h.group().members["A"].previous_member_epoch == first
    if case == "greater_epoch":
        r = h.hb("A", now + 1, owned={"t": kept})
    elif case == "older_epoch_not_previous":
        h.join("C", ["t"])
        h.hb("A", now, owned={"t": kept})
        # A revokes and moves on to a newer epoch still; ``first`` is too old now
        cur = h.group().members["A"]
        h.hb("A", cur.member_epoch, owned={"t": sorted(cur.assigned.get(tid("t"), {}))})
        assert h.group().members["A"].previous_member_epoch != first
        r = h.hb("A", first, owned={})
    elif case == "unknown_member":
        r = h.hb("Z", 5, owned={})
    elif case == "previous_epoch_subset":
        r = h.hb("A", first, owned={"t": kept})
    else:
        r = h.hb("A", first, owned={"t": [0, 1]})
    assert r.error == expected


def test_request_checks():
    h = ConsumerHarness({"t": 1})
    assert h.hb("", 0, topics=["t"], owned={}).error == E.INVALID_REQUEST       # v1: member id
    assert h.hb("A", 0, topics=["t"], owned={}, group="").error == E.INVALID_REQUEST
    assert h.hb("A", 0, topics=["t"], owned=None).error == E.INVALID_REQUEST    # owned must be []
    assert h.hb("A", 0, topics=None, owned={}).error == E.INVALID_REQUEST       # no subscription
    assert h.hb("A", -2).error == E.INVALID_REQUEST                              # static leave w/o id
    assert h.hb("A", -3).error == E.INVALID_REQUEST
    r = h.hb("A", 0, topics=["t"], owned={}, assignor="sticky")
    assert r.error == E.UNSUPPORTED_ASSIGNOR and "uniform, range" in r.message
    r = h.hb("", 0, topics=["t"], owned={}, version=0)                          # v0: server id
    assert r.error == 0 and r.member_id


def test_static_member_rejoins_with_new_id_keeps_partitions_without_rebalance():
    h = ConsumerHarness({"t": 4})
    h.join("A1", ["t"], instance="i-a")
    h.join("B", ["t"])
    g = h.group()
    h.hb("A1", h.ep("A1"), owned={"t": range(4)})
    a = sorted(g.target["A1"][tid("t")])
    h.hb("A1", h.ep("A1"), owned={"t": a})
    h.hb("B", h.ep("B"), owned={})
    epoch = g.group_epoch
    # another process claims the instance while A1 is alive
    assert h.join("A2", ["t"], instance="i-a").error == E.UNRELEASED_INSTANCE_ID
    # A1 leaves temporarily (-2): keeps its partitions
    r = h.hb("A1", -2, instance="i-a")
    assert r.member_epoch == -2 and g.members["A1"].member_epoch == -2
    r = h.join("A2", ["t"], instance="i-a")
    assert r.error == 0 and names(r.assignment) == {"t": a}
    assert "A1" not in g.members and g.group_epoch == epoch          # no rebalance
    assert r.member_epoch == g.assignment_epoch
    # the old id is fenced
    assert h.hb("A1", epoch, instance="i-a", owned={}).error == E.FENCED_INSTANCE_ID


def test_session_timeout_fences_member_with_injected_clock():
    h = ConsumerHarness({"t": 2})
    h.join("A", ["t"])
    h.join("B", ["t"])
    g = h.group()
    h.advance(30_000)
    h.hb("A", h.ep("A"), owned={"t": [0, 1]})        # A keeps its session
    h.advance(20_000)                         # B silent for 50 s > 45 s
    assert "B" not in g.members and "A" in g.members
    assert h.mgr.counters["members_expired"] == 1


def test_group_config_session_timeout_is_used():
    h = ConsumerHarness({"t": 1})
    h.mgr.consumer.group_configs = lambda gid: {"consumer.session.timeout.ms": "50000",
                                                "consumer.heartbeat.interval.ms": "6000"}
    r = h.join("A", ["t"])
    assert r.heartbeat_interval_ms == 6000
    h.advance(46_000)
    assert "A" in h.group().members
    h.advance(5_000)
    assert "A" not in h.group().members


def test_rebalance_timeout_fences_member_that_never_revokes():
    h = ConsumerHarness({"t": 2})
    h.join("A", ["t"], rebalance_timeout=10_000)
    h.join("B", ["t"])
    h.hb("A", h.ep("A"), owned={"t": [0, 1]})             # asked to revoke at epoch 1
    g = h.group()
    assert g.members["A"].state is MemberState.UNREVOKED_PARTITIONS
    ea, eb = h.ep("A"), h.ep("B")
    for _ in range(3):                             # keeps heartbeating, never revokes
        h.advance(4_000)
        h.hb("A", ea, owned={"t": [0, 1]})
        h.hb("B", eb, owned={})
    assert "A" not in g.members
    h.hb("B", g.members["B"].member_epoch, owned={})
    assert {t: sorted(ps) for t, ps in g.members["B"].assigned.items()} == {tid("t"): [0, 1]}


def test_group_max_size():
    h = ConsumerHarness({"t": 1}, consumer_max_size=2)
    assert h.join("A", ["t"]).error == 0
    assert h.join("B", ["t"]).error == 0
    assert h.join("C", ["t"]).error == E.GROUP_MAX_SIZE_REACHED
    assert h.join("A", ["t"]).error == 0            # an existing member may rejoin


def test_regex_subscription_and_refresh_on_new_topic():
    h = ConsumerHarness({"foo1": 1, "foo2": 1, "bar": 1})
    r = h.join("A", regex="foo.*")
    assert names(r.assignment) == {"foo1": [0], "foo2": [0]}
    g = h.group()
    assert g.resolved_regexes["foo.*"].topics == {"foo1", "foo2"}
    assert g.is_subscribed_to("foo1") and not g.is_subscribed_to("bar")
    h.set_topic("foo3", 2)
    h.advance(11_000)
    r = h.hb("A", g.members["A"].member_epoch, owned={"foo1": [0], "foo2": [0]})
    assert names(r.assignment) == {"foo1": [0], "foo2": [0], "foo3": [0, 1]}
    # anchored on both ends, like RE2/J's matches()
    r = h.join("B", regex="oo", group="g2")
    assert names(r.assignment) == {}


@pytest.mark.parametrize("regex", ["(", "a(?=b)", r"(a)\1", "a++", "(?<!x)y"])
def test_invalid_regex(regex):
    h = ConsumerHarness({"t": 1})
    assert h.join("A", regex=regex).error == E.INVALID_REGULAR_EXPRESSION


def test_metadata_change_bumps_epoch_and_assigns_new_partitions():
    h = ConsumerHarness({"t": 2})
    h.join("A", ["t"])
    g = h.group()
    assert g.group_epoch == 2
    h.set_topic("t", 4)
    r = h.hb("A", h.ep("A"), owned={"t": [0, 1]})
    assert g.group_epoch == 3 and names(r.assignment) == {"t": [0, 1, 2, 3]}


def test_assignor_choice_by_server_assignor():
    h = ConsumerHarness({"a": 2, "b": 2})
    h.join("A", ["a", "b"], assignor="range")
    h.join("B", ["a", "b"], assignor="range")
    g = h.group()
    # range co-partitions: A gets partition 0 of both topics, B partition 1 of both
    assert {t: sorted(ps) for t, ps in g.target["A"].items()} == {tid("a"): [0], tid("b"): [0]}
    assert {t: sorted(ps) for t, ps in g.target["B"].items()} == {tid("a"): [1], tid("b"): [1]}


def test_offset_commit_with_member_epoch():
    h = ConsumerHarness({"t": 2})
    h.join("A", ["t"])
    mgr = h.mgr

    def commit(member, epoch, partition=0, version=9):
        return h.drive(mgr.commit_offsets("g", member, epoch, None, [("t", [(partition, 5, -1, "")])],
                                          h.now, api_version=version))[0][1][0][1]
    assert commit("A", 2) == 0
    assert commit("A", 3) == E.STALE_MEMBER_EPOCH
    assert commit("Z", 2) == E.UNKNOWN_MEMBER_ID
    assert commit("A", 2, version=8) == E.UNSUPPORTED_VERSION
    h.join("B", ["t"])
    h.hb("A", h.ep("A"), owned={"t": [0, 1]})
    kept = sorted(h.group().members["A"].assigned[tid("t")])
    h.hb("A", h.ep("A"), owned={"t": kept})                       # A now at epoch 4
    assert h.ep("A") == 4
    # KIP-1251: epoch 2 is older, but the kept partition was assigned at epoch 2
    assert commit("A", 2, partition=kept[0]) == 0
    other = 1 - kept[0]
    assert commit("A", 2, partition=other) == E.STALE_MEMBER_EPOCH
    err, _ = mgr.fetch_offsets("g", [("t", [0])], member_id="A", member_epoch=2)
    assert err == E.STALE_MEMBER_EPOCH
    err, res = mgr.fetch_offsets("g", [("t", [kept[0]])], member_id="A", member_epoch=4)
    assert err == 0 and res[0][1][0][1] == 5
    assert mgr.fetch_offsets("g", None)[0] == 0                       # admin fetch


def _replayed(h: ConsumerHarness) -> GroupManager:
    """A new coordinator that loaded every record ``h`` appended."""
    fresh = GroupManager(h.config)
    fresh.set_topics(h.mgr.consumer.topics)
    fresh.begin_load(0)
    for r in h.log:
        fresh.replay(r.key, r.value)
    fresh.complete_load(0, h.now)
    return fresh


def test_records_replay_into_the_same_state():
    h = ConsumerHarness({"t": 3, "u": 2})
    h.join("A", ["t", "u"], instance="ia")
    h.join("B", ["t"])
    h.join("C", regex="u")
    h.hb("A", h.ep("A"), owned={"t": [0, 1, 2], "u": [0, 1]})
    h.commit = h.drive(h.mgr.commit_offsets("g", "A", h.ep("A"), "ia", [("t", [(0, 7, -1, "m")])],
                                            h.now, api_version=9))
    fresh = _replayed(h)
    a, b = h.group(), fresh.groups["g"]
    assert (a.group_epoch, a.assignment_epoch, a.metadata_hash) == \
        (b.group_epoch, b.assignment_epoch, b.metadata_hash)
    assert a.members == b.members
    assert a.target == b.target
    assert a.resolved_regexes == b.resolved_regexes and a.owners == b.owners
    assert fresh.offsets["g"][("t", 0)].offset == 7
    assert ("consumer-session", "g", "A") in fresh.timers


def test_failed_append_reverts_the_group():
    h = ConsumerHarness({"t": 2})
    h.join("A", ["t"])
    g = h.group()
    h.fail_next_append = E.NOT_LEADER_OR_FOLLOWER
    r = h.join("B", ["t"])
    assert r.error == E.NOT_COORDINATOR
    g = h.group()
    assert "B" not in g.members and g.group_epoch == 2


def test_delete_empty_consumer_group_and_list_describe():
    h = ConsumerHarness({"t": 1})
    h.join("A", ["t"])
    listed = h.mgr.list_groups_typed(types=["consumer"])
    assert [(x.group_id, x.group_type, x.state, x.protocol_type) for x in listed] == \
        [("g", "consumer", "Stable", "consumer")]
    assert h.mgr.list_groups_typed(types=["classic"]) == []
    d = h.mgr.consumer_group_describe(["g", "nope"])
    assert d[0].error == 0 and d[0].state == "Stable" and d[0].assignor_name == "uniform"
    assert d[0].members[0].assignment == [(tid("t"), "t", [0])]
    assert d[1].error == E.GROUP_ID_NOT_FOUND
    assert h.mgr.describe_group("g").state == "Dead"            # DescribeGroups v0-5
    assert h.drive(h.mgr.delete_groups(["g"], h.now)) == [("g", E.NON_EMPTY_GROUP)]
    h.hb("A", -1)
    assert h.drive(h.mgr.delete_groups(["g"], h.now)) == [("g", 0)]
    fresh = GroupManager(h.config)
    fresh.begin_load(0)
    for r in h.log:
        fresh.replay(r.key, r.value)
    assert "g" not in fresh.groups


def test_empty_classic_group_is_replaced_and_live_one_is_not():
    h = ConsumerHarness({"t": 1})
    h.drive(h.mgr.commit_offsets("simple", "", -1, None, [("t", [(0, 3, -1, "")])], h.now))
    r = h.join("A", ["t"], group="simple")
    assert r.error == 0 and h.group("simple").group_type == "consumer"
    assert h.mgr.fetch_offsets("simple", [("t", [0])])[1][0][1][0][1] == 3


def test_unload_forgets_the_partition_and_a_reload_replays_it():
    h = ConsumerHarness({"t": 2})
    h.join("A", ["t"])
    h.drive(h.mgr.commit_offsets("g", "A", 2, None, [("t", [(0, 4, -1, "")])], h.now))
    res = h.mgr.unload(0)
    assert not res.records and "g" not in h.mgr.groups and "g" not in h.mgr.offsets
    assert not any(k[1:2] == ("g",) for k in h.mgr.timers.keys())
    assert h.hb("A", 2, owned={"t": [0, 1]}).error == E.NOT_COORDINATOR
    h.mgr.begin_load(0)
    for r in h.log:
        h.mgr.replay(r.key, r.value)
    h.drive(h.mgr.complete_load(0, h.now))
    assert h.hb("A", h.ep("A"), owned={"t": [0, 1]}).error == 0
    assert h.mgr.fetch_offsets("g", [("t", [0])])[1][0][1][0][1] == 4


def test_classic_and_consumer_groups_share_ids_only_when_empty():
    from kbroker.group.classic.protocol import JoinRequest
    from kbroker.group.classic.state import ClassicGroup
    # (the online migration itself: tests/group/test_consumer_classic_members.py)
    h = ConsumerHarness({"t": 1}, consumer_migration_policy="disabled")
    h.join("A", ["t"])
    h.drive(h.mgr.commit_offsets("g", "A", 2, None, [("t", [(0, 9, -1, "")])], h.now))

    class Slot:
        value = None

        def set(self, v):
            self.value = v

    def classic_join():
        slot = Slot()
        res = h.mgr.join_group(JoinRequest("g", "", "consumer", [("range", b"")], 10000,
                                           api_version=3), slot, h.now)
        for s, reply in res.replies:
            s.set(reply)
        h.drive(res)
        return slot.value
    # a live consumer group refuses a classic member whose embedded protocol is malformed
    assert classic_join().error == E.INCONSISTENT_GROUP_PROTOCOL
    h.hb("A", -1)
    # an empty one becomes a classic group; its offsets stay
    classic_join()
    assert isinstance(h.group(), ClassicGroup)
    assert h.mgr.fetch_offsets("g", [("t", [0])])[1][0][1][0][1] == 9
    # a live classic group refuses consumer-protocol members when the upgrade is disabled
    r = h.join("B", ["t"])
    assert r.error == E.GROUP_ID_NOT_FOUND and "is not a consumer group" in r.message
    # the log replays to the classic group
    fresh = GroupManager(h.config)
    fresh.begin_load(0)
    for rec in h.log:
        fresh.replay(rec.key, rec.value)
    assert isinstance(fresh.groups["g"], ClassicGroup)
    assert fresh.offsets["g"][("t", 0)].offset == 9


def test_assignment_interval_batches_target_assignments():
    """Kafka 4.3 (measured): a member joining within ``group.consumer.assignment.interval.ms``
    of the last target assignment reconciles to the previous one (its member epoch is the old
    assignment epoch, nothing assigned) until a heartbeat after the interval."""
    h = ConsumerHarness({"t": 2}, consumer_assignment_interval_ms=1000)
    a = h.join("A", ["t"])
    assert a.member_epoch == 2 and names(a.assignment) == {"t": [0, 1]}
    b = h.join("B", ["t"])
    g = h.group()
    assert b.member_epoch == 2 and names(b.assignment) == {}
    assert g.group_epoch == 4 and g.assignment_epoch == 2 and g.state() is ConsumerGroupState.ASSIGNING
    h.advance(500)
    assert h.hb("B", 2, owned={}).member_epoch == 2 and g.assignment_epoch == 2
    h.advance(600)
    r = h.hb("A", 2, owned={"t": [0, 1]})
    assert g.assignment_epoch == 4 and r.member_epoch == 2          # A must revoke one first
    assert len(names(r.assignment)["t"]) == 1


def test_last_member_leaving_moves_the_assignment_epoch_with_the_group_epoch():
    """Kafka 4.4 (F-961; ``consumerGroupFenceMembers``): when the last member leaves, the
    (empty) target assignment is at the new group epoch at once, with timestamp 0, so the
    empty group answers ConsumerGroupDescribe with equal epochs and a member joining next,
    even within the assignment interval, is assigned at once. The records replay to the
    same epochs."""
    h = ConsumerHarness({"t": 2}, consumer_assignment_interval_ms=1000)
    a = h.join("A", ["t"])
    assert a.member_epoch == 2 and names(a.assignment) == {"t": [0, 1]}
    assert h.hb("A", -1).member_epoch == -1
    g = h.group()
    assert (g.group_epoch, g.assignment_epoch, g.assignment_timestamp_ms) == (3, 3, 0)
    d = h.mgr.consumer.consumer_describe("g")
    assert (d.state, d.group_epoch, d.assignment_epoch) == ("Empty", 3, 3)
    fresh = _replayed(h)
    assert (fresh.groups["g"].group_epoch, fresh.groups["g"].assignment_epoch) == (3, 3)
    h.advance(100)                         # well within the interval of the first assignment
    b = h.join("B", ["t"])
    assert b.member_epoch == 5 and names(b.assignment) == {"t": [0, 1]}
    assert (g.group_epoch, g.assignment_epoch) == (5, 5)


def test_a_leaving_member_that_is_not_the_last_leaves_the_assignment_epoch_behind():
    """The rule above is for the last member only: another member's leave bumps the group
    epoch and the next heartbeat computes the new target, as before."""
    h = ConsumerHarness({"t": 2}, consumer_assignment_interval_ms=1000)
    h.join("A", ["t"])
    h.advance(1000)
    h.join("B", ["t"])
    g = h.group()
    epoch, assigned_at = g.group_epoch, g.assignment_epoch
    assert epoch == assigned_at
    h.hb("B", -1)
    assert (g.group_epoch, g.assignment_epoch) == (epoch + 1, assigned_at)
