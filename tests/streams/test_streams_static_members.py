"""Static and rejoining members of streams groups (KIP-1071's second part, Kafka 4.4's
``getOrMaybeCreate{Dynamic,Static}StreamsGroupMember``), scripted on the pure coordinator
shard: a live instance id refuses every join, also one under its own member id (as KIP-848's
consumer groups do); a member that left with epoch -2 is taken over; a dynamic member
rejoining at epoch 0 under its member id keeps its tasks; ``group.streams.max.size`` only
refuses joins of new members."""
from __future__ import annotations

from dataclasses import replace

from kbroker.group.streams.protocol import StreamsHeartbeatRequest
from kbroker.wire.error_codes import ErrorCode as E

from tests.streams.test_streams_protocol import TOPO, StreamsHarness, active_of, all_topics


class StaticHarness(StreamsHarness):
    def hb(self, member, epoch, instance=None, **kw):
        join = epoch == 0
        req = StreamsHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=epoch, instance_id=instance,
            rebalance_timeout_ms=60000 if join else -1, topology=TOPO if join else None,
            active={} if join else kw.get("active"), standby={} if join else kw.get("standby"),
            warmup={} if join else kw.get("warmup"),
            process_id=("p-" + (instance or member)) if join else None,
            client_tags=[] if join else None, client_id="c", client_host="/127.0.0.1")
        return self.drive(self.mgr.streams_group_heartbeat(req, self.now, self.mono))


def owned(resp):
    return {s: set(ps) for s, ps in resp.tasks.active.items()}


def test_a_live_instance_id_refuses_joins_even_under_its_own_member_id():
    h = StaticHarness(all_topics())
    a = h.hb("a", 0, "i-a")
    assert a.error == 0 and active_of(a) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    for mid in ("a", "a2"):
        r = h.hb(mid, 0, "i-a")
        assert (r.error, r.message) == (
            E.UNRELEASED_INSTANCE_ID, f"Static member {mid} with instance id i-a cannot join the "
            "group because the instance id is owned by a member.")
    # heartbeats: an unknown instance id, a member id that does not hold it
    assert (h.hb("x", 3, "i-x").error, h.hb("x", 3, "i-x").message) == (
        E.UNKNOWN_MEMBER_ID, "Instance id i-x is unknown.")
    assert h.hb("a2", a.member_epoch, "i-a").error == E.FENCED_INSTANCE_ID
    assert h.group().members["a"].member_epoch == a.member_epoch


def test_a_member_that_left_temporarily_is_taken_over_under_either_member_id():
    h = StaticHarness(all_topics())
    a = h.hb("a", 0, "i-a")
    epoch = h.group().group_epoch
    assert h.hb("a", -2, "i-a").member_epoch == -2
    # the same member id rejoins: it takes its tasks back at once, no new group epoch
    r = h.hb("a", 0, "i-a")
    assert r.error == 0 and active_of(r) == active_of(a)
    assert h.group().group_epoch == epoch and set(h.group().members) == {"a"}
    # and under a new member id after another temporary leave
    assert h.hb("a", -2, "i-a").member_epoch == -2
    r = h.hb("a-2", 0, "i-a")
    assert r.error == 0 and active_of(r) == active_of(a)
    assert set(h.group().members) == {"a-2"} and h.group().group_epoch == epoch
    assert h.hb("a", r.member_epoch, "i-a").error == E.FENCED_INSTANCE_ID


def test_a_dynamic_member_rejoining_under_its_id_keeps_its_tasks():
    h = StaticHarness(all_topics())
    a = h.hb("a", 0)
    epoch = h.group().group_epoch
    r = h.hb("a", 0)
    assert (r.error, r.member_epoch, active_of(r)) == (0, a.member_epoch, active_of(a))
    assert h.group().group_epoch == epoch


def test_max_size_refuses_new_members_only():
    h = StaticHarness(all_topics())
    h.mgr.streams.streams_config = replace(h.mgr.streams.streams_config, max_size=1)
    a = h.hb("a", 0, "i-a")
    r = h.hb("b", 0)
    assert (r.error, r.message) == (
        E.GROUP_MAX_SIZE_REACHED, "The streams group has reached its maximum capacity of 1 members.")
    # a member the group does not know is unknown, whatever the group's size
    assert h.hb("b", 3).error == E.UNKNOWN_MEMBER_ID
    # a static member coming back is no new member
    assert h.hb("a", -2, "i-a").member_epoch == -2
    r = h.hb("a-2", 0, "i-a")
    assert r.error == 0 and owned(r) == owned(a)


def test_metadata_changes_rebalance_dynamic_members_and_static_ones_only_for_assignors():
    h = StaticHarness(all_topics())
    h.hb("a", 0, "i-a")
    h.hb("b", 0)
    g = h.group()

    def moved_endpoint(member, instance, port):
        m = g.members[member]
        return h.drive(h.mgr.streams_group_heartbeat(StreamsHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=m.member_epoch, instance_id=instance,
            user_endpoint=("127.0.0.1", port)), h.now, h.mono))

    epoch = g.group_epoch
    assert moved_endpoint("a", "i-a", 7001).error == 0
    assert g.group_epoch == epoch and g.members["a"].user_endpoint == ("127.0.0.1", 7001)
    assert moved_endpoint("b", None, 7002).error == 0
    assert g.group_epoch == epoch + 1
