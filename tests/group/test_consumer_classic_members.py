"""Classic members inside consumer groups and the online migration (KIP-848 upgrade and
downgrade), scripted against the pure coordinator shard with a mock clock: classic
JoinGroup/SyncGroup/Heartbeat/LeaveGroup next to ConsumerGroupHeartbeats in one group,
the records each step writes, and replay of those records into a fresh shard."""
from __future__ import annotations

import pytest

from kbroker.group.classic.protocol import JoinRequest
from kbroker.group.classic.state import ClassicGroup, GroupState
from kbroker.group.consumer import records as crec
from kbroker.group.consumer.classic_members import (decode_assignment, decode_subscription,
                                                    encode_assignment)
from kbroker.group.consumer.state import ConsumerGroup
from kbroker.group.manager import GroupManager
from kbroker.group.records import GroupKey
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from .consumer_harness import ConsumerHarness, names


def subscription(topics, owned=(), version=1) -> bytes:
    cls = messages.get("ConsumerProtocolSubscription")
    v = cls(topics=list(topics), user_data=None,
            owned_partitions=[cls.TopicPartition(topic=t, partitions=list(ps)) for t, ps in owned])
    return version.to_bytes(2, "big") + v.encode(version)


class Slot:
    def __init__(self):
        self.replies = []

    @property
    def value(self):
        assert len(self.replies) == 1, self.replies
        return self.replies[0]


class Mixed(ConsumerHarness):
    """The consumer harness plus classic requests."""

    def drive(self, res):
        for s, reply in res.replies:
            s.replies.append(reply)
        response = res.response
        while res.records:
            err, self.fail_next_append = self.fail_next_append, 0
            if not err:
                self.log.extend(res.records)
            res = self.mgr.after_append(res, err, self.now)
            for s, reply in res.replies:
                s.replies.append(reply)
            if res.response is not None:
                response = res.response
        return response

    def cjoin(self, member="", topics=("t",), owned=(), *, group="g", instance=None,
              session=10000, rebalance=30000, version=9, protocols=("range", "roundrobin"),
              park=False):
        slot = Slot()
        meta = subscription(topics, owned)
        req = JoinRequest(group, member, "consumer", [(p, meta) for p in protocols], session,
                          rebalance, instance, "classic-client", "/127.0.0.1", version)
        self.drive(self.mgr.join_group(req, slot, self.now))
        return slot if park else slot.value

    def cjoin_new(self, **kw):
        first = self.cjoin(**kw)
        assert first.error == E.MEMBER_ID_REQUIRED, first
        return self.cjoin(first.member_id, **kw)

    def csync(self, member, gen, *, group="g", pname=None, leader_assignments=()):
        slot = Slot()
        self.drive(self.mgr.sync_group(group, member, gen, None, "consumer", pname,
                                       list(leader_assignments), slot, self.now))
        return slot.value

    def chb(self, member, gen, group="g"):
        return self.drive(self.mgr.heartbeat(group, member, gen, None, self.now))

    def cleave(self, member, group="g"):
        return self.drive(self.mgr.leave_group(group, [(member, None)], self.now))

    def replayed(self) -> GroupManager:
        fresh = GroupManager(self.config)
        fresh.set_topics(self.mgr.consumer.topics)
        fresh.begin_load(0)
        for r in self.log:
            fresh.replay(r.key, r.value)
        return fresh


def assigned(sync_response) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in decode_assignment(sync_response.assignment)}


def test_subscription_and_assignment_codecs_round_trip():
    s = decode_subscription(subscription(["a", "b"], [("a", [1, 0])], version=1))
    assert (s.version, s.topics, s.owned) == (1, ["a", "b"], [("a", [1, 0])])
    assert decode_assignment(encode_assignment([("a", [2, 0])], 1)) == [("a", [0, 2])]
    assert decode_assignment(encode_assignment([("a", [1])], 0)) == [("a", [1])]


def test_classic_member_joins_consumer_group_and_gets_server_assignment():
    h = Mixed({"t": 4})
    r = h.join("A", ["t"])
    assert names(r.assignment) == {"t": [0, 1, 2, 3]}
    j = h.cjoin_new()
    assert j.error == 0 and j.protocol_type == "consumer" and j.protocol_name == "range"
    assert j.leader == "" and j.members == []          # a follower: the server assigns
    g = h.group()
    assert isinstance(g, ConsumerGroup) and j.generation_id == g.members[j.member_id].member_epoch
    # A still owns everything: the classic member waits for released partitions
    s = h.csync(j.member_id, j.generation_id, pname="range")
    assert s.error == 0 and assigned(s) == {}
    assert h.chb(j.member_id, j.generation_id) == 0     # waiting on unreleased partitions
    # A revokes, then the classic member is told to rejoin and gets its share
    r = h.hb("A", h.ep("A"), owned={"t": [0, 1, 2, 3]})
    kept = names(r.assignment)["t"]
    assert len(kept) == 2
    h.hb("A", h.ep("A"), owned={"t": kept})
    assert h.chb(j.member_id, j.generation_id) == E.REBALANCE_IN_PROGRESS
    j2 = h.cjoin(j.member_id)
    s = h.csync(j.member_id, j2.generation_id)
    assert sorted(assigned(s)["t"] + kept) == [0, 1, 2, 3]
    assert h.chb(j.member_id, j2.generation_id) == 0
    assert h.group().state_name() == "Stable"
    # ConsumerGroupDescribe tells the member types apart (KIP-1099)
    d = h.mgr.consumer_group_describe(["g"])[0]
    assert sorted(m.member_type for m in d.members) == [0, 1]


