"""The streams group protocol (KIP-1071) of the pure coordinator shard, scripted with a mock
clock: topology registration and configuration (missing source topics, internal topics to
create), the sticky task assignor, revocation before assignment, fencing, endpoints for
interactive queries, session timeouts, and replay of the records into a fresh shard."""
from __future__ import annotations

import pytest

from kbroker.group.consumer.topics import TopicsView
from kbroker.group.manager import GroupManager
from kbroker.group.streams import records as srec
from kbroker.group.streams.assignor import AssignorMember, assign
from kbroker.group.streams.config import StreamsGroupConfig
from kbroker.group.streams.protocol import StreamsHeartbeatRequest
from kbroker.group.streams.topology import (ASSIGNMENT_DELAYED, MISSING_INTERNAL_TOPICS, MISSING_SOURCE_TOPICS,
                                            STALE_TOPOLOGY, Subtopology, TopicInfo, Topology)
from kbroker.wire.error_codes import ErrorCode as E

from tests.group.consumer_harness import ConsumerHarness

# word count: subtopology 0 reads "input" and writes the repartition topic; subtopology 1
# reads it and keeps a store with a changelog
REPART = "app-counts-repartition"
CHANGELOG = "app-counts-changelog"
TOPO = Topology(1, (
    Subtopology("0", source_topics=("input",), repartition_sink_topics=(REPART,)),
    Subtopology("1", repartition_source_topics=(TopicInfo(REPART),),
                state_changelog_topics=(TopicInfo(CHANGELOG),)),
))


class StreamsHarness(ConsumerHarness):
    def __init__(self, topics=None, standby=0, delay=0, interval=0, **kw):
        super().__init__(topics, **kw)
        self.mgr.streams.streams_config = StreamsGroupConfig(num_standby_replicas=standby,
                                                             initial_rebalance_delay_ms=delay,
                                                             assignment_interval_ms=interval)

    def shb(self, member, epoch, *, topology=None, active=None, standby=None, process=None,
            endpoint=None, endpoint_epoch=0, group="g", shutdown=False):
        join = epoch == 0
        req = StreamsHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch,
            endpoint_information_epoch=endpoint_epoch,
            rebalance_timeout_ms=60000 if join else -1,
            topology=(topology or TOPO) if join else topology,
            active={} if join else active, standby={} if join else standby,
            warmup={} if join else ({} if active is not None else None),
            process_id=(process or "p-" + member) if join else None,
            user_endpoint=endpoint, client_tags=[] if join else None,
            shutdown_application=shutdown, client_id="c-" + member, client_host="/127.0.0.1")
        return self.drive(self.mgr.streams_group_heartbeat(req, self.now, self.mono))

    def group(self, gid="g"):
        return self.mgr.groups[gid]


def active_of(resp):
    return {s: sorted(ps) for s, ps in resp.tasks.active.items()} if resp.tasks else None


def all_topics():
    return {"input": 4, REPART: 4, CHANGELOG: 4}


def test_missing_source_topics_then_internal_topics_then_tasks():
    h = StreamsHarness({})
    r = h.shb("a", 0)
    assert r.error == 0 and r.member_epoch == 2          # a new group: epoch 0 -> 2
    assert [c for c, _ in r.status] == [MISSING_SOURCE_TOPICS]
    assert r.tasks is not None and r.tasks.is_empty()
    assert h.group().state_name() == "NotReady"
    h.set_topic("input", 4)
    r = h.shb("a", r.member_epoch)
    assert [c for c, _ in r.status] == [MISSING_INTERNAL_TOPICS]
    assert sorted((t.name, t.partitions) for t in r.internal_topics_to_create) == [
        (CHANGELOG, 4), (REPART, 4)]
    h.set_topic(REPART, 4)
    h.set_topic(CHANGELOG, 4)
    r = h.shb("a", r.member_epoch)
    assert r.status == [] and r.member_epoch == 4
    assert active_of(r) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert h.group().state_name() == "Stable"


def test_invalid_requests_and_topology():
    h = StreamsHarness(all_topics())
    req = StreamsHeartbeatRequest(group_id="g", member_id="", member_epoch=0)
    assert h.drive(h.mgr.streams_group_heartbeat(req, h.now)).error == E.INVALID_REQUEST
    bad = Topology(1, (Subtopology("0", source_topics=("input",)), Subtopology("0", source_topics=("x",))))
    assert h.shb("a", 0, topology=bad).error == E.STREAMS_INVALID_TOPOLOGY
    assert "g" not in h.mgr.groups
    assert h.shb("a", 5).error == E.UNKNOWN_MEMBER_ID or "g" not in h.mgr.groups


