"""Warm-up tasks and restore progress of streams groups (KIP-1071's second part), scripted on
the pure coordinator shard: the task offsets members report (checked, kept, described, used
by the sticky assignor to place standby tasks), the reported tasks checked against the
topology, the reconciliation of replica roles, and — with ``kbroker.streams.warmup.tasks.enable``
— a stateful task that moves only once its new owner's warm-up task has caught up."""
from __future__ import annotations

from dataclasses import replace

from kbroker.group.streams.assignor import AssignorMember, assign
from kbroker.group.streams.protocol import StreamsHeartbeatRequest
from kbroker.group.streams.state import MemberState, StreamsGroupMember, TaskSet, reconcile
from kbroker.group.streams.warmup import TaskOffsets, refine
from kbroker.wire.error_codes import ErrorCode as E

from tests.streams.test_streams_protocol import TOPO, StreamsHarness, all_topics


class Harness(StreamsHarness):
    def __init__(self, warmups=0, **kw):
        super().__init__(all_topics(), **kw)
        cfg = self.mgr.streams.streams_config
        self.mgr.streams.streams_config = replace(
            cfg, warmup_tasks_enabled=warmups > 0, num_warmup_replicas=max(warmups, 0))

    def hb(self, member, *, join=False, offsets=None, ends=None, version=1, owned=True, **kw):
        m = self.group().members.get(member) if "g" in self.mgr.groups else None
        held = m.assigned if (m is not None and owned) else TaskSet()
        req = StreamsHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=0 if join else m.member_epoch,
            rebalance_timeout_ms=60000 if join else -1, topology=TOPO if join else None,
            active=kw.get("active", {} if join else dict(held.active)),
            standby=kw.get("standby", {} if join else dict(held.standby)),
            warmup=kw.get("warmup", {} if join else dict(held.warmup)),
            process_id="p-" + member if join else None, client_tags=[] if join else None,
            user_endpoint=("127.0.0.1", 7000 + ord(member[0])) if join else None,
            task_offsets=offsets, task_end_offsets=ends, api_version=version,
            client_id="c", client_host="/127.0.0.1")
        return self.drive(self.mgr.streams_group_heartbeat(req, self.now, self.mono))

    def settle(self, *members):
        for _ in range(4):
            for mid in members:
                self.hb(mid)

    def tasks(self, member, kind):
        ts = getattr(self.group().members[member].assigned, kind)
        return sorted((s, p) for s, ps in ts.items() for p in ps)


def test_task_offsets_are_checked_kept_and_described():
    h = Harness()
    r = h.hb("a", join=True, offsets=[("1", 0, 5), ("1", 0, 6)], ends=[])
    assert (r.error, r.message) == (E.INVALID_REQUEST, "Task offsets contain a duplicate entry "
                                    "for subtopology 1 and partition 0.")
    assert "g" not in h.mgr.groups or not h.group().members
    r = h.hb("a", join=True, offsets=[("1", 2, 7), ("1", 0, 5)], ends=[("1", 0, 9)])
    assert r.error == 0
    # a null list keeps the last report, a list replaces it
    h.hb("a", ends=[("1", 0, 12)])
    d = h.mgr.streams.streams_describe("g")
    assert d.task_offsets["a"] == TaskOffsets({("1", 2): 7, ("1", 0): 5}, {("1", 0): 12})
    # tasks that are not in the topology
    r = h.hb("a", active={"9": {0}})
    assert (r.error, r.message) == (E.INVALID_REQUEST, "Subtopology 9 does not exist in the topology.")
    r = h.hb("a", standby={"1": {4}})
    assert (r.error, r.message) == (E.INVALID_REQUEST, "Task 4 for subtopology 1 is invalid. "
                                    "Number of tasks for this subtopology: 4")
    # a member that leaves takes its report with it
    epoch = h.group().members["a"].member_epoch
    h.drive(h.mgr.streams_group_heartbeat(StreamsHeartbeatRequest(
        group_id="g", member_id="a", member_epoch=-1), h.now, h.mono))
    assert epoch and h.mgr.streams.streams_describe("g").task_offsets == {}


