"""Broker instructions per member of a classic group's join, split by request kind (issue 32,
item 4: the 1,000-member join row).

The members are the scale row's raw-protocol clients (``benchmarks/harness/scale.py``:
JoinGroup v5 without, then with, the member id KIP-394 hands out; SyncGroup v3, the
leader's naming every member). Against one ``kbroker serve`` (started here, its
``__consumer_offsets`` created and warmed by a one-member group first), two runs of N
members, each phase counted on its own (``--counter callgrind``: exact user-space
instructions under valgrind, as ``request_cost_bench.py``; ``cpu``: the broker's CPU ns):

*split* (``kbroker.connections.dormant.after.ms=0``: no connection gives its task up between
the phases; ``group.initial.rebalance.delay.ms`` = ``--delay-ms``, so that the join phase
waits for its timer after the last join and the phases below can be told apart):

- ``connect``: N connections (32 being set up at a time), one ApiVersions each;
- ``find-coordinator``: one FindCoordinator v4 per member (a client asks it before it joins;
  the scale row asks it once, from one connection);
- ``join-no-id``: N JoinGroups without a member id, each answered MEMBER_ID_REQUIRED;
- ``join-with-id``: N JoinGroups with the id, all parked in the join phase (counted until the
  broker is quiet: every one read and decided);
- ``join-complete``: the join phase's end (the initial delay's timer), N answers, the leader's
  with every member's metadata (less the idle broker's cost over the wait, ``idle``);
- ``sync-followers``: N - 1 SyncGroups, parked until the leader's assignment;
- ``sync-leader``: the leader's SyncGroup (N assignments): the group record written, then
  the N answers;
- ``idle``: one second without a request (per second; the ``join-complete`` correction).

*harness* (the scale row itself, ``benchmarks/harness/scale.py``'s members: the broker's
defaults but ``group.initial.rebalance.delay.ms`` = ``--harness-delay-ms`` (the row's 0),
and no connection dormant, as none is in the row, whose connections are made within
0.15 s; every member's second JoinGroup sent as its first answer comes, its SyncGroup as
its join answer comes; heartbeats, which tell the members of a second generation, from
60 s on only, so that none is counted in a one-generation join even under valgrind):
``whole-join``, from the first JoinGroup to the group Stable, in one count, with the
generation it took and the requests sent. ``--cprofile FILE`` profiles the broker over
that join (cProfile, switched on and off by signals); ``--gc-log FILE`` prints the cyclic
collector's runs during it.

Prints a table of instructions (or ns) per member; asserts nothing. Callgrind's dumps are
removed at the end.

    .venv/bin/python -m benchmarks.group_join_cost_bench -n 1000 --counter callgrind
        [--runs split,harness] [--harness-delay-ms 3000] [--cprofile FILE] [--gc-log FILE]
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from kbroker.wire import messages as w

from .harness.rawclient import Loop
from .harness.scale import (EMPTY_ASSIGNMENT, ERR_COORDINATOR_RETRY, ERR_MEMBER_ID_REQUIRED,
                            _Group, _leave, _subscription)
from .request_cost_bench import (CALLGRIND_DIR, COUNTERS, CallgrindCounter,
                                 _cpu_ns)

TOPIC = "joincost-topic"
STARTED: list[int] = []        # the brokers' pids (their callgrind dumps are removed at the end)
# ``kbroker serve`` with every cyclic-GC collection logged (monotonic start, generation,
# seconds, objects collected), written at its stop
_GC_WRAPPER = """
import gc, json, os, runpy, sys, time
out, threshold = sys.argv[1], sys.argv[2]
sys.argv = ["kbroker"] + sys.argv[3:]
if threshold:
    gc.set_threshold(*map(int, threshold.split(",")))
events, t = [], [0.0]
def cb(phase, info):
    if phase == "start":
        t[0] = time.monotonic()
    else:
        events.append((t[0], info["generation"], time.monotonic() - t[0], info["collected"]))
gc.callbacks.append(cb)
real_exit = os._exit
def _exit(code):
    with open(out, "w") as f:
        json.dump(events, f)
    real_exit(code)