def test_second_member_revocation_before_assignment():
    h = StreamsHarness(all_topics())
    a = h.shb("a", 0)
    assert active_of(a) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    b = h.shb("b", 0)
    assert b.member_epoch == 3
    # b's target tasks are still held by a: nothing yet
    assert b.tasks.is_empty()
    # a is asked to give up half of its tasks, at its old epoch
    a2 = h.shb("a", a.member_epoch, active={"0": {0, 1, 2, 3}, "1": {0, 1, 2, 3}}, standby={})
    assert a2.member_epoch == a.member_epoch
    kept = {s: set(ps) for s, ps in a2.tasks.active.items()}
    assert sum(len(ps) for ps in kept.values()) == 4
    # a confirms the revocation, moves to epoch 2; b then gets the released tasks
    a3 = h.shb("a", a2.member_epoch, active=kept, standby={})
    assert a3.member_epoch == 3
    b2 = h.shb("b", b.member_epoch, active={}, standby={})
    got = {(s, p) for s, ps in b2.tasks.active.items() for p in ps}
    mine = {(s, p) for s, ps in kept.items() for p in ps}
    assert len(got) == 4 and not (got & mine)
    assert h.group().state_name() == "Stable"


def test_fencing_and_session_timeout_moves_tasks():
    h = StreamsHarness(all_topics())
    a = h.shb("a", 0)
    assert h.shb("a", a.member_epoch + 5, active={}, standby={}).error == E.FENCED_MEMBER_EPOCH
    b = h.shb("b", 0)
    # a stops heartbeating: after the session timeout its tasks go to b
    for _ in range(12):
        h.advance(5000)
        b = h.shb("b", b.member_epoch, active={s: set(ps) for s, ps in (b.tasks.active.items() if b.tasks else [])},
                  standby={})
    assert "a" not in h.group().members
    b = h.shb("b", b.member_epoch, active={}, standby={})
    assert active_of(b) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert h.shb("a", a.member_epoch, active={}, standby={}).error == E.UNKNOWN_MEMBER_ID


def test_leave_reassigns_and_topology_updates():
    h = StreamsHarness(all_topics())
    h.shb("a", 0)
    b = h.shb("b", 0)
    r = h.drive(h.mgr.streams_group_heartbeat(
        StreamsHeartbeatRequest(group_id="g", member_id="a", member_epoch=-1), h.now))
    assert r.error == 0 and r.member_epoch == -1
    # Kafka 4.3 refuses another topology while the group has members ...
    newer = Topology(2, TOPO.subtopologies[:1])
    c = h.shb("c", 0, topology=newer)
    assert (c.error, c.message) == (E.INVALID_REQUEST, "Topology updates are not supported yet.")
    b = h.shb("b", b.member_epoch, active={}, standby={})
    assert active_of(b) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    # ... and an empty group takes the new one
    h.drive(h.mgr.streams_group_heartbeat(
        StreamsHeartbeatRequest(group_id="g", member_id="b", member_epoch=-1), h.now))
    c = h.shb("c", 0, topology=newer)
    assert c.error == 0 and h.group().topology.epoch == 2
    assert active_of(c) == {"0": [0, 1, 2, 3]}
    assert STALE_TOPOLOGY not in [s for s, _ in c.status]


def test_endpoints_for_interactive_queries():
    h = StreamsHarness(all_topics())
    a = h.shb("a", 0, endpoint=("hosta", 7070))
    assert a.partitions_by_endpoint is not None
    (ep, active, standby), = a.partitions_by_endpoint
    assert ep == ("hosta", 7070)
    assert dict(active) == {"input": [0, 1, 2, 3], REPART: [0, 1, 2, 3]}
    again = h.shb("a", a.member_epoch, active={}, standby={}, endpoint_epoch=a.endpoint_information_epoch)
    assert again.partitions_by_endpoint is None