def test_classic_member_errors():
    h = Mixed({"t": 2})
    h.join("A", ["t"])
    j = h.cjoin_new()
    assert h.chb(j.member_id, j.generation_id + 5) == E.ILLEGAL_GENERATION
    assert h.chb("nobody", 1) == E.UNKNOWN_MEMBER_ID
    assert h.chb("A", h.ep("A")) == E.UNKNOWN_MEMBER_ID        # not a classic member
    assert h.csync(j.member_id, j.generation_id, pname="roundrobin").error == E.INCONSISTENT_GROUP_PROTOCOL
    slot = Slot()
    h.drive(h.mgr.join_group(JoinRequest("g", "", "connect", [("x", b"")], 10000, 30000,
                                         api_version=9), slot, h.now))
    assert slot.value.error == E.INCONSISTENT_GROUP_PROTOCOL
    # offset commits of a classic member use its generation
    assert h.drive(h.mgr.commit_offsets("g", j.member_id, j.generation_id, None,
                                        [("t", [(0, 1, -1, "")])], h.now, api_version=8)) \
        == [("t", [(0, 0)])]
    assert h.drive(h.mgr.commit_offsets("g", j.member_id, j.generation_id - 1, None,
                                        [("t", [(0, 1, -1, "")])], h.now, api_version=8)) \
        == [("t", [(0, E.ILLEGAL_GENERATION)])]


def test_classic_member_leave_and_session_timeout():
    h = Mixed({"t": 2})
    h.join("A", ["t"])
    j = h.cjoin_new(session=7000)
    epoch = h.group().group_epoch
    err, members = h.cleave(j.member_id)
    assert err == 0 and members == [(j.member_id, None, 0)]
    assert j.member_id not in h.group().members and h.group().group_epoch == epoch + 1
    j = h.cjoin_new(session=7000)
    h.csync(j.member_id, j.generation_id)
    for _ in range(3):                  # A keeps heartbeating, the classic member goes quiet
        h.advance(3000)
        h.hb("A", h.ep("A"), owned={"t": names(h.hb("A", h.ep("A")).assignment or {}).get("t", [])})
    assert j.member_id not in h.group().members


def classic_group(h: Mixed, n=2, topics=("t",)):
    """A Stable classic group of ``n`` members (the first is the leader and assigns)."""
    slots = [h.cjoin(version=3, topics=topics, park=True) for _ in range(n)]
    h.advance(10000)                   # the initial rebalance delay (extended once)
    g = h.group()
    assert isinstance(g, ClassicGroup)
    ids = [s.value for s in slots]
    joins = [h.mgr.groups["g"].members[m] for m in g.members]
    leader = g.leader_id
    parts = list(range(h.topics["t"]))
    plan = {m.member_id: encode_assignment([("t", parts[i::n])], 1) for i, m in enumerate(joins)}
    for m in joins:
        s = h.csync(m.member_id, g.generation_id,
                    leader_assignments=plan.items() if m.member_id == leader else ())
        if m.member_id == leader:
            assert s.error == 0
    assert g.state is GroupState.STABLE
    return g, plan, ids


def test_upgrade_converts_a_live_classic_group_with_kafkas_records():
    h = Mixed({"t": 4})
    g, plan, _ = classic_group(h)
    gen = g.generation_id
    mark = len(h.log)
    r = h.join("C", ["t"])
    assert r.error == 0
    c = h.group()
    assert isinstance(c, ConsumerGroup)
    written = h.log[mark:]
    assert isinstance(written[0].parsed_key, GroupKey) and written[0].value is None
    types = [w.parsed_key.record_type for w in written[1:8]]
    assert types == [crec.MEMBER_METADATA] * 2 + [crec.GROUP_METADATA] + \
        [crec.TARGET_ASSIGNMENT_MEMBER] * 2 + [crec.TARGET_ASSIGNMENT_METADATA] + [crec.CURRENT_MEMBER_ASSIGNMENT]
    # the classic members kept their assignment at epoch = generation; C's join bumped it
    assert c.group_epoch > gen and all(
        m.member_epoch == gen for mid, m in c.members.items() if mid != "C")
    # the classic members are told to rejoin; they give up partitions as the target moves
    for mid in plan:
        assert h.chb(mid, gen) == E.REBALANCE_IN_PROGRESS
    # the records replay into the same consumer group
    fresh = h.replayed()
    assert isinstance(fresh.groups["g"], ConsumerGroup)
    assert set(fresh.groups["g"].members) == set(c.members)


