"""A step of the node's wall clock (NTP, a resumed VM), forward or back by an hour, against
the pure coordinator shard: the timers run on the monotonic clock, as Kafka's
``CoordinatorTimer`` (``SystemTimer``, ``hiResClockMs``), and what records carry or is
compared with them stays on the wall clock, as Kafka's ``time.milliseconds()``.

Per group type: members that keep heartbeating are not expired and keep their generation or
epochs; a silent member still goes one session timeout (monotonic) after its last heartbeat;
join/sync phases, revocation timeouts and initial rebalance delays end when their timeout
has passed on the monotonic clock -- not at once after a forward step, not an hour late after
a backward one. Offsets retention compares the wall clock with the commit timestamp (Kafka's
``cleanupExpiredOffsets``), checked every ``offsets.retention.check.interval.ms`` of the
monotonic clock. Streams groups: tests/streams/test_streams_protocol.py; the trio driver:
tests/group/test_service.py; share-partition locks: tests/share/test_share_manager_clock.py.
"""
from __future__ import annotations

import pytest

from kbroker.group.config import GroupConfig
from kbroker.group.consumer.state import MemberState
from kbroker.group.share.state import HeartbeatRequest as ShareHeartbeat
from kbroker.wire.error_codes import ErrorCode as E

from .consumer_harness import ConsumerHarness, names, tid
from .harness import Harness

HOUR = 3_600_000
STEPS = pytest.mark.parametrize("step", [HOUR, -HOUR], ids=["forward", "back"])


# ------------------------------------------------------------------ classic groups
@STEPS
def test_classic_members_keep_their_generation_and_a_silent_one_still_expires(step):
    h = Harness()
    (m1, m2), gen = h.stable_group(2, session=10_000)
    rebalances = h.mgr.counters["rebalances"]
    h.step_wall(step)
    for _ in range(5):                                  # 15 s of heartbeats after the step
        h.advance(3000)
        assert h.heartbeat("g", m1, gen) == 0 and h.heartbeat("g", m2, gen) == 0
    g = h.group()
    assert (h.state(), g.generation_id, set(g.members)) == ("Stable", gen, {m1, m2})
    assert h.mgr.counters["members_expired"] == 0
    assert h.mgr.counters["rebalances"] == rebalances
    # m2 falls silent: gone 10 s (monotonic) after its last heartbeat, not before
    h.advance(5000)
    assert h.heartbeat("g", m1, gen) == 0
    h.advance(4999)
    assert m2 in h.group().members
    h.advance(1)
    assert m2 not in h.group().members and h.state() == "PreparingRebalance"
    # the group's state timestamp (written in GroupMetadata) is the stepped wall clock
    assert h.group().state_timestamp_ms == h.now


@STEPS
def test_classic_join_phase_ends_at_its_rebalance_timeout(step):
    h = Harness()
    (m1, m2), gen = h.stable_group(2, session=10_000, rebalance=30_000)
    leader = h.group().leader_id
    other = m2 if leader == m1 else m1
    rejoin = h.join("g", leader, session=10_000, rebalance=30_000)   # the leader asks again
    assert h.state() == "PreparingRebalance" and not rejoin.done
    h.step_wall(step)
    for _ in range(9):                                  # 27 s: the other heartbeats, never rejoins
        h.advance(3000)
        assert h.heartbeat("g", other, gen) == E.REBALANCE_IN_PROGRESS
    h.advance(2999)
    assert not rejoin.done and h.state() == "PreparingRebalance"
    h.advance(1)                                        # 30 s: the join phase ends without it
    r = rejoin.value
    assert (r.error, r.generation_id, r.member_id) == (0, gen + 1, leader)
    assert set(h.group().members) == {leader}


@STEPS
def test_classic_sync_phase_ends_at_its_rebalance_timeout(step):
    h = Harness()
    a = h.join_new("g", client="a", session=25_000, rebalance=20_000)
    b = h.join_new("g", client="b", session=25_000, rebalance=20_000)
    h.advance_until(lambda: a.done and b.done)          # the sync phase starts: 20 s
    gen, leader = a.value.generation_id, a.value.leader
    follower = b.value.member_id if leader == a.value.member_id else a.value.member_id
    waiting = h.sync("g", follower, gen)                # the leader heartbeats, never syncs
    h.step_wall(step)
    for _ in range(6):
        h.advance(3000)
        assert h.heartbeat("g", leader, gen) == 0
    h.advance(1999)
    assert not waiting.done and h.state() == "CompletingRebalance"
    h.advance(1)                                        # 20 s: the leader is removed
    assert waiting.value.error == E.REBALANCE_IN_PROGRESS
    assert leader not in h.group().members


@STEPS
def test_classic_initial_rebalance_delay_is_not_cut_short_or_held_back(step):
    h = Harness()                                       # group.initial.rebalance.delay.ms 3000
    slot = h.join_new("g")
    h.step_wall(step)
    h.advance(2999)
    assert not slot.done
    h.advance(1)
    assert slot.value.error == 0 and slot.value.generation_id == 1


# ------------------------------------------------------------------ consumer groups (KIP-848)
def _stable_pair(h: ConsumerHarness) -> dict[str, list[int]]:
    """A and B share topic t (2 partitions), reconciled; {member: its partitions}."""
    h.join("A", ["t"], rebalance_timeout=10_000)
    h.join("B", ["t"])
    g = h.group()
    a_target = sorted(g.target["A"][tid("t")])
    h.hb("A", h.ep("A"), owned={"t": [0, 1]})           # asked to revoke
    h.hb("A", h.ep("A"), owned={"t": a_target})         # revoked
    h.hb("B", h.ep("B"), owned={})                      # B gets the rest
    assert all(m.state is MemberState.STABLE for m in g.members.values())
    return {m: sorted(g.members[m].assigned[tid("t")]) for m in ("A", "B")}