def test_standby_tasks_on_other_processes():
    h = StreamsHarness(all_topics(), standby=1)
    a = h.shb("a", 0)
    b = h.shb("b", 0)
    for _ in range(3):
        a = h.shb("a", a.member_epoch, active={s: set(p) for s, p in h.group().members["a"].assigned.active.items()},
                  standby={s: set(p) for s, p in h.group().members["a"].assigned.standby.items()})
        b = h.shb("b", b.member_epoch, active={s: set(p) for s, p in h.group().members["b"].assigned.active.items()},
                  standby={s: set(p) for s, p in h.group().members["b"].assigned.standby.items()})
    g = h.group()
    # Kafka 4.4: standby tasks only for the stateful subtopology ("1" keeps a store)
    for x, y in (("a", "b"), ("b", "a")):
        act = {(s, p) for s, ps in g.members[x].assigned.active.items() for p in ps}
        stb = {(s, p) for s, ps in g.members[y].assigned.standby.items() for p in ps}
        assert len(act) == 4 and stb == {t for t in act if t[0] == "1"}


@pytest.mark.parametrize("n_members,n_tasks,standby", [(1, 8, 0), (3, 8, 1), (5, 3, 2), (4, 16, 1)])
def test_assignor_balance_and_stickiness(n_members, n_tasks, standby):
    members = [AssignorMember(f"m{i}", f"p{i}") for i in range(n_members)]
    out = assign({"0": n_tasks}, members, standby)
    actives = [t for m in out.values() for t in m.active]
    assert sorted(actives) == [("0", p) for p in range(n_tasks)]
    sizes = [len(m.active) for m in out.values()]
    assert max(sizes) - min(sizes) <= 1
    for task in actives:
        holders = [mid for mid, m in out.items() if task in m.standby]
        owner = next(mid for mid, m in out.items() if task in m.active)
        assert owner not in holders and len(holders) == min(standby, n_members - 1)
    # sticky: the same members with their tasks keep them
    again = assign({"0": n_tasks}, [AssignorMember(m.member_id, m.process_id, frozenset(out[m.member_id].active))
                                    for m in members], standby)
    assert {k: v.active for k, v in again.items()} == {k: v.active for k, v in out.items()}


def test_records_replay_into_a_fresh_shard():
    h = StreamsHarness(all_topics())
    a = h.shb("a", 0, endpoint=("h", 1))
    h.shb("b", 0)
    h.shb("a", a.member_epoch, active={s: set(p) for s, p in a.tasks.active.items()}, standby={})
    types = {r.parsed_key.record_type for r in h.log if isinstance(r.parsed_key, srec.StreamsKey)}
    assert types == {17, 19, 20, 21, 22, 23}
    fresh = GroupManager(h.config)
    fresh.set_topics(TopicsView({}))
    fresh.begin_load(0)
    for r in h.log:
        fresh.replay(r.key, r.value)
    fresh.complete_load(0, h.now)
    g0, g1 = h.group(), fresh.groups["g"]
    assert (g1.group_epoch, g1.assignment_epoch, g1.topology) == (g0.group_epoch, g0.assignment_epoch, g0.topology)
    assert g1.members == g0.members and g1.target == g0.target
    listed = fresh.list_groups_typed()
    assert [(x.group_id, x.group_type, x.protocol_type) for x in listed] == [("g", "streams", "streams")]


def test_initial_rebalance_delay_assigns_members_started_together():
    h = StreamsHarness(all_topics(), delay=3000)
    a = h.shb("a", 0)
    assert (a.member_epoch, a.tasks.is_empty()) == (1, True)
    assert [c for c, _ in a.status] == [ASSIGNMENT_DELAYED]
    h.advance(1000)
    b = h.shb("b", 0)
    assert (b.member_epoch, b.tasks.is_empty()) == (2, True)    # still within a's delay
    assert h.group().state_name() == "Assigning"
    h.advance(2000)                                             # the delay ends: one assignment
    a = h.shb("a", a.member_epoch, active={}, standby={})
    b = h.shb("b", b.member_epoch, active={}, standby={})
    assert a.member_epoch == b.member_epoch == h.group().assignment_epoch == 3
    got_a = {(s, p) for s, ps in a.tasks.active.items() for p in ps}
    got_b = {(s, p) for s, ps in b.tasks.active.items() for p in ps}
    assert len(got_a) == len(got_b) == 4 and not (got_a & got_b)
    assert a.status == [] and h.group().state_name() == "Stable"