def test_upgrade_refused_when_policy_disallows():
    h = Mixed({"t": 2}, consumer_migration_policy="downgrade")
    classic_group(h)
    r = h.join("C", ["t"])
    assert r.error == E.GROUP_ID_NOT_FOUND
    assert isinstance(h.group(), ClassicGroup)


def roll_to_consumer_then_back(h: Mixed):
    g, plan, _ = classic_group(h)
    classic_ids = list(plan)
    h.join("C", ["t"])
    # every classic member rejoins (eager: owning nothing) and syncs
    for mid in classic_ids:
        j = h.cjoin(mid)
        h.csync(mid, j.generation_id)
    return classic_ids


def test_downgrade_when_the_last_consumer_member_leaves():
    h = Mixed({"t": 4})
    classic_ids = roll_to_consumer_then_back(h)
    c = h.group()
    epoch = c.group_epoch
    targets = {mid: sorted(ps) for mid in classic_ids
               for ps in [sum((sorted(v) for v in c.target[mid].values()), [])]}
    mark = len(h.log)
    r = h.hb("C", -1)
    assert r.error == 0
    g = h.group()
    assert isinstance(g, ClassicGroup)
    assert g.state is GroupState.PREPARING_REBALANCE and g.generation_id == epoch
    assert set(g.members) == set(classic_ids)
    for mid in classic_ids:
        assert decode_assignment(g.members[mid].assignment) == ([("t", targets[mid])]
                                                                if targets[mid] else [])
    written = h.log[mark:]
    assert isinstance(written[-1].parsed_key, GroupKey) and written[-1].value is not None
    assert all(not isinstance(w.parsed_key, GroupKey) and w.value is None for w in written[:-1])
    # the classic members rejoin and the group goes on as a classic group
    for mid in classic_ids:
        assert h.chb(mid, epoch) == E.REBALANCE_IN_PROGRESS
    fresh = h.replayed()
    assert isinstance(fresh.groups["g"], ClassicGroup) and set(fresh.groups["g"].members) == set(classic_ids)


@pytest.mark.parametrize("policy", ["upgrade", "disabled"])
def test_no_downgrade_when_policy_disallows(policy):
    h = Mixed({"t": 2}, consumer_migration_policy=policy)
    if policy == "disabled":
        h.join("C", ["t"])
        j = h.cjoin_new()
        h.hb("C", -1)
        g = h.group()
        assert isinstance(g, ConsumerGroup) and list(g.members) == [j.member_id]
        return
    roll_to_consumer_then_back(h)
    h.hb("C", -1)
    assert isinstance(h.group(), ConsumerGroup)


def test_failed_append_keeps_the_classic_group():
    h = Mixed({"t": 2})
    g, _, _ = classic_group(h)
    h.fail_next_append = E.NOT_LEADER_OR_FOLLOWER
    r = h.join("C", ["t"])
    assert r.error == E.NOT_COORDINATOR
    assert h.group() is g and isinstance(g, ClassicGroup)


def test_static_classic_member_rejoins_with_a_new_id_and_keeps_its_partitions():
    h = Mixed({"t": 2})
    h.join("A", ["t"])
    j = h.cjoin(instance="i-1", version=9)            # static: no MEMBER_ID_REQUIRED
    assert j.error == 0
    kept = names(h.hb("A", h.ep("A"), owned={"t": [0, 1]}).assignment)["t"]
    h.hb("A", h.ep("A"), owned={"t": kept})            # A released the other partition
    j = h.cjoin(j.member_id, instance="i-1")
    mine = assigned(h.csync(j.member_id, j.generation_id))
    assert mine and sorted(mine["t"] + kept) == [0, 1]
    # the instance restarts: a new member id takes over the old one's assignment at epoch 0
    j2 = h.cjoin(instance="i-1")
    g = h.group()
    assert j2.error == 0 and j2.member_id != j.member_id and j.member_id not in g.members
    assert g.static_member("i-1").member_id == j2.member_id
    assert assigned(h.csync(j2.member_id, j2.generation_id)) == mine
    # the old member id is fenced
    assert h.chb(j.member_id, j.generation_id) == E.UNKNOWN_MEMBER_ID


def test_downgrade_when_a_classic_static_member_replaces_the_last_consumer_member():
    h = Mixed({"t": 2})
    h.join("C", ["t"], instance="i-9")
    k = h.cjoin_new()
    h.hb("C", h.ep("C"), owned={"t": [0, 1]}, instance="i-9")
    c_target = sorted(sum((sorted(v) for v in h.group().target["C"].values()), []))
    j = h.cjoin(instance="i-9")               # the same instance, now a classic consumer
    g = h.group()
    assert isinstance(g, ClassicGroup) and g.state is GroupState.STABLE
    assert set(g.members) == {k.member_id, j.member_id} and "C" not in g.members
    assert j.error == 0 and j.generation_id == g.generation_id
    s = h.csync(j.member_id, j.generation_id)
    assert s.error == 0 and assigned(s) == ({"t": c_target} if c_target else {})
    fresh = h.replayed()
    assert isinstance(fresh.groups["g"], ClassicGroup)
    assert set(fresh.groups["g"].members) == {k.member_id, j.member_id}