def test_standby_tasks_go_where_their_state_is():
    members = [AssignorMember("a", "pa", frozenset({("1", 0), ("1", 1)})),
               AssignorMember("b", "pb", offsets=((("1", 0), 10),)),
               AssignorMember("c", "pc", offsets=((("1", 0), 900), (("1", 1), 5)))]
    out = assign({"1": 2}, members, 1, stateful=frozenset({"1"}))
    holder = {t: mid for mid, m in out.items() for t in m.active}
    standby_of = {t: mid for mid, m in out.items() for t in m.standby}
    assert holder == {("1", 0): "a", ("1", 1): "b"}
    # 1-1 left a: a keeps its state as the standby (the previous holder first); 1-0's
    # standby goes to the member with the largest reported offset sum (c: 900, b: 10)
    assert standby_of == {("1", 0): "c", ("1", 1): "a"}
    # stateless subtopologies get no standby task
    out = assign({"0": 2}, members[:2], 1, stateful=frozenset({"1"}))
    assert all(not m.standby for m in out.values())


def test_replica_roles_change_without_revocation():
    m = StreamsGroupMember("a", member_epoch=3, previous_member_epoch=2,
                           assigned=TaskSet({"0": frozenset({0})}, {"1": frozenset({1})},
                                            {"1": frozenset({2})}))
    # the standby becomes a warm-up and the warm-up a standby, the active task a standby
    nxt = reconcile(m, target_epoch=4, target=TaskSet({}, {"0": {0}, "1": {2}}, {"1": {1}}),
                    active_owner=lambda s, p: "a" if (s, p) == ("0", 0) else None,
                    owned=TaskSet({"0": {0}}, {"1": {1}}, {"1": {2}}))
    assert nxt.state is MemberState.UNREVOKED_TASKS and nxt.member_epoch == 3
    assert (nxt.assigned.normalized(), nxt.pending_revocation.normalized()) == (
        TaskSet({}, {"0": frozenset({0}), "1": frozenset({2})}, {"1": frozenset({1})}),
        TaskSet({"0": frozenset({0})}, {}, {}))
    # a warm-up promoted to active stays a warm-up until the active task is released
    w = StreamsGroupMember("b", member_epoch=3, assigned=TaskSet({}, {}, {"1": frozenset({0})}))
    held = reconcile(w, target_epoch=4, target=TaskSet({"1": {0}}), active_owner=lambda s, p: "a",
                     owned=TaskSet({}, {}, {"1": {0}}))
    assert held.state is MemberState.UNRELEASED_TASKS
    assert held.assigned.normalized() == TaskSet({}, {}, {"1": frozenset({0})})
    got = reconcile(held, target_epoch=4, target=TaskSet({"1": {0}}), active_owner=lambda s, p: None,
                    owned=TaskSet({}, {}, {"1": {0}}))
    assert got.state is MemberState.STABLE
    assert got.assigned.normalized() == TaskSet({"1": frozenset({0})}, {}, {})