def _owned(h, mid):
    """What ``mid`` reports it owns: the tasks the coordinator holds for it."""
    m = h.group().members[mid]
    return ({s: set(p) for s, p in m.assigned.active.items()},
            {s: set(p) for s, p in m.assigned.standby.items()})


@pytest.mark.parametrize("step", [3_600_000, -3_600_000], ids=["forward", "back"])
def test_wall_clock_steps_neither_expire_members_nor_move_the_initial_delay(step):
    """The session, rebalance and initial-delay timers are on the monotonic clock, as
    Kafka's coordinator timers (tests/group/test_clock_steps.py for the other types)."""
    h = StreamsHarness(all_topics(), delay=3000)
    a = h.shb("a", 0)
    h.step_wall(step)
    h.advance(2999)
    a = h.shb("a", a.member_epoch, active={}, standby={})
    assert [c for c, _ in a.status] == [ASSIGNMENT_DELAYED] and a.tasks.is_empty()
    h.advance(1)                                        # 3 s after the join: assigned
    a = h.shb("a", a.member_epoch, active={}, standby={})
    assert a.status == [] and sum(len(p) for p in a.tasks.active.values()) == 8
    b = h.shb("b", 0)
    for _ in range(12):                                 # 60 s of heartbeats
        h.advance(5000)
        for mid in ("a", "b"):
            active, standby = _owned(h, mid)
            assert h.shb(mid, h.group().members[mid].member_epoch, active=active,
                         standby=standby).error == 0
    g = h.group()
    epochs = (g.group_epoch, g.members["a"].member_epoch, g.members["b"].member_epoch)
    assert g.state_name() == "Stable" and h.mgr.counters["members_expired"] == 0
    h.step_wall(-step)
    for _ in range(12):
        h.advance(5000)
        for mid in ("a", "b"):
            active, standby = _owned(h, mid)
            h.shb(mid, h.group().members[mid].member_epoch, active=active, standby=standby)
    assert (g.group_epoch, g.members["a"].member_epoch, g.members["b"].member_epoch) == epochs
    # b falls silent: fenced 45 s (group.streams.session.timeout.ms) after its last heartbeat
    for _ in range(8):
        h.advance(5000)
        active, standby = _owned(h, "a")
        h.shb("a", g.members["a"].member_epoch, active=active, standby=standby)
    h.advance(4999)
    assert "b" in g.members
    h.advance(1)
    assert set(g.members) == {"a"} and h.mgr.counters["members_expired"] == 1


def test_group_configs_standby_replicas_and_session_timeout():
    h = StreamsHarness(all_topics())
    a = h.shb("a", 0)
    b = h.shb("b", 0)
    epoch = h.group().group_epoch
    # GROUP config resource: one standby per task, a shorter session
    h.mgr.streams.group_configs = lambda gid: {"streams.num.standby.replicas": "1",
                                               "streams.session.timeout.ms": "10000"}
    for _ in range(4):
        for mid in ("a", "b"):
            m = h.group().members[mid]
            h.shb(mid, m.member_epoch, active={s: set(p) for s, p in m.assigned.active.items()},
                  standby={s: set(p) for s, p in m.assigned.standby.items()})
    g = h.group()
    assert g.group_epoch == epoch + 1                      # the assignment configs changed
    assert g.last_assignment_configs == (("num.standby.replicas", "1"),)
    # one standby of each of the four stateful tasks ("1"), on the other member
    assert sorted(p for m in g.members.values() for s, ps in m.assigned.standby.items()
                  for p in ps if s == "1") == [0, 1, 2, 3]
    assert all(set(m.assigned.standby) <= {"1"} for m in g.members.values())
    h.advance(10_001)                                      # neither heartbeats any more
    assert h.group().members == {} and h.group().state_name() == "Empty"


