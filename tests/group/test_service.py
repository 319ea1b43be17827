"""The trio driver (GroupCoordinator) on trio's MockClock: parked joins complete when the
timer task fires, sessions expire at the exact trio time, records go through a
ReplicaManager-like append and come back on a restart, and a step of the wall clock moves
no timer (they run on the monotonic clock). The broker around it is a small
in-memory stand-in (the real one is exercised by tests/clients_groups)."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import trio
import trio.testing

from kbroker.group.manager import JoinRequest
from kbroker.group.service import OFFSETS_TOPIC, GroupCoordinator
from kbroker.wire import records as wire_records
from kbroker.wire.error_codes import ErrorCode as E


@dataclass
class FakeLog:
    batches_: list = field(default_factory=list)

    def batches(self):
        for b in self.batches_:
            yield wire_records.parse_header(b, 0), b


class AppendFailed(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.error_code = code


class FakeReplicas:
    def __init__(self, logs):
        self.logs = logs
        self.fail_with = None

    def get_partition(self, topic, p):
        return SimpleNamespace(log=self.logs.setdefault(p, FakeLog()))

    def append(self, topic, p, batch, **kw):
        assert topic == OFFSETS_TOPIC and kw.get("allow_internal")
        if self.fail_with is not None:
            raise AppendFailed(self.fail_with)
        self.logs.setdefault(p, FakeLog()).batches_.append(bytes(batch))
        return SimpleNamespace(last_offset=len(self.logs[p].batches_) - 1)

    async def wait_replicated(self, topic, p, required_offset, timeout_ms):
        return 0    # one node: replicated once appended


class FakeController:
    def __init__(self, broker):
        self.broker = broker

    async def maybe_create_topics(self, names):
        for n in names:
            parts = {i: SimpleNamespace(leader=1) for i in range(self.broker.num_partitions)}
            self.broker.metadata.topics[n] = SimpleNamespace(partitions=parts)
        return []


class FakeBroker:
    def __init__(self, logs=None, topic_exists=False, num_partitions=5, **config):
        self.num_partitions = num_partitions
        self.node_id = 1
        cfg = {"offsets.topic.num.partitions": num_partitions,
               "group.initial.rebalance.delay.ms": 3000, **config}
        self.config = SimpleNamespace(get=lambda k: cfg.get(k))
        self.metadata = SimpleNamespace(topics={})
        self.controller = FakeController(self)
        self.logs = {} if logs is None else logs
        self.replicas = FakeReplicas(self.logs)
        self.clock = SimpleNamespace(now_ms=lambda: int(trio.current_time() * 1000))
        if topic_exists:
            self.metadata.topics[OFFSETS_TOPIC] = SimpleNamespace(
                partitions={i: SimpleNamespace(leader=1) for i in range(num_partitions)})


def req(member_id="", client="c", session=10000):
    return JoinRequest(group_id="g", member_id=member_id, protocol_type="consumer",
                       protocols=[("range", b"m")], session_timeout_ms=session,
                       rebalance_timeout_ms=30000, client_id=client, api_version=9)


async def test_parked_joins_complete_on_the_mock_clock_and_sessions_expire(autojump_clock):
    broker = FakeBroker()
    gc = GroupCoordinator(broker)
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        # not created yet: NOT_COORDINATOR until FindCoordinator creates and loads it
        assert (await gc.join_group(req())).error == E.NOT_COORDINATOR
        assert await gc.ensure_offsets_topic() == 0
        first = await gc.join_group(req())
        assert first.error == E.MEMBER_ID_REQUIRED
        t0 = trio.current_time()
        results = {}

        async def join(name, mid):
            results[name] = (await gc.join_group(req(mid)), trio.current_time())
        nursery.start_soon(join, "a", first.member_id)
        await trio.testing.wait_all_tasks_blocked()
        assert "a" not in results
        await trio.sleep(3.5)
        r, t = results["a"]
        assert r.error == 0 and r.generation_id == 1 and abs((t - t0) - 3.0) <= 0.001
        s = await gc.sync_group("g", r.member_id, 1, None, None, None, [(r.member_id, b"A")])
        assert s.assignment == b"A"
        assert await gc.commit_offsets("g", r.member_id, 1, None, [("t", [(0, 42, -1, "meta")])]) \
            == [("t", [(0, 0)])]
        broker.replicas.fail_with = E.NOT_LEADER_OR_FOLLOWER
        assert await gc.commit_offsets("g", r.member_id, 1, None, [("t", [(0, 99, -1, "")])]) \
            == [("t", [(0, E.NOT_COORDINATOR)])]
        broker.replicas.fail_with = None
        # no heartbeats: the member is gone one session timeout after its sync
        t_sync = trio.current_time()
        await trio.sleep(9.999)
        assert await gc.heartbeat("g", r.member_id, 1, None) == 0
        await trio.sleep(10.001)
        assert await gc.heartbeat("g", r.member_id, 1, None) == E.UNKNOWN_MEMBER_ID
        assert trio.current_time() - t_sync > 10
        assert gc.statistics()["members_expired"] == 1
        gc.close()
        nursery.cancel_scope.cancel()

    # a new coordinator over the same log sees the offsets (and the Empty group)
    broker2 = FakeBroker(logs=broker.logs, topic_exists=True)
    gc2 = GroupCoordinator(broker2)
    async with trio.open_nursery() as nursery:
        await gc2.start(nursery)
        err, res = await gc2.fetch_offsets("g", None)
        assert res == [("t", [(0, 42, -1, "meta", 0)])]
        assert [g[0] for g in await gc2.list_groups()] == ["g"]
        gc2.close()
        nursery.cancel_scope.cancel()


async def test_close_answers_parked_requests(autojump_clock):
    broker = FakeBroker(topic_exists=True)
    gc = GroupCoordinator(broker)
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        first = await gc.join_group(req())
        out = []

        async def join():
            out.append(await gc.join_group(req(first.member_id)))
        nursery.start_soon(join)
        await trio.testing.wait_all_tasks_blocked()
        gc.close()
        await trio.testing.wait_all_tasks_blocked()
        assert out and out[0].error == E.NOT_COORDINATOR
        nursery.cancel_scope.cancel()


class GatedReplicas(FakeReplicas):
    """``wait_replicated`` of a gated partition blocks until the test opens the gate (a
    follower still in the ISR that does not fetch); other partitions replicate at once."""

    def __init__(self, logs):
        super().__init__(logs)
        self.gates: dict[int, trio.Event] = {}
        self.waiting: list[tuple[int, int]] = []

    async def wait_replicated(self, topic, p, required_offset, timeout_ms):
        gate = self.gates.get(p)
        if gate is not None:
            self.waiting.append((p, required_offset))
            await gate.wait()
        return 0


def groups_on_distinct_partitions(gc, n=2):
    out, seen = [], set()
    for i in range(100):
        g = f"grp-{i}"
        p = gc.manager.partition_for(g)
        if p not in seen:
            seen.add(p)
            out.append((g, p))
            if len(out) == n:
                return out
    raise AssertionError("no groups on distinct partitions")


async def test_a_commit_waiting_for_replication_does_not_stall_other_groups(autojump_clock):
    """The lock covers the append, not the wait for the ISR: while group A's commit waits
    for replication, group B (another __consumer_offsets partition) commits and heartbeats;
    A's commit is answered -- and its offset becomes visible -- only once replicated, and
    two commits of one partition apply in the order they were appended."""
    broker = FakeBroker(topic_exists=True)
    broker.replicas = GatedReplicas(broker.logs)
    gc = GroupCoordinator(broker)
    (ga, pa), (gb, pb) = groups_on_distinct_partitions(gc)
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        # group B has a stable member (join, sync) before A's partition is gated
        first = await gc.join_group(JoinRequest(
            group_id=gb, member_id="", protocol_type="consumer", protocols=[("range", b"m")],
            session_timeout_ms=10000, rebalance_timeout_ms=30000, client_id="b", api_version=9))
        assert first.error == E.MEMBER_ID_REQUIRED
        joined = {}

        async def join_b():
            joined["r"] = await gc.join_group(JoinRequest(
                group_id=gb, member_id=first.member_id, protocol_type="consumer",
                protocols=[("range", b"m")], session_timeout_ms=10000,
                rebalance_timeout_ms=30000, client_id="b", api_version=9))
        nursery.start_soon(join_b)
        await trio.sleep(3.5)                      # group.initial.rebalance.delay.ms
        mb = joined["r"].member_id
        assert (await gc.sync_group(gb, mb, 1, None, None, None, [(mb, b"B")])).assignment == b"B"

        gate = broker.replicas.gates[pa] = trio.Event()
        answers: dict[str, object] = {}

        async def commit_a(name, offset):
            answers[name] = await gc.commit_offsets(ga, "", -1, None, [("t", [(0, offset, -1, "")])])
        nursery.start_soon(commit_a, "a1", 10)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(commit_a, "a2", 20)
        await trio.testing.wait_all_tasks_blocked()
        assert [p for p, _ in broker.replicas.waiting] == [pa, pa], "both appended, both waiting"
        assert answers == {}, "no commit answered before replication"
        assert (await gc.fetch_offsets(ga, [("t", [0])]))[1] == [("t", [(0, -1, -1, "", 0)])]

        # meanwhile group B is served
        assert await gc.commit_offsets(gb, mb, 1, None, [("t", [(0, 7, -1, "")])]) == [("t", [(0, 0)])]
        assert await gc.heartbeat(gb, mb, 1, None) == 0
        assert (await gc.fetch_offsets(gb, [("t", [0])]))[1] == [("t", [(0, 7, -1, "", 0)])]
        assert answers == {}

        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert answers == {"a1": [("t", [(0, 0)])], "a2": [("t", [(0, 0)])]}
        # applied in append order: the later commit wins
        assert (await gc.fetch_offsets(ga, [("t", [0])]))[1] == [("t", [(0, 20, -1, "", 0)])]
        gc.close()
        nursery.cancel_scope.cancel()


async def test_later_append_applies_after_an_earlier_one_on_the_same_partition(autojump_clock):
    """Replication of the second commit reported first: its continuation still waits for the
    first commit's, so the partition's offsets never go back."""
    broker = FakeBroker(topic_exists=True)

    class OutOfOrder(FakeReplicas):
        def __init__(self, logs):
            super().__init__(logs)
            self.gates: dict[int, trio.Event] = {}

        async def wait_replicated(self, topic, p, required_offset, timeout_ms):
            gate = self.gates.setdefault(required_offset, trio.Event())
            await gate.wait()
            return 0

    broker.replicas = OutOfOrder(broker.logs)
    gc = GroupCoordinator(broker)
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        answers = {}

        async def commit(name, offset):
            answers[name] = await gc.commit_offsets("g", "", -1, None, [("t", [(0, offset, -1, "")])])
        nursery.start_soon(commit, "first", 1)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(commit, "second", 2)
        await trio.testing.wait_all_tasks_blocked()
        first_req, second_req = sorted(broker.replicas.gates)
        broker.replicas.gates[second_req].set()
        await trio.testing.wait_all_tasks_blocked()
        assert answers == {}, "the second waits for the first to be applied"
        broker.replicas.gates[first_req].set()
        await trio.testing.wait_all_tasks_blocked()
        assert set(answers) == {"first", "second"}
        assert (await gc.fetch_offsets("g", [("t", [0])]))[1] == [("t", [(0, 2, -1, "", 0)])]
        gc.close()
        nursery.cancel_scope.cancel()


# ------------------------------------------------------------------ wall-clock steps
class SteppedClock:
    """The broker's two clocks: trio's (mock) clock as the monotonic one, and a wall clock
    ahead of it by ``offset_ms``, which the test steps as NTP or a resumed VM would."""

    def __init__(self):
        self.offset_ms = 0

    def monotonic_ms(self) -> int:
        return int(trio.current_time() * 1000)

    def now_ms(self) -> int:
        return self.monotonic_ms() + self.offset_ms


async def stable_pair(gc, nursery):
    """Two members of group g (session 10 s) through join and sync: (ids, generation)."""
    firsts = [await gc.join_group(req(client=c)) for c in ("a", "b")]
    joined = []

    async def join(mid):
        joined.append(await gc.join_group(req(mid)))
    for f in firsts:
        nursery.start_soon(join, f.member_id)
    while len(joined) < 2:
        await trio.sleep(0.1)
    gen, leader = joined[0].generation_id, joined[0].leader
    ids = [r.member_id for r in joined]
    synced = []

    async def sync(mid, assignments):
        synced.append(await gc.sync_group("g", mid, gen, None, None, None, assignments))
    for mid in ids:
        nursery.start_soon(sync, mid, [(m, m.encode()) for m in ids] if mid == leader else [])
    while len(synced) < 2:
        await trio.sleep(0.1)
    assert all(s.error == 0 for s in synced)
    return ids, gen


@pytest.mark.parametrize("step_s", [3600, -3600], ids=["forward", "back"])
async def test_a_wall_clock_step_expires_no_heartbeating_member(autojump_clock, step_s):
    """The timer task sleeps until the next deadline on the monotonic clock and fires what
    is due by it. Members heartbeat every 8 s of their 10 s sessions, 4 s apart, so whenever
    the task wakes one of them is at most 2 s from its deadline (on a wall-clock timer, a
    forward step expired it at that wake); three steps keep both members at their
    generation. A member that falls silent before a step still goes 10 s after its last
    heartbeat (on a wall-clock timer, a backward step kept it an hour longer)."""
    broker = FakeBroker(topic_exists=True)
    clock = broker.clock = SteppedClock()
    gc = GroupCoordinator(broker)
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        (a, b), gen = await stable_pair(gc, nursery)
        rebalances = gc.statistics()["rebalances"]
        answers = []

        async def beat(mid, phase):
            await trio.sleep(phase)
            for i in range(6):
                if i:
                    await trio.sleep(8)
                answers.append(await gc.heartbeat("g", mid, gen, None))
        async with trio.open_nursery() as beats:
            beats.start_soon(beat, a, 0)
            beats.start_soon(beat, b, 4)
            for at in (3.0, 10.0, 13.5):           # steps at different points of the cycle
                await trio.sleep(at)
                clock.offset_ms += step_s * 1000
        assert answers == [0] * 12
        st = gc.statistics()
        assert (st["members_expired"], st["rebalances"]) == (0, rebalances)
        # b falls silent, then the wall clock steps again; a heartbeats on
        assert await gc.heartbeat("g", b, gen, None) == 0
        last_b = trio.current_time()
        await trio.sleep(1)
        clock.offset_ms += step_s * 1000
        for _ in range(3):
            assert await gc.heartbeat("g", a, gen, None) == 0
            await trio.sleep(2.99)
        assert trio.current_time() - last_b == pytest.approx(9.97)
        assert gc.statistics()["members_expired"] == 0
        await trio.sleep(0.04)                     # 10.01 s after b's last heartbeat
        assert gc.statistics()["members_expired"] == 1
        assert await gc.heartbeat("g", b, gen, None) == E.UNKNOWN_MEMBER_ID
        gc.close()
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("step_s", [3600, -3600], ids=["forward", "back"])
async def test_a_wall_clock_step_neither_hurries_nor_holds_back_a_join(autojump_clock, step_s):
    broker = FakeBroker(topic_exists=True)
    clock = broker.clock = SteppedClock()
    gc = GroupCoordinator(broker)
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        first = await gc.join_group(req())
        t0 = trio.current_time()
        done = []

        async def join():
            done.append((await gc.join_group(req(first.member_id)), trio.current_time()))
        nursery.start_soon(join)
        await trio.testing.wait_all_tasks_blocked()
        clock.offset_ms += step_s * 1000           # while the initial rebalance delay runs
        await trio.sleep(2.9)
        assert done == []
        await trio.sleep(0.2)
        r, t = done[0]
        assert r.error == 0 and r.generation_id == 1 and abs((t - t0) - 3.0) <= 0.001
        gc.close()
        nursery.cancel_scope.cancel()


def coordinator_noting_lock_waiters():
    """A coordinator (``group.initial.rebalance.delay.ms=0``) and the list of how many tasks
    waited for its lock as each of its JoinGroups was decided."""
    broker = FakeBroker(topic_exists=True, **{"group.initial.rebalance.delay.ms": 0})
    gc = GroupCoordinator(broker)
    waiting_at_call = []
    real_join = gc.manager.join_group

    def join_group(*args, **kw):
        waiting_at_call.append(gc._lock.statistics().tasks_waiting)
        return real_join(*args, **kw)
    gc.manager.join_group = join_group
    return gc, waiting_at_call


async def test_a_burst_of_joins_is_decided_as_it_arrives_not_queued(autojump_clock):
    """Requests that reach an idle coordinator are decided at once, in the order their
    tasks run, as Kafka's coordinator takes requests from its queue: no call waits on the
    lock behind another. (With trio's ``Lock.acquire``, which yields even when the lock is
    free, 40 joins read in one scheduling round made a queue of 39 behind the first -- and
    a timer falling due meanwhile ran only after all of them.)"""
    gc, waiting_at_call = coordinator_noting_lock_waiters()
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        answers = []

        async def join(i):
            answers.append(await gc.join_group(req(client=f"c{i}")))
        async with trio.open_nursery() as burst:
            for i in range(40):
                burst.start_soon(join, i)
        assert [a.error for a in answers] == [E.MEMBER_ID_REQUIRED] * 40
        assert len(waiting_at_call) == 40 and max(waiting_at_call) == 0
        assert gc.statistics()["calls_without_wait"] >= 40
        gc.close()
        nursery.cancel_scope.cancel()


async def test_coordinator_appends_wait_offsets_commit_timeout_ms_for_the_isr(autojump_clock):
    """offsets.commit.timeout.ms: how long Kafka's coordinator waits for the ISR to have a
    commit (its write timeout); a commit not replicated by then fails."""
    broker = FakeBroker(topic_exists=True, **{"offsets.commit.timeout.ms": 1234})
    waited = []

    class TimingOut(FakeReplicas):
        async def wait_replicated(self, topic, p, required_offset, timeout_ms):
            waited.append(timeout_ms)
            await trio.sleep(timeout_ms / 1000)
            return E.REQUEST_TIMED_OUT

    broker.replicas = TimingOut(broker.logs)
    gc = GroupCoordinator(broker)
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        start = trio.current_time()
        answer = await gc.commit_offsets("g", "", -1, None, [("t", [(0, 5, -1, "")])])
        assert waited == [1234] and trio.current_time() - start >= 1.234
        [(_, [(_, code)])] = answer
        assert code != 0
        gc.close()
        nursery.cancel_scope.cancel()


async def test_joins_arriving_at_the_join_phase_ticks_never_queue_behind_the_timer(autojump_clock):
    """``group.initial.rebalance.delay.ms=0``: the join phase's timer fires every 1 ms tick
    while members keep arriving (``TIMER_TICK_MS``). Joins read in the same scheduling
    round as a tick are decided as they come: the timer task lets them go first, then takes
    the lock without a scheduling point. (With ``async with lock``, the timer task yielded
    holding the lock, and every join of that round waited behind it, one per round -- at
    each tick of a 1,000-member join.)"""
    gc, waiting_at_call = coordinator_noting_lock_waiters()
    rounds, per_round = 8, 6
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        ids = [(await gc.join_group(req(client=f"c{i}"))).member_id
               for i in range(rounds * per_round)]
        answers = []

        async def join(mid):
            await trio.sleep(0.001)              # wakes with the timer task, at its tick
            answers.append(await gc.join_group(req(mid)))
        async with trio.open_nursery() as members:
            members.start_soon(join, ids[0])
            for r in range(rounds):
                await trio.sleep(0.001)
                for mid in ids[r * per_round + (r == 0):(r + 1) * per_round]:
                    members.start_soon(join, mid)
        assert len(answers) == len(ids) and all(a.error == 0 for a in answers)
        assert max(waiting_at_call) == 0 and gc.statistics()["lock_waits"] == 0
        gc.close()
        nursery.cancel_scope.cancel()


async def test_a_reply_that_comes_with_the_call_costs_no_scheduling_point(autojump_clock):
    """A JoinGroup answered by the call itself (MEMBER_ID_REQUIRED) returns to its
    connection task without a round of the scheduler (counted by a task that runs once
    per round); a parked one sleeps until its reply is set."""
    broker = FakeBroker(topic_exists=True)
    gc = GroupCoordinator(broker)
    rounds = [0]

    async def count_rounds(task_status=trio.TASK_STATUS_IGNORED):
        with trio.CancelScope() as scope:
            task_status.started(scope)
            while True:
                rounds[0] += 1
                await trio.lowlevel.checkpoint()
    async with trio.open_nursery() as nursery:
        await gc.start(nursery)
        first = await gc.join_group(req(client="first"))       # creates the group (a record)
        counting = await nursery.start(count_rounds)
        before = rounds[0]
        answers = [await gc.join_group(req(client=f"c{i}")) for i in range(20)]
        assert [a.error for a in answers] == [E.MEMBER_ID_REQUIRED] * 20
        assert rounds[0] == before
        counting.cancel()           # (a task always runnable stops the mock clock's jumps)
        parked = []
        nursery.start_soon(lambda: _append_answer(gc, req(first.member_id), parked))
        await trio.sleep(1)
        assert parked == []                                     # the initial delay (3 s)
        await trio.sleep(2.5)
        assert [a.generation_id for a in parked] == [1]
        gc.close()
        nursery.cancel_scope.cancel()


async def _append_answer(gc, request, out):
    out.append(await gc.join_group(request))


async def test_the_manager_is_made_on_first_use_in_the_offsets_expiry_period_since_start(
        autojump_clock):
    """A node with no ``__consumer_offsets`` partition to load and no group request yet makes
    no GroupManager (start-up, issue 32): images without the topic, fired timers and a close
    need none. The first group request makes it, and the offsets expiry then runs in the
    period it had since start, as if the manager had been there all along: an offset
    committed 1.5 periods after start, with a retention already over when the second
    period ends, is expired at that end."""
    broker = FakeBroker(**{"offsets.retention.check.interval.ms": 1000})
    gc = GroupCoordinator(broker)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            start_mono = gc.monotonic_ms()
            await gc.start(nursery)
            gc.on_image(broker.metadata)                 # no __consumer_offsets yet
            await gc.fire_timers()
            await trio.sleep(1.5)
            assert gc._manager is None
            assert await gc.ensure_offsets_topic() == 0  # FindCoordinator: create and load
            assert gc._manager is not None and gc.manager.loaded == set(range(5))
            assert gc.manager.timers.deadline(("offsets-expiry",)) == start_mono + 2000
            # OffsetCommit v2's retention time: expires 100 ms after the commit
            assert await gc.commit_offsets("g", "", -1, None, [("t", [(0, 7, -1, "")])],
                                           retention_ms=100, api_version=2) == [("t", [(0, 0)])]
            await trio.sleep(0.4)                        # 1.9 s: past retention, not expired
            assert (await gc.fetch_offsets("g", None))[1] == [("t", [(0, 7, -1, "", 0)])]
            await trio.sleep(0.2)                        # 2.1 s: the second period ended
            assert (await gc.fetch_offsets("g", None))[1] == []
            assert gc.statistics()["offsets_expired"] == 1
            gc.close()                                   # the timer task ends: the nursery exits

    # closed before any use: the timer task ends without a manager ever made
    gc = GroupCoordinator(FakeBroker())
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await gc.start(nursery)
            gc.close()
    assert gc._manager is None