os._exit = _exit
runpy.run_module("kbroker", run_name="__main__")
"""
J = w.JoinGroupRequest
S = w.SyncGroupRequest


class Members:
    """N members of one group on their own connections (the scale row's requests)."""

    def __init__(self, loop: Loop, port: int, group: str, n: int):
        self.loop, self.port, self.group, self.n = loop, port, group, n
        self.conns: list = []
        self.ids = [""] * n
        self.answers: list = [None] * n
        self.meta = _subscription(TOPIC)

    def run(self, send, timeout: float = 1800.0) -> None:
        """``send(i, done)`` for every member; returns once each called ``done(i, resp)``."""
        left = [len(self.conns)]
        self.answers = [None] * len(self.conns)

        def done(i, resp):
            self.answers[i] = resp
            left[0] -= 1
        for i in range(len(self.conns)):
            send(i, done)
        self.loop.run_until(lambda: left[0] == 0, timeout=timeout)

    def connect(self, at_once: int = 32) -> None:
        started, answered = [0], [0]

        def one():
            c = self.loop.connect("127.0.0.1", self.port)
            self.conns.append(c)
            started[0] += 1
            c.request(18, 0, w.ApiVersionsRequest(), lambda resp: more())

        def more():
            answered[0] += 1
            if started[0] < self.n:
                one()
        for _ in range(min(at_once, self.n)):
            one()
        self.loop.run_until(lambda: answered[0] >= self.n, timeout=1800)

    def find_coordinator(self, i, done):
        self.conns[i].request(10, 4, w.FindCoordinatorRequest(
            key_type=0, coordinator_keys=[self.group]), lambda r: done(i, r))

    def join(self, i, done):
        body = J(group_id=self.group, session_timeout_ms=45000, rebalance_timeout_ms=120000,
                 member_id=self.ids[i], group_instance_id=None, protocol_type="consumer",
                 protocols=[J.JoinGroupRequestProtocol(name="range", metadata=self.meta)])

        def answer(resp):
            if resp.error_code == ERR_MEMBER_ID_REQUIRED:
                self.ids[i] = resp.member_id
            elif resp.error_code and resp.error_code not in ERR_COORDINATOR_RETRY:
                raise RuntimeError(f"JoinGroup error {resp.error_code}")
            done(i, resp)
        self.conns[i].request(11, 5, body, answer)

    def sync(self, i, done, resp):
        assignments = []
        if resp.leader == resp.member_id:
            assignments = [S.SyncGroupRequestAssignment(member_id=m.member_id,
                                                        assignment=EMPTY_ASSIGNMENT)
                           for m in resp.members]

        def answer(r):
            if r.error_code:
                raise RuntimeError(f"SyncGroup error {r.error_code}")
            done(i, r)
        self.conns[i].request(14, 3, S(group_id=self.group, generation_id=resp.generation_id,
                                       member_id=resp.member_id, group_instance_id=None,
                                       assignments=assignments), answer)

    def leave(self) -> None:
        L = w.LeaveGroupRequest
        self.run_one(0, lambda i, done: self.conns[0].request(13, 3, L(
            group_id=self.group, members=[L.MemberIdentity(member_id=m, group_instance_id=None)
                                          for m in self.ids]), lambda r: done(i, r)))
        for c in self.conns:
            c.close()

    def run_one(self, i, send) -> None:
        got = [False]
        send(i, lambda _i, _r: got.__setitem__(0, True))
        self.loop.run_until(lambda: got[0], timeout=1800)


def wait_quiet(pid: int, window: float = 0.3, share: float = 0.05, timeout: float = 600) -> None:
    """Until the broker used less than ``share`` of a CPU over ``window`` seconds."""
    deadline = time.monotonic() + timeout
    prev = sum(_cpu_ns(pid))
    while time.monotonic() < deadline:
        time.sleep(window)
        now = sum(_cpu_ns(pid))
        if now - prev < share * window * 1e9:
            return
        prev = now
    raise TimeoutError("the broker did not become quiet")


# ``kbroker serve`` under cProfile from SIGUSR1 to SIGUSR2 (the join only), written then
_CPROFILE_WINDOW = """
import cProfile, runpy, signal, sys
out = sys.argv[1]
sys.argv = ["kbroker"] + sys.argv[2:]
prof = cProfile.Profile()
def on(*_):
    prof.enable()
def off(*_):
    prof.disable()
    prof.dump_stats(out)
signal.signal(signal.SIGUSR1, on)
signal.signal(signal.SIGUSR2, off)
runpy.run_module("kbroker", run_name="__main__")
"""


def start_broker(work: Path, overrides: dict, counter: str, cprofile: str | None,
                 gc_log: str | None = None, gc_threshold: str = ""):
    from tests.support.broker_proc import BrokerProcess
    broker = BrokerProcess(work / "data", overrides=overrides)
    wrapper = ((_CPROFILE_WINDOW, cprofile) if cprofile
               else (_GC_WRAPPER, gc_log, gc_threshold) if gc_log else None)
    if wrapper:
        plain = broker.command
        broker.command = lambda: [plain()[0], "-c", *wrapper, *plain()[3:]]
    if counter == "callgrind":
        broker.start_timeout = 300.0
        broker.prefix = ["valgrind", *CallgrindCounter.prefix_args,
                         f"--callgrind-out-file={CALLGRIND_DIR}/callgrind.out.%p"]
    broker.start()
    STARTED.append(broker.proc.pid)
    loop = Loop()
    admin = Members(loop, broker.port, "joincost-warm", 1)
    admin.connect()
    C = w.CreateTopicsRequest
    admin.run_one(0, lambda i, done: admin.conns[0].request(19, 7, C(timeout_ms=60000, topics=[
        C.CreatableTopic(name=TOPIC, num_partitions=10, replication_factor=1)]),
        lambda r: done(i, r)))
    # __consumer_offsets is created on the first FindCoordinator; a one-member group then
    # runs the code paths once
    for _ in range(600):
        admin.run(admin.find_coordinator)
        if all(c.error_code == 0 for c in admin.answers[0].coordinators):
            break
        time.sleep(0.1)
    warm_join(admin)
    admin.leave()
    return broker, loop


def warm_join(m: Members) -> None:
    while True:
        m.run(m.join)
        if all(a.error_code == 0 for a in m.answers):
            break
        if any(a.error_code in ERR_COORDINATOR_RETRY for a in m.answers):
            time.sleep(0.1)         # the coordinator's partition is still loading
    joins = list(m.answers)
    m.run(lambda i, done: m.sync(i, done, joins[i]))


def pump_until_quiet(loop: Loop, pid: int, window: float = 0.2, share: float = 0.05) -> None:
    """Run the members' loop (their requests go out) until the broker used less than
    ``share`` of a CPU over ``window`` seconds: everything sent was read and decided."""
    state = {"at": time.monotonic() + window, "cpu": sum(_cpu_ns(pid))}

    def quiet() -> bool:
        now = time.monotonic()
        if now < state["at"]:
            return False
        cpu = sum(_cpu_ns(pid))
        idle = cpu - state["cpu"] < share * (now - state["at"] + window) * 1e9
        state["at"], state["cpu"] = now + window, cpu
        return idle
    loop.run_until(quiet, timeout=1800)


def split_run(args, work: Path) -> list[tuple[str, int, float]]:
    broker, loop = start_broker(work, {"kbroker.connections.dormant.after.ms": 0,
                                       "group.initial.rebalance.delay.ms": args.delay_ms},
                                args.counter, None)
    pid = broker.proc.pid
    Counter = COUNTERS[args.counter]
    n = args.n
    rows = []
    try:
        m = Members(loop, broker.port, "joincost-split", n)

        def phase(name, fn, per=n):
            wait_quiet(pid)
            c = Counter(pid)
            t0 = time.monotonic()
            fn()
            rows.append((name, per, c.stop(), time.monotonic() - t0))

        phase("idle", lambda: time.sleep(1.0), 1)
        phase("connect", m.connect)
        phase("find-coordinator", lambda: m.run(m.find_coordinator))
        phase("join-no-id", lambda: m.run(m.join))
        joined: list = [None] * n
        left = [n]

        def join_done(i, resp):
            joined[i] = resp
            left[0] -= 1

        def join_with_id():
            for i in range(n):
                m.join(i, join_done)
            pump_until_quiet(loop, pid)   # every JoinGroup read and parked
            if left[0] != n:
                raise RuntimeError(f"{n - left[0]} joins answered before the delay's timer: "
                                   "raise --delay-ms")
        phase("join-with-id", join_with_id)
        # the join phase ends at the initial delay's timer (extended while members arrived)
        c = Counter(pid)
        t0 = time.monotonic()
        loop.run_until(lambda: left[0] == 0, timeout=1800)
        rows.append(("join-complete", n, c.stop(), time.monotonic() - t0))
        leader = next(i for i, r in enumerate(joined) if r.leader == r.member_id)
        if len(joined[leader].members) != n:
            raise RuntimeError(f"the generation holds {len(joined[leader].members)} members")
        followers = [i for i in range(n) if i != leader]
        synced = [0]

        def sync_followers():
            for i in followers:
                m.sync(i, lambda _i, _r: synced.__setitem__(0, synced[0] + 1), joined[i])
            pump_until_quiet(loop, pid)
        phase("sync-followers", sync_followers, n - 1)

        def sync_leader():
            m.run_one(leader, lambda i, done: m.sync(i, done, joined[i]))
            loop.run_until(lambda: synced[0] == len(followers), timeout=1800)
        phase("sync-leader", sync_leader, 1)
        m.leave()
    finally:
        loop.close()
        broker.stop(timeout=300)
    return rows


def harness_run(args, work: Path) -> list[tuple[str, int, float]]:
    # the scale row's node: no member's connection idle long enough to go dormant
    broker, loop = start_broker(work, {"group.initial.rebalance.delay.ms": args.harness_delay_ms,
                                       "kbroker.connections.dormant.after.ms": 0},
                                args.counter, args.cprofile, args.gc_log, args.gc_threshold)
    pid = broker.proc.pid
    Counter = COUNTERS[args.counter]
    try:
        g = _Group(loop, "127.0.0.1", broker.port, "joincost-harness", TOPIC, args.n)
        g.connect_all()
        wait_quiet(pid)
        if args.cprofile:
            os.kill(pid, signal.SIGUSR1)
        c = Counter(pid)
        t0 = g.t0 = time.monotonic()
        for mem in g.members:
            mem.join()
        # heartbeats tell members of a second generation; not before a join under valgrind
        # could have ended (a first generation of every member takes none)
        loop.later(60.0, g.heartbeats)
        loop.run_until(lambda: g.stable_at is not None, timeout=1800)
        t1 = time.monotonic()
        rows = [("whole-join", args.n, c.stop(), t1 - t0)]
        if args.cprofile:
            os.kill(pid, signal.SIGUSR2)
        tl = g.timeline()
        print(f"harness run: generation {max(x.synced for x in g.members)}, requests "
              f"{tl['requests']}, errors {tl['errors']}, generations {tl['generations']}")
        _leave(loop, g)
    finally:
        loop.close()
        broker.stop(timeout=300)
    if args.gc_log:
        import json
        during = [e for e in json.loads(Path(args.gc_log).read_text()) if t0 <= e[0] <= t1]
        for gen in (0, 1, 2):
            es = [e for e in during if e[1] == gen]
            print(f"GC generation {gen} during the join: {len(es)} collections, "
                  f"{sum(e[2] for e in es) * 1000:.1f} ms, {sum(e[3] for e in es)} collected")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1000, help="members")
    ap.add_argument("--counter", choices=sorted(COUNTERS), default="callgrind")
    ap.add_argument("--runs", default="split,harness")
    ap.add_argument("--delay-ms", type=int, default=20000,
                    help="the split run's group.initial.rebalance.delay.ms (longer than its "
                         "join-with-id phase takes)")
    ap.add_argument("--harness-delay-ms", type=int, default=0,
                    help="the harness run's group.initial.rebalance.delay.ms (the row's 0; "
                         "under valgrind a 1 ms tick passes within one request, and a first "
                         "generation may miss members: 3000, Kafka's default, then keeps one "
                         "generation at the cost of that wait's idle instructions)")
    ap.add_argument("--cprofile", metavar="FILE",
                    help="the harness run's broker under cProfile during the join")
    ap.add_argument("--gc-log", metavar="FILE",
                    help="the harness run's broker logs its cyclic-GC collections (printed: "
                         "those during the join)")
    ap.add_argument("--gc-threshold", default="", metavar="T0,T1,T2",
                    help="with --gc-log: the broker's gc.set_threshold before it starts (an "
                         "experiment; kbroker serve raises a young threshold below its own)")
    args = ap.parse_args(argv)
    unit = {"perf": "instructions:u", "callgrind": "instructions",
            "cpu": "CPU ns"}[args.counter]
    rows = []
    for run in args.runs.split(","):
        work = Path(tempfile.mkdtemp(prefix="joincost-"))
        try:
            rows += [(run, *r) for r in {"split": split_run, "harness": harness_run}[run](args, work)]
        finally:
            shutil.rmtree(work, ignore_errors=True)
            for pid in STARTED:
                for dump in Path(CALLGRIND_DIR).glob(f"callgrind.out.{pid}*"):
                    dump.unlink()
    print(f"kbroker: a classic group of {args.n:,} members (JoinGroup v5, SyncGroup v3)")
    print(f"| run | phase | requests | broker {unit} | per request | wall s |")
    print("|---|---|---:|---:|---:|---:|")
    for run, name, per, total, wall in rows:
        print(f"| {run} | {name} | {per:,} | {total:,.0f} | {total / per:,.0f} | {wall:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