@pytest.mark.parametrize("topo,why", [
    (Topology(1, (Subtopology("", source_topics=("input",)),)), "empty"),
    (Topology(1, (Subtopology("0"),)), "no source topics"),
    (Topology(1, (Subtopology("0", source_topics=("input",), copartition_groups=(((0, 5), (), ()),)),)),
     "unknown topic"),
    (Topology(1, (Subtopology("0", source_topics=("input",),
                              repartition_source_topics=(TopicInfo("r", partitions=-3),)),)), "negative"),
    # Kafka 4.4: a changelog topic's partition count is the broker's to derive
    (Topology(1, (Subtopology("0", source_topics=("input",),
                              state_changelog_topics=(TopicInfo("c", partitions=3),)),)),
     "Changelog topic c must have an undefined partition count, but it is set to 3."),
])
def test_invalid_topologies_answer_streams_invalid_topology(topo, why):
    h = StreamsHarness(all_topics())
    r = h.shb("a", 0, topology=topo)
    assert r.error == E.STREAMS_INVALID_TOPOLOGY and why in r.message
    assert "g" not in h.mgr.groups and h.log == []


def test_request_checks_in_kafka_4_4_order():
    h = StreamsHarness(all_topics())
    # an unsupported feature is INVALID_REQUEST before anything else
    regex = Topology(1, (Subtopology("0", source_topic_regex=("in.*",)),))
    r = h.drive(h.mgr.streams_group_heartbeat(StreamsHeartbeatRequest(
        group_id="g", member_id="", member_epoch=0, topology=regex), h.now, h.mono))
    assert (r.error, r.message) == (E.INVALID_REQUEST,
                                    "Regular expressions for source topics are not supported yet.")
    a = h.shb("a", 0)
    for kw, message in [
        (dict(active={}, standby=None, warmup={}), "If one task-type is non-null, all must be non-null."),
        (dict(topology=TOPO), "Topology can only be provided when (re-)joining."),
    ]:
        req = StreamsHeartbeatRequest(group_id="g", member_id="a", member_epoch=a.member_epoch, **kw)
        r = h.drive(h.mgr.streams_group_heartbeat(req, h.now, h.mono))
        assert (r.error, r.message) == (E.INVALID_REQUEST, message)
    # a join may leave its task lists null, and name no process
    r = h.drive(h.mgr.streams_group_heartbeat(StreamsHeartbeatRequest(
        group_id="g", member_id="b", member_epoch=0, rebalance_timeout_ms=1000, topology=TOPO),
        h.now, h.mono))
    assert r.error == 0 and r.member_id == "b"


def test_underivable_repartition_topic_is_reported_not_assigned():
    # a cycle of repartition topics with no source topic: nothing to derive counts from
    topo = Topology(1, (Subtopology("0", repartition_source_topics=(TopicInfo("r1"),),
                                    repartition_sink_topics=("r2",)),
                        Subtopology("1", repartition_source_topics=(TopicInfo("r2"),),
                                    repartition_sink_topics=("r1",))))
    h = StreamsHarness({})
    r = h.shb("a", 0, topology=topo)
    assert r.error == 0 and [c for c, _ in r.status] == [MISSING_SOURCE_TOPICS]
    assert r.tasks.is_empty()


def test_assignment_interval_batches_target_assignments():
    h = StreamsHarness(all_topics(), interval=1000)
    a = h.shb("a", 0)
    assert h.group().assignment_epoch == 2
    b = h.shb("b", 0)                      # within the interval: no new target yet
    assert (h.group().group_epoch, h.group().assignment_epoch) == (3, 2)
    assert b.tasks.is_empty() and h.group().state_name() == "Assigning"
    h.advance(1000)
    b = h.shb("b", b.member_epoch, active={}, standby={})
    assert h.group().assignment_epoch == 3


def test_last_member_leaving_assigns_the_empty_group_at_its_new_epoch_with_timestamp_0():
    """Kafka 4.4 (``streamsGroupFenceMember``): the last member's leave puts the (empty)
    target assignment at the new group epoch with timestamp 0, so a member joining next is
    assigned at once even within the assignment interval (as for consumer groups, F-961)."""
    h = StreamsHarness(all_topics(), interval=1000)
    a = h.shb("a", 0)
    assert h.group().assignment_epoch == 2
    h.drive(h.mgr.streams_group_heartbeat(
        StreamsHeartbeatRequest(group_id="g", member_id="a", member_epoch=-1), h.now))
    g = h.group()
    assert (g.group_epoch, g.assignment_epoch, g.assignment_timestamp_ms) == (3, 3, 0)
    assert g.state_name() == "Empty"
    h.advance(100)                         # within the interval of the first assignment
    b = h.shb("b", 0)
    assert (g.group_epoch, g.assignment_epoch) == (4, 4)
    assert active_of(b) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert a.error == 0