@STEPS
def test_consumer_members_keep_their_epochs_and_a_silent_one_still_expires(step):
    h = ConsumerHarness({"t": 2})
    owned = _stable_pair(h)
    g = h.group()
    epochs = (g.group_epoch, h.ep("A"), h.ep("B"))
    h.step_wall(step)
    for _ in range(12):                                 # 60 s of heartbeats after the step
        h.advance(5000)
        for m in ("A", "B"):
            r = h.hb(m, h.ep(m), owned={"t": owned[m]})
            assert r.error == 0
    assert (g.group_epoch, h.ep("A"), h.ep("B")) == epochs
    assert h.mgr.counters["members_expired"] == 0
    # B falls silent: fenced 45 s (group.consumer.session.timeout.ms) after its last heartbeat
    for _ in range(8):
        h.advance(5000)
        h.hb("A", h.ep("A"), owned={"t": owned["A"]})
    h.advance(4999)
    assert "B" in g.members
    h.advance(1)
    assert "B" not in g.members and h.mgr.counters["members_expired"] == 1


@STEPS
def test_consumer_revocation_timeout_runs_on_the_monotonic_clock(step):
    h = ConsumerHarness({"t": 2})
    h.join("A", ["t"], rebalance_timeout=10_000)
    h.join("B", ["t"])
    h.hb("A", h.ep("A"), owned={"t": [0, 1]})           # asked to revoke: 10 s to do it
    g = h.group()
    assert g.members["A"].state is MemberState.UNREVOKED_PARTITIONS
    h.step_wall(step)
    ea, eb = h.ep("A"), h.ep("B")
    for _ in range(3):                                  # keeps heartbeating, never revokes
        h.advance(3000)
        assert h.hb("A", ea, owned={"t": [0, 1]}).error == 0
        h.hb("B", eb, owned={})
    h.advance(999)
    assert "A" in g.members
    h.advance(1)                                        # 10 s after the request to revoke
    assert "A" not in g.members


def test_consumer_assignment_interval_is_measured_on_the_wall_clock():
    """As Kafka's ``canComputeNextTargetAssignment``: the interval runs from the timestamp
    the last target assignment's record carries, against the wall clock."""
    h = ConsumerHarness({"t": 4}, consumer_assignment_interval_ms=60_000)
    h.join("A", ["t"])                                  # first assignment, at wall time T
    r = h.join("B", ["t"])                              # within the interval: batched
    assert names(r.assignment) == {} and h.group().assignment_epoch < h.group().group_epoch
    h.step_wall(60_000)                                 # no time passed, the wall says 60 s
    r = h.hb("B", h.ep("B"), owned={})
    assert h.group().assignment_epoch == h.group().group_epoch


# ------------------------------------------------------------------ share groups (KIP-932)
def _share_hb(h: ConsumerHarness, member: str, epoch: int, topics=None):
    req = ShareHeartbeat("g", member, epoch, subscribed_topic_names=topics)
    return h.drive(h.mgr.share_group_heartbeat(req, h.now, h.mono))


@STEPS
def test_share_members_keep_their_epochs_and_a_silent_one_still_expires(step):
    h = ConsumerHarness({"t": 2})
    a = _share_hb(h, "a", 0, ["t"])
    b = _share_hb(h, "b", 0, ["t"])
    h.advance(1000)                                     # the assignment batch is due
    a = _share_hb(h, "a", a.member_epoch)
    b = _share_hb(h, "b", b.member_epoch)
    g = h.group()
    assert a.member_epoch == b.member_epoch == g.assignment_epoch == g.group_epoch
    h.step_wall(step)
    for _ in range(12):                                 # 60 s of heartbeats after the step
        h.advance(5000)
        assert _share_hb(h, "a", a.member_epoch).error == 0
        assert _share_hb(h, "b", b.member_epoch).error == 0
    assert set(g.members) == {"a", "b"} and g.group_epoch == a.member_epoch
    assert h.mgr.counters["members_expired"] == 0
    # b falls silent: removed 45 s (group.share.session.timeout.ms) after its last heartbeat
    for _ in range(8):
        h.advance(5000)
        _share_hb(h, "a", a.member_epoch)
    h.advance(4999)
    assert "b" in g.members
    h.advance(1)
    assert set(g.members) == {"a"} and h.mgr.counters["members_expired"] == 1


# ------------------------------------------------------------------ offsets retention
def test_offsets_retention_counts_on_the_wall_clock():
    """Kafka compares the commit timestamp with ``time.milliseconds()``: a forward step
    past the retention expires the offsets at the next check (whose period runs on the
    monotonic clock); after a backward step they outlive the retention by the step."""
    cfg = GroupConfig(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1000)
    h = Harness(config=cfg)
    h.mgr.schedule_offsets_expiry(h.mono)
    h.commit("fwd", {("t", 0): 1})
    h.advance(1000)
    h.step_wall(60_000)
    assert h.fetch("fwd", [("t", [0])])[("t", 0)][0] == 1
    h.advance(999)
    assert h.fetch("fwd", [("t", [0])])[("t", 0)][0] == 1      # the next check is 1 s away
    h.advance(1)
    assert h.fetch("fwd", [("t", [0])])[("t", 0)][0] == -1
    assert h.group("fwd") is None

    h.commit("back", {("t", 0): 2})
    h.step_wall(-HOUR)
    h.advance(61_000)                                   # retention passed on the monotonic clock
    assert h.fetch("back", [("t", [0])])[("t", 0)][0] == 2
    h.advance(HOUR)                                     # ... and then on the wall clock too
    assert h.fetch("back", [("t", [0])])[("t", 0)][0] == -1