def test_refinement_stages_stateful_migrations_behind_warmups():
    a = StreamsGroupMember("a", process_id="p1", assigned=TaskSet({"0": {0}, "1": {0, 1, 2}}))
    b = StreamsGroupMember("b", process_id="p2")
    c = StreamsGroupMember("c", process_id="p1")
    target = {"a": TaskSet({"1": {0}}, {"1": {1}}), "b": TaskSet({"0": {0}, "1": {1, 2}}),
              "c": TaskSet()}
    members = {"a": a, "b": b, "c": c}
    out = refine(target, members, {}, frozenset({"1"}), 1, 100)
    # the stateless task moves at once; the stateful ones stay on a, which loses its standby;
    # one warm-up task (the budget) for b
    assert out["a"].normalized() == TaskSet({"1": frozenset({0, 1, 2})})
    assert out["b"].normalized() == TaskSet({"0": frozenset({0})}, {}, {"1": frozenset({1})})
    # b has caught up on 1-1 (lag 50 <= 100): it moves, and 1-2 gets the warm-up
    reports = {"b": TaskOffsets({("1", 1): 950}, {("1", 1): 1000})}
    out = refine(target, members, reports, frozenset({"1"}), 1, 100)
    assert out["b"].normalized() == TaskSet({"0": frozenset({0}), "1": frozenset({1})}, {},
                                            {"1": frozenset({2})})
    # a move inside one process needs no warm-up
    target2 = {"a": TaskSet({"1": {0}}), "c": TaskSet({"0": {0}, "1": {1, 2}}), "b": TaskSet()}
    out = refine(target2, members, {}, frozenset({"1"}), 2, 100)
    assert out["c"].normalized() == target2["c"].normalized()
    # no warm-up budget: the target as it is
    assert refine(target, members, {}, frozenset({"1"}), 0, 100) == {
        k: v.normalized() for k, v in target.items()}


def test_kafka_4_4_hands_out_no_warmup_task_by_default():
    h = Harness()
    h.hb("a", join=True)
    h.hb("b", join=True)
    h.settle("a", "b")
    assert h.group().state_name() == "Stable"
    assert h.tasks("b", "warmup") == [] and len(h.tasks("b", "active")) == 4


def test_a_stateful_task_moves_once_its_warmup_has_caught_up():
    h = Harness(warmups=2)
    h.hb("a", join=True)
    assert len(h.tasks("a", "active")) == 8
    h.hb("b", join=True)
    h.settle("a", "b")
    g = h.group()
    assert g.state_name() == "Stable"
    # the target gives b the four stateful tasks; a keeps running them, b warms two up
    assert sorted(t for ts in [g.target["b"].active] for s, ps in ts.items() for t in
                  [(s, p) for p in ps]) == [("1", 0), ("1", 1), ("1", 2), ("1", 3)]
    assert len(h.tasks("a", "active")) == 8 and h.tasks("b", "active") == []
    assert h.tasks("b", "warmup") == [("1", 0), ("1", 1)]
    # interactive queries: b's warm-up tasks count with its standby partitions
    r = h.hb("b")
    by_port = {ep[1]: (act, stb) for ep, act, stb in r.partitions_by_endpoint}
    assert by_port[7000 + ord("b")] == ([], [("app-counts-repartition", [0, 1])])
    epoch = g.group_epoch
    # b's restore of 1-0 is far behind: nothing moves
    h.hb("b", offsets=[("1", 0, 10), ("1", 1, 0)], ends=[("1", 0, 50_000), ("1", 1, 50_000)])
    assert g.group_epoch == epoch and h.tasks("b", "active") == []
    # it catches up: a new group epoch, a gives 1-0 up, b runs it, 1-2 is warmed up next
    h.hb("b", offsets=[("1", 0, 45_000), ("1", 1, 0)])
    assert g.group_epoch == epoch + 1 and g.assignment_epoch == epoch + 1
    assert h.tasks("b", "warmup") == [("1", 0), ("1", 1), ("1", 2)]   # 1-0 until granted
    h.settle("a", "b")
    assert g.state_name() == "Stable"
    assert ("1", 0) not in h.tasks("a", "active") and h.tasks("b", "active") == [("1", 0)]
    assert h.tasks("b", "warmup") == [("1", 1), ("1", 2)]
    # describe: the target is the assignor's, the current assignment the refined one
    d = {m.member_id: (m, t) for m, t in h.mgr.streams.streams_describe("g").members}
    assert len(d["b"][1].active["1"]) == 4 and d["b"][0].assigned.warmup == {"1": frozenset({1, 2})}


def test_members_without_progress_reports_get_their_tasks_at_once():
    h = Harness(warmups=2)
    h.hb("a", join=True)
    h.hb("b", join=True, version=0)
    for _ in range(4):
        h.hb("a")
        h.hb("b", version=0)
    assert h.tasks("b", "warmup") == [] and len(h.tasks("b", "active")) == 4
