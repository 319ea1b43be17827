"""Deterministic simulation of a KRaft-style quorum built from ``kbroker.raft.core`` nodes.

Not trio: one seeded event queue (a heap ordered by simulated time, then insertion order) drives
everything, so a seed reproduces a run exactly. Per seed the scenario is drawn from the seed:
number of voters and observers, pre-vote on/off, message drops, duplicates and delays (delays
reorder), partitions (symmetric groups and one-way link cuts), crashes that lose whatever was
not yet flushed (a node's ``Ready`` is persisted by a separate "flush" event; a crash before it
loses that ``Ready``), client proposals and application snapshots. After the chaos phase all
faults heal and the run must converge (one leader, every replica caught up, a fresh record
committed everywhere) within a bounded simulated time.

Invariants checked after every event (``Checker``):
  I1 at most one leader per epoch
  I2 epochs never decrease (in memory per life; on disk across lives; memory >= disk)
  I3 a vote is granted at most once per epoch, and only after it is on disk (persist before send)
  I4 the high watermark never decreases (per life)
  I5 committed records never change and are identical on every node holding them
     (every node's records below its high watermark, and every snapshot's content, agree with
     one global committed log); a new leader holds every committed record (leader completeness)
  I6 a snapshot never passes the high watermark (nor the global committed log)
  I7 the application applies only committed records, in order
  I8 (dynamic and upgrade profiles, KIP-853) committed voter sets change one voter at a time,
     and every node's voter set is the latest VotersRecord it holds (so no two disjoint
     majorities)
  I9 (upgrade profile, KAFKA-16538) the committed upgrade's VotersRecord holds exactly the
     static voters, each with its directory id; a node whose high watermark passed it is at
     kraft.version 1 (never back to 0); a replica never counts as a voter whose entry names
     another directory id than its disk's

The ``dynamic`` profile starts a KIP-853 quorum: the first voters hold a 0-0 snapshot with
the VotersRecord (as ``kbroker storage format --initial-controllers`` writes it), the other
nodes join as observers through bootstrap ids, and a "reconfigure" fault asks the leader to
add an observer or remove a voter (itself included) while everything else goes on.

The ``upgrade`` profile starts a static quorum (``controller.quorum.voters``, kraft.version
0) whose nodes have directory ids and endpoints; an "upgrade" fault has the leader hear
UpdateRaftVoter from the voters that follow it and ask for ``kraft.version`` 1 (sometimes
validate-only), refused until every voter told this leader. Once upgraded, "reconfigure"
adds and removes voters, and "reformat" crashes a voter and gives it an empty disk with a
new directory id, formatted as a joining controller (bootstrap servers, no static list; at
most one such disk catching up at a time): it must not count as the voter it replaced until
"reconfigure" removes the old entry and adds the new disk.
"""
from __future__ import annotations

import heapq
import pickle
import random
import zlib
from collections import deque
from dataclasses import dataclass, field

from kbroker.raft import (Entry, NotLeader, QuorumState, RaftConfig, RaftNode, Ready, Role, Snapshot,
                          StorageView)
from kbroker.raft import messages as m
from kbroker.raft.control import (KRAFT_VERSION, VOTERS, ZERO_UUID, Voter, decode_voters, snapshot_prefix,
                                  snapshot_voters)
from kbroker.raft.core import CATCHING_UP
from kbroker.raft.log import joined_to_next
from kbroker.wire import records as rb


class SimFailure(AssertionError):
    pass


def encode_image(applied: list) -> bytes:
    """The simulated state machine's snapshot: every applied record (so checks can compare)."""
    return zlib.compress(pickle.dumps(applied, protocol=5), 1)


def decode_image(data: bytes) -> list:
    data = bytes(data)
    if data[:1] != b"x":   # a dynamic quorum's snapshot starts with its control batch
        header = rb.parse_header(memoryview(data), 0)
        data = data[header.size:]
    return pickle.loads(zlib.decompress(data)) if data else []


def reproduce_command(seed: int, profile: str = "quick") -> str:
    extra = "" if profile == "quick" else f" --profile {profile}"
    return f"python tools/raft_soak.py --seed {seed}{extra}"


def sim_identity(node_id: int, generation: int = 0) -> tuple[str, tuple]:
    """A simulated node's directory id (per disk) and controller endpoint."""
    import base64
    import uuid
    raw = uuid.UUID(int=(0x51 << 120) | (generation << 32) | node_id).bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode(), (("CONTROLLER", f"sim-{node_id}", 9093),)


def initial_snapshot(voters, identity=None) -> Snapshot:
    """The 0-0 snapshot a dynamic quorum's first voters are formatted with (``identity(id)``:
    a voter's directory id and endpoints, as ``--initial-controllers`` names them)."""
    return Snapshot(m.OffsetAndEpoch(0, 0), snapshot_prefix(
        [Voter(v, *identity(v)) if identity else Voter(v) for v in voters]))


def describe(msg) -> str:
    """One short line per message for traces (records and snapshot bytes summarized)."""
    name = type(msg).__name__
    parts = []
    for f in msg.__dataclass_fields__:
        v = getattr(msg, f)
        if f == "records":
            v = f"[{v[0].offset}..{v[-1].offset}]" if v else "[]"
        elif f == "unaligned_records":
            v = f"<{len(v)} bytes>"
        elif f == "correlation_id":
            continue
        elif hasattr(v, "__dataclass_fields__"):
            v = "(" + ",".join(str(getattr(v, g)) for g in v.__dataclass_fields__) + ")"
        parts.append(f"{f}={v}")
    return f"{name}({', '.join(parts)})"


# ------------------------------------------------------------------ scenario

@dataclass
class Scenario:
    seed: int
    voters: list[int]
    observers: list[int]
    config: RaftConfig
    chaos_ms: int
    converge_bound_ms: int
    drop: float
    dup: float
    max_delay_ms: int
    spike: float            # probability of a long delay (reordering across many messages)
    fault_every_ms: int     # mean time between fault events
    propose_every_ms: int
    snapshot_prob: float
    max_disk_ms: int = 3
    drift: dict = field(default_factory=dict)   # node id -> clock rate
    dynamic: bool = False                        # KIP-853: voters in the log, reconfigured
    upgrade: bool = False                        # static, upgraded to kraft.version 1 on the way

    @classmethod
    def from_seed(cls, seed: int, profile: str = "quick") -> "Scenario":
        dynamic = profile == "dynamic"
        upgrade = profile == "upgrade"
        r = random.Random(f"scenario-{seed}" + ("" if profile in ("quick", "long") else f"-{profile}"))
        if dynamic:
            n = r.choice([1, 1, 2, 3, 3])
        elif upgrade:
            n = r.choice([1, 3, 3, 3, 5])
        else:
            n = r.choice([1, 3, 3, 3, 5, 5, 4])
        voters = list(range(1, n + 1))
        observers = list(range(n + 1, n + 1 + (r.choice([1, 2, 3]) if dynamic else
                                               r.choice([0, 1, 2]) if upgrade else r.choice([0, 0, 1, 2]))))
        config = RaftConfig(
            pre_vote=r.random() < 0.7,
            request_timeout_ms=r.choice([1000, 2000]),
            fetch_max_bytes=r.choice([500, 4000, 64 * 1024]),
            snapshot_chunk_bytes=r.choice([256, 2048, 1 << 20]),
            max_record_bytes_between_snapshots=r.choice([1500, 4000, 20 * 1024 * 1024]),
        )
        chaos, bound = {"quick": (20000, 30000), "long": (120000, 60000),
                        "dynamic": (20000, 40000), "upgrade": (25000, 40000)}[profile]
        return cls(seed=seed, voters=voters, observers=observers, config=config,
                   chaos_ms=chaos, converge_bound_ms=bound,
                   drop=r.choice([0.0, 0.01, 0.05, 0.15]), dup=r.choice([0.0, 0.0, 0.02]),
                   max_delay_ms=r.choice([2, 10, 40]), spike=r.choice([0.0, 0.01, 0.05]),
                   fault_every_ms=r.choice([200, 500, 1500]), propose_every_ms=r.choice([20, 60, 150]),
                   snapshot_prob=r.choice([0.0, 0.3, 1.0]), max_disk_ms=r.choice([1, 3, 30]),
                   drift={i: r.choice([1.0, 1.0, r.uniform(0.9, 1.1)]) for i in voters + observers},
                   dynamic=dynamic, upgrade=upgrade)


# ------------------------------------------------------------------ hosts

@dataclass
class Disk:
    """What survives a crash: the quorum-state file, the latest snapshot, the flushed log."""

    quorum_state: QuorumState = field(default_factory=QuorumState)
    snapshot: Snapshot | None = None
    start: int = 0
    entries: list[Entry] = field(default_factory=list)

    def apply(self, rd: Ready, steps: int = 6, appended: int | None = None) -> None:
        """Persist ``rd`` in the driver contract's order; a torn write (crash part-way) is
        ``steps`` < 6 and/or only the first ``appended`` records."""
        if rd.persist_state is not None:
            self.quorum_state = rd.persist_state
        if steps < 2:
            return
        if rd.snapshot is not None:
            self.snapshot = rd.snapshot
        if steps < 3:
            return
        if rd.reset_log_to is not None:
            self.entries = []
            self.start = rd.reset_log_to
        if steps < 4:
            return
        if rd.truncate_to is not None:
            del self.entries[max(0, rd.truncate_to - self.start):]
        if steps < 5:
            return
        for e in rd.append_entries[:appended]:
            if e.offset != self.start + len(self.entries):
                raise SimFailure(f"driver contract: append at {e.offset}, disk log ends at "
                                 f"{self.start + len(self.entries)}")
            self.entries.append(e)
        if rd.log_start_offset is not None and rd.log_start_offset > self.start:
            del self.entries[:rd.log_start_offset - self.start]
            self.start = rd.log_start_offset

    def view(self) -> StorageView:
        return StorageView(self.quorum_state, self.snapshot, list(self.entries))


@dataclass
class Host:
    node_id: int
    disk: Disk = field(default_factory=Disk)
    node: RaftNode | None = None
    life: int = 0
    pending: Ready | None = None
    clock: int = 0                  # sim time the node's logical clock last caught up to
    born: int = 0                   # sim time of this life's start
    rate: float = 1.0               # clock drift: node ms per simulated ms
    wake_at: int | None = None
    wake_token: int = 0
    applied: list[tuple[int, int, bytes]] = field(default_factory=list)
    disk_generation: int = 0        # bumped by "reformat": a new disk, a new directory id
    # checker state for the current life
    max_epoch: int = 0
    last_hw: int = 0
    checked_to: int = 0
    was_leader_epoch: int = -1


# ------------------------------------------------------------------ the checker

class Checker:
    def __init__(self, sim: "Simulation") -> None:
        self.sim = sim
        self.committed: list[tuple[int, bytes]] = []   # offset -> (epoch, payload)
        # offset -> an upper bound of the epoch whose leader committed it (the epoch of the node
        # that first reported it committed; a replica never learns a commit from a later epoch)
        self.commit_epoch: list[int] = []
        self.leaders: dict[int, int] = {}
        self.votes: dict[tuple[int, int], int] = {}
        self.disk_epoch: dict[int, int] = {}
        self.voter_sets: dict[int, frozenset] = {}   # offset of a committed VotersRecord -> ids
        self.upgrade_offset: int | None = None       # of the committed KRaftVersionRecord (upgrade profile)

    def fail(self, text: str) -> None:
        raise SimFailure(text)

    def record(self, offset: int, epoch: int, payload: bytes, who: str, at_epoch: int) -> None:
        c = self.committed
        if offset < len(c):
            if c[offset] != (epoch, payload):
                self.fail(f"I5 committed record at {offset} differs: {who} has {(epoch, payload)!r}, "
                          f"committed is {c[offset]!r}")
        elif offset == len(c):
            c.append((epoch, payload))
            self.commit_epoch.append(at_epoch)
        else:
            self.fail(f"I5 checker gap: {who} reports committed {offset} beyond {len(c)}")

    def check_snapshot(self, h: Host, snap: Snapshot) -> list:
        image = decode_image(snap.data)
        end = snap.snapshot_id.end_offset
        if len(image) != end:
            self.fail(f"snapshot of node {h.node_id} ends at {end} but holds {len(image)} records")
        for off, ep, payload in image:
            self.record(off, ep, payload, f"snapshot of node {h.node_id}", h.node.epoch if h.node else 1 << 30)
        if end and image[-1][1] != snap.snapshot_id.epoch:
            self.fail(f"snapshot id epoch {snap.snapshot_id} does not match record epoch {image[-1][1]}")
        return image

    def check_host(self, h: Host) -> None:
        n = h.node
        if n is None:
            return
        if n.epoch < h.max_epoch:
            self.fail(f"I2 node {h.node_id} epoch went back {h.max_epoch} -> {n.epoch}")
        if n.epoch < h.disk.quorum_state.leader_epoch:
            self.fail(f"I2 node {h.node_id} epoch {n.epoch} below its persisted {h.disk.quorum_state.leader_epoch}")
        h.max_epoch = n.epoch
        if n.role is Role.LEADER:
            prev = self.leaders.setdefault(n.epoch, h.node_id)
            if prev != h.node_id:
                self.fail(f"I1 two leaders in epoch {n.epoch}: {prev} and {h.node_id}")
            if h.was_leader_epoch != n.epoch:
                h.was_leader_epoch = n.epoch
                self.check_leader_completeness(h)
        hw = n.high_watermark
        if hw < h.last_hw:
            self.fail(f"I4 node {h.node_id} high watermark went back {h.last_hw} -> {hw}")
        h.last_hw = hw
        log = n.log
        if hw > log.end_offset:
            self.fail(f"I5 node {h.node_id} high watermark {hw} beyond its log end {log.end_offset}")
        if h.checked_to < hw:
            for off in range(max(h.checked_to, log.start_offset), hw):
                e = log.entry(off)
                self.record(off, e.epoch, e.payload, f"node {h.node_id}", n.epoch)
            h.checked_to = hw
        if self.sim.sc.upgrade:
            self.check_upgrade(h)
        if log.snapshot is not None:
            end = log.snapshot.snapshot_id.end_offset
            if end > hw or end > len(self.committed):
                self.fail(f"I6 node {h.node_id} snapshot end {end} passes high watermark {hw} "
                          f"(committed {len(self.committed)})")

    def check_upgrade(self, h: Host) -> None:
        n = h.node
        if self.upgrade_offset is not None and n.high_watermark > self.upgrade_offset and not n.dynamic:
            self.fail(f"I9 node {h.node_id} is past the committed upgrade at {self.upgrade_offset} "
                      f"(high watermark {n.high_watermark}) but at kraft.version {n.kraft_version}")
        mine = (n.voter_infos or {}).get(h.node_id)
        if n.is_voter and mine is not None and mine.directory_id not in (ZERO_UUID, n.directory_id):
            self.fail(f"I9 node {h.node_id} (disk {n.directory_id}) counts as the voter of disk {mine.directory_id}")

    def check_leader_completeness(self, h: Host) -> None:
        """Raft's leader completeness: a leader of epoch L holds every record committed by a
        leader of an earlier epoch. (A delayed vote can still crown a leader of an old epoch
        that lacks records committed later, in a higher epoch; it can never commit anything.)"""
        log, epoch = h.node.log, h.node.epoch
        for off in range(log.start_offset, len(self.committed)):
            if self.commit_epoch[off] >= epoch:
                continue
            if off >= log.end_offset:
                self.fail(f"I5 new leader {h.node_id} (epoch {epoch}) ends at {log.end_offset}, but "
                          f"{off} was committed before epoch {epoch}")
            e = log.entry(off)
            if (e.epoch, e.payload) != self.committed[off]:
                self.fail(f"I5 new leader {h.node_id} has {(e.epoch, e.payload)!r} at committed offset {off}")

    def on_persisted(self, h: Host, rd: Ready, torn: bool = False) -> None:
        qs = h.disk.quorum_state
        if qs.leader_epoch < self.disk_epoch.get(h.node_id, 0):
            self.fail(f"I2 node {h.node_id} persisted epoch went back to {qs.leader_epoch}")
        self.disk_epoch[h.node_id] = qs.leader_epoch
        if rd.snapshot is not None:
            self.check_snapshot(h, rd.snapshot)
        if rd.truncate_to is not None and rd.truncate_to < h.last_hw:
            self.fail(f"I5 node {h.node_id} truncates to {rd.truncate_to} below high watermark {h.last_hw}")

    def on_vote_sent(self, h: Host, candidate: int, resp: m.VoteResponse) -> None:
        qs = h.disk.quorum_state
        # The disk must hold this vote, or an epoch beyond it (which can never vote in it again).
        if qs.leader_epoch < resp.leader_epoch or (qs.leader_epoch == resp.leader_epoch and qs.voted_id != candidate):
            self.fail(f"I3 node {h.node_id} granted epoch {resp.leader_epoch} vote to {candidate} "
                      f"before persisting it (disk has {qs})")
        prev = self.votes.setdefault((h.node_id, h.disk_generation, resp.leader_epoch), candidate)
        if prev != candidate:
            self.fail(f"I3 node {h.node_id} voted twice in epoch {resp.leader_epoch}: {prev} and {candidate}")

    def on_apply(self, h: Host, rd: Ready) -> None:
        if rd.apply_snapshot is not None:
            h.applied = list(self.check_snapshot(h, rd.apply_snapshot))
        for e in rd.committed:
            if e.offset != len(h.applied):
                self.fail(f"I7 node {h.node_id} applies offset {e.offset} after {len(h.applied)}")
            if e.offset >= len(self.committed) or self.committed[e.offset] != (e.epoch, e.payload):
                self.fail(f"I7 node {h.node_id} applies uncommitted/different record at {e.offset}")
            h.applied.append((e.offset, e.epoch, e.payload))
            if e.control and e.control_type == VOTERS:
                self.check_voter_change(e.offset, frozenset(decode_voters(e.payload)))
                if self.sim.sc.upgrade and self.upgrade_offset == e.offset - 1:
                    infos = decode_voters(e.payload)
                    if set(infos) != set(self.sim.sc.voters) or any(v.directory_id == ZERO_UUID
                                                                    for v in infos.values()):
                        self.fail(f"I9 the upgrade wrote voters {infos} for static voters {self.sim.sc.voters}")
            if e.control and e.control_type == KRAFT_VERSION and self.upgrade_offset is None:
                self.upgrade_offset = e.offset
        n = h.node
        if n is not None and n.dynamic:
            latest = None
            for off in range(n.log.start_offset, n.log.end_offset):
                e = n.log.entry(off)
                if e.control and e.control_type == VOTERS:
                    latest = frozenset(decode_voters(e.payload))
            if latest is not None and latest != n.voters:
                self.fail(f"I8 node {h.node_id} uses voters {sorted(n.voters)}, its log's latest "
                          f"VotersRecord says {sorted(latest)}")

    def check_voter_change(self, offset: int, ids: frozenset) -> None:
        known = self.voter_sets.setdefault(offset, ids)
        if known != ids:
            self.fail(f"I8 committed VotersRecord at {offset} differs: {sorted(ids)} / {sorted(known)}")
        before = [o for o in self.voter_sets if o < offset]
        prev = self.voter_sets[max(before)] if before else frozenset(self.sim.sc.voters)
        if len(prev ^ ids) > 1:
            self.fail(f"I8 voter set changed by more than one voter at {offset}: "
                      f"{sorted(prev)} -> {sorted(ids)}")


# ------------------------------------------------------------------ the simulation

class Simulation:
    def __init__(self, seed: int, profile: str = "quick", scenario: Scenario | None = None,
                 trace: bool = False) -> None:
        self.seed = seed
        self.profile = profile
        self.sc = scenario or Scenario.from_seed(seed, profile)
        self.rng = random.Random(seed)
        self.now = 0
        self._queue: list = []
        self._seq = 0
        self.hosts = {i: Host(i) for i in self.sc.voters + self.sc.observers}
        if self.sc.dynamic:
            for i in self.sc.voters:
                self.hosts[i].disk.snapshot = initial_snapshot(self.sc.voters)
        self.groups: dict[int, int] = {i: 0 for i in self.hosts}
        self.cut: set[tuple[int, int]] = set()
        self.drop = self.sc.drop
        self.dup = self.sc.dup
        self.spike = self.sc.spike
        self.healed = False
        self.checker = Checker(self)
        self.vote_requests: dict[tuple[int, int, int], bool] = {}
        self.events = 0
        self.history: deque = deque(maxlen=80)
        self.print_trace = trace
        self.marker_epoch = -1
        self.marker_offset = -1
        self.converged_at: int | None = None
        self.counters = {"delivered": 0, "dropped": 0, "crashes": 0, "partitions": 0, "proposals": 0}

    # --- event queue ----------------------------------------------------------------------

    def at(self, when: int, kind: str, *args) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (when, self._seq, kind, args))

    def note(self, *what) -> None:
        if self.print_trace:
            print(self.now, *what)
        self.history.append((self.now,) + what)

    def run(self) -> "Simulation":
        sc = self.sc
        for h in self.hosts.values():
            self.start(h)
        self.at(self.rng.randrange(sc.propose_every_ms), "propose")
        self.at(self.rng.randrange(sc.fault_every_ms), "fault")
        self.at(sc.chaos_ms, "heal")
        deadline = sc.chaos_ms + sc.converge_bound_ms
        try:
            while self._queue:
                when, _, kind, args = heapq.heappop(self._queue)
                if when > deadline:
                    self.fail_convergence()
                self.now = when
                self.events += 1
                getattr(self, "on_" + kind)(*args)
                for h in self.hosts.values():
                    self.checker.check_host(h)
                if self.converged_at is not None:
                    return self
            self.fail_convergence()
        except SimFailure as exc:
            raise SimFailure(self.report(str(exc))) from None
        except Exception as exc:  # a crash of the core is a failure of this seed too
            raise SimFailure(self.report(f"{type(exc).__name__}: {exc}")) from exc
        return self

    def fail_convergence(self) -> None:
        state = {i: (h.node.role.value, h.node.epoch, h.node.leader_id, h.node.high_watermark,
                     h.node.log.end_offset, sorted(h.node.voters), h.node.log.last_epoch)
                 if h.node else "down" for i, h in self.hosts.items()}
        raise SimFailure(f"no convergence within {self.sc.converge_bound_ms} ms after healing: {state}")

    def report(self, text: str) -> str:
        lines = [f"raft simulation seed {self.seed} failed at t={self.now} ms (event {self.events}): {text}",
                 f"scenario: {self.sc}",
                 f"reproduce: {reproduce_command(self.seed, self.profile)}",
                 "last events:"]
        lines += ["  " + " ".join(str(x) for x in ev) for ev in list(self.history)[-40:]]
        return "\n".join(lines)

    # --- node lifecycle ---------------------------------------------------------------------

    def start(self, h: Host) -> None:
        h.life += 1
        directory_id, endpoints = sim_identity(h.node_id, h.disk_generation) if self.sc.upgrade else (None, ())
        voters, bootstrap = ((), self.sc.voters) if self.sc.dynamic else (self.sc.voters, ())
        if h.disk_generation:
            # a replaced disk is formatted as a joining controller (--no-initial-controllers,
            # controller.quorum.bootstrap.servers), as an upgraded quorum's operator must: on
            # the static list an empty disk of a one-voter list would lead alone
            voters, bootstrap = (), tuple(i for i in sorted(self.hosts) if i != h.node_id)
        h.node = RaftNode(h.node_id, voters, h.disk.view(),
                          self.sc.config, random.Random(f"{self.seed}-{h.node_id}-{h.life}"),
                          bootstrap_ids=bootstrap, directory_id=directory_id, endpoints=endpoints)
        h.clock = h.born = self.now
        h.rate = self.sc.drift[h.node_id]
        h.pending = None
        h.applied = []
        h.max_epoch = h.node.epoch
        h.last_hw = h.node.high_watermark
        h.checked_to = h.node.high_watermark
        h.was_leader_epoch = -1
        if h.disk.snapshot is not None:
            self.checker.check_snapshot(h, h.disk.snapshot)
        self.note("start", h.node_id, "life", h.life)
        self.pump(h)

    def crash(self, h: Host) -> None:
        rd = h.pending
        if rd is not None and self.rng.random() < 0.5:
            # torn: the driver got part-way through persisting (nothing of it was sent)
            steps = self.rng.randrange(1, 7)
            appended = self.rng.randrange(len(rd.append_entries) + 1)
            while appended and joined_to_next(rd.append_entries[appended - 1]):
                appended -= 1    # one batch on disk: torn before it or not at all
            h.disk.apply(rd, steps, appended)
            self.checker.on_persisted(h, rd, torn=True)
            self.note("crash", h.node_id, f"torn write (steps {steps}, {appended} records)")
        else:
            self.note("crash", h.node_id, "unflushed" if rd else "")
        h.node = None
        h.pending = None
        h.wake_at = None
        self.counters["crashes"] += 1

    def sync(self, h: Host) -> None:
        if self.now > h.clock:
            local = int((self.now - h.born) * h.rate)
            h.node.tick(max(0, local - h.node.now))
            h.clock = self.now

    def pump(self, h: Host) -> None:
        n = h.node
        if n is None:
            return
        if h.pending is None and n.has_ready():
            h.pending = n.ready()
            delay = 0 if self.rng.random() < 0.3 else self.rng.randrange(1, self.sc.max_disk_ms + 1)
            self.at(self.now + delay, "flush", h.node_id, h.life)
        t = n.time_until_next_timer()
        if t is not None:
            when = self.now + max(1, -(-t * 1000 // int(h.rate * 1000)))
            if h.wake_at is None or when < h.wake_at or h.wake_at < self.now:
                h.wake_token += 1
                h.wake_at = when
                self.at(when, "wake", h.node_id, h.wake_token)

    # --- events ---------------------------------------------------------------------------

    def on_wake(self, node_id: int, token: int) -> None:
        h = self.hosts[node_id]
        if h.node is None or token != h.wake_token:
            return
        h.wake_at = None
        self.sync(h)
        self.pump(h)

    def on_flush(self, node_id: int, life: int) -> None:
        h = self.hosts[node_id]
        if h.node is None or h.life != life or h.pending is None:
            return
        rd, h.pending = h.pending, None
        self.sync(h)
        h.disk.apply(rd)
        self.checker.on_persisted(h, rd)
        for dest, msg in rd.messages:
            if isinstance(msg, m.VoteResponse) and msg.vote_granted:
                if not self.vote_requests.get((node_id, dest, msg.correlation_id), True):
                    self.checker.on_vote_sent(h, dest, msg)
            self.send(node_id, dest, msg)
        self.checker.on_apply(h, rd)
        if rd.role_change is not None:
            self.note("role", node_id, rd.role_change.role.value, "epoch", rd.role_change.epoch,
                      "leader", rd.role_change.leader_id)
        h.node.advance(rd)
        n = h.node
        if rd.should_snapshot and self.rng.random() < self.sc.snapshot_prob:
            self.take_snapshot(h)
        self.pump(h)

    def take_snapshot(self, h: Host) -> None:
        n = h.node
        if n.applied_offset > n.log.start_offset:
            assert len(h.applied) == n.applied_offset
            snap = n.create_snapshot(n.applied_offset, encode_image(h.applied))
            self.note("snapshot", h.node_id, snap.snapshot_id)

    def send(self, src: int, dst: int, msg) -> None:
        r = self.rng
        if dst not in self.hosts or self.blocked(src, dst) or r.random() < self.drop:
            self.counters["dropped"] += 1
            return
        copies = 2 if r.random() < self.dup else 1
        for _ in range(copies):
            delay = r.randrange(1, self.sc.max_delay_ms + 1)
            if r.random() < self.spike:
                delay += r.randrange(50, 1500)
            self.at(self.now + delay, "deliver", src, dst, msg)

    def blocked(self, src: int, dst: int) -> bool:
        return self.groups[src] != self.groups[dst] or (src, dst) in self.cut

    def on_deliver(self, src: int, dst: int, msg) -> None:
        h = self.hosts[dst]
        if h.node is None or self.blocked(src, dst):
            self.counters["dropped"] += 1
            return
        self.counters["delivered"] += 1
        if isinstance(msg, m.VoteRequest):
            self.vote_requests[(dst, src, msg.correlation_id)] = msg.pre_vote
        self.sync(h)
        self.note("deliver", src, "->", dst, describe(msg))
        h.node.step(src, msg)
        self.pump(h)

    def on_propose(self) -> None:
        if self.healed:
            return
        live = [h for h in self.hosts.values() if h.node is not None]
        if live:
            leaders = [h for h in live if h.node.role is Role.LEADER]
            h = self.rng.choice(leaders) if leaders and self.rng.random() < 0.9 else self.rng.choice(live)
            self.sync(h)
            payloads = [f"p{self.counters['proposals'] + i}-".encode() + bytes(self.rng.randrange(0, 50))
                        for i in range(self.rng.randrange(1, 4))]
            res = h.node.propose(payloads)
            if not isinstance(res, NotLeader):
                self.counters["proposals"] += len(payloads)
                self.note("propose", h.node_id, "->", res)
            self.pump(h)
        self.at(self.now + self.rng.randrange(1, 2 * self.sc.propose_every_ms), "propose")

    def on_fault(self) -> None:
        if self.healed:
            return
        r = self.rng
        ids = sorted(self.hosts)
        kinds = ["crash", "crash_leader", "partition", "partition", "cut", "heal_net", "resign", "snapshot"]
        if self.sc.dynamic:
            kinds += ["reconfigure"] * 4
        if self.sc.upgrade:
            kinds += ["upgrade"] * 4 + ["reconfigure"] * 3 + ["reformat"]
        kind = r.choice(kinds)
        if kind in ("reconfigure", "upgrade", "reformat"):
            getattr(self, kind)()
            self.at(self.now + r.randrange(1, 2 * self.sc.fault_every_ms), "fault")
            return
        if kind in ("crash", "crash_leader"):
            leaders = [i for i in ids if self.hosts[i].node is not None and self.hosts[i].node.role is Role.LEADER]
            h = self.hosts[r.choice(leaders if kind == "crash_leader" and leaders else ids)]
            if h.node is not None:
                self.crash(h)
                self.at(self.now + r.randrange(10, 3000), "restart", h.node_id)
        elif kind == "partition":
            self.counters["partitions"] += 1
            k = r.randrange(2, 4)
            self.groups = {i: r.randrange(k) for i in ids}
            self.note("partition", self.groups)
            self.at(self.now + r.randrange(100, 4000), "heal_net")
        elif kind == "cut":
            a, b = r.sample(ids, 2) if len(ids) > 1 else (ids[0], ids[0])
            self.cut.add((a, b))
            self.note("cut", a, "->", b)
            self.at(self.now + r.randrange(100, 4000), "heal_net")
        elif kind == "heal_net":
            self.on_heal_net()
        elif kind == "snapshot":
            h = self.hosts[r.choice(ids)]
            if h.node is not None and h.pending is None:
                self.take_snapshot(h)
                self.pump(h)
        else:
            for h in self.hosts.values():
                if h.node is not None and h.node.role is Role.LEADER:
                    self.sync(h)
                    h.node.resign()
                    self.note("resign", h.node_id)
                    self.pump(h)
        self.at(self.now + r.randrange(1, 2 * self.sc.fault_every_ms), "fault")

    def _a_leader(self) -> Host | None:
        leaders = [h for h in self.hosts.values() if h.node is not None and h.node.role is Role.LEADER]
        if not leaders:
            return None
        lh = self.rng.choice(leaders)
        self.sync(lh)
        return lh

    def _replaced(self, n: RaftNode) -> list[int]:
        """Voters (as ``n`` sees them) whose entry names another disk than the host's now."""
        return [v for v, info in (n.voter_infos or {}).items()
                if info.directory_id not in (ZERO_UUID, sim_identity(v, self.hosts[v].disk_generation)[0])]

    def reconfigure(self) -> None:
        """Ask the leader (if any) to add a non-voter or remove a voter (KIP-853); in the
        upgrade profile a re-formatted voter is repaired first (remove its old entry, then
        add its new disk), as auto-join does."""
        lh = self._a_leader()
        if lh is None:
            return
        n = lh.node
        ident = (lambda v: sim_identity(v, self.hosts[v].disk_generation)) if self.sc.upgrade else None
        replaced = self._replaced(n) if self.sc.upgrade else []
        others = sorted(set(self.hosts) - n.voters)
        if replaced:
            vid = replaced[0]
            err, off = n.remove_voter(vid, n.voter_infos[vid].directory_id)
            what = "remove replaced"
        elif others and (len(n.voters) == 1 or self.rng.random() < 0.5):
            # a re-formatted node out of the set is mostly added back (auto-join's second step)
            fresh = [v for v in others if self.hosts[v].disk_generation]
            vid = self.rng.choice(fresh if fresh and self.rng.random() < 0.7 else others)
            err, off = n.add_voter(Voter(vid, *ident(vid)) if ident else Voter(vid))
            what = "add"
        else:
            vid = self.rng.choice(sorted(n.voters))
            err, off = n.remove_voter(vid)
            what = "remove"
        self.counters["reconfigurations"] = self.counters.get("reconfigurations", 0) + (err == 0)
        self.note("reconfigure", lh.node_id, what, vid, "->", "catching up" if err == CATCHING_UP else err, off)
        self.pump(lh)

    def upgrade(self) -> None:
        """KAFKA-16538: the voters following the leader tell it who they are (UpdateRaftVoter,
        some of them), then kraft.version 1 is asked for."""
        lh = self._a_leader()
        if lh is None:
            return
        n = lh.node
        told = []
        for h in self.hosts.values():
            f = h.node
            if (f is not None and f is not n and f.role is Role.FOLLOWER and f.leader_id == lh.node_id
                    and f.epoch == n.epoch and f.is_voter and self.rng.random() < 0.8):
                if n.update_voter(f.local_voter())[0] == m.NONE:
                    told.append(h.node_id)
        validate_only = self.rng.random() < 0.2
        r = n.upgrade_kraft_version(n.epoch, 1, validate_only)
        self.counters["upgrades"] = self.counters.get("upgrades", 0) + (r.offset >= 0)
        self.note("upgrade", lh.node_id, "told by", told, "validate-only" if validate_only else "",
                  "->", r.error_code, r.offset)
        self.pump(lh)

    def reformat(self) -> None:
        """A dynamic quorum's voter loses its disk: crash, empty disk, new directory id."""
        lh = self._a_leader()
        if lh is None or not lh.node.dynamic or len(lh.node.voters) < 3 or self._replaced(lh.node):
            return
        victims = [v for v in sorted(lh.node.voters) if v != lh.node_id and self.hosts[v].node is not None]
        if not victims:
            return
        # Only once every other node's disk holds the voter set with directory ids (so also no
        # earlier re-formatted disk is still catching up): a replica still on the static set
        # names no directory id in its Vote, so an empty disk would grant it, and an empty
        # disk on the static set may campaign (Kafka alike: losing a disk that held part of a
        # majority is outside Raft's fault model unless the voter keys protect it).
        victim = self.rng.choice(victims)
        if not all(self._disk_is_dynamic(h) for h in self.hosts.values() if h.node_id != victim):
            return
        h = self.hosts[victim]
        self.crash(h)
        h.disk = Disk()
        h.disk_generation += 1
        self.checker.disk_epoch.pop(h.node_id, None)
        self.counters["reformats"] = self.counters.get("reformats", 0) + 1
        self.note("reformat", h.node_id, "generation", h.disk_generation)
        self.at(self.now + self.rng.randrange(10, 2000), "restart", h.node_id)

    @staticmethod
    def _disk_is_dynamic(h: Host) -> bool:
        snap = h.disk.snapshot
        if snap is not None and snapshot_voters(snap.data):
            return True
        return any(e.control and e.control_type == VOTERS for e in h.disk.entries)

    def on_heal_net(self) -> None:
        self.groups = {i: 0 for i in self.hosts}
        self.cut = set()
        self.note("heal network")

    def on_restart(self, node_id: int) -> None:
        h = self.hosts[node_id]
        if h.node is None:
            self.start(h)

    def on_heal(self) -> None:
        self.healed = True
        self.drop = 0.0
        self.dup = 0.0
        self.spike = 0.0
        self.on_heal_net()
        for h in self.hosts.values():
            if h.node is None:
                self.start(h)
        self.note("heal all")
        self.at(self.now + 50, "probe")

    def on_probe(self) -> None:
        """After healing: write one fresh record per leader epoch, then wait for everyone."""
        leaders = [h for h in self.hosts.values() if h.node.role is Role.LEADER]
        if len(leaders) == 1:
            lh = leaders[0]
            leader = lh.node
            if self.marker_epoch != leader.epoch:
                self.sync(lh)
                self.marker_offset = leader.propose([f"marker-{leader.epoch}".encode()])
                self.marker_epoch = leader.epoch
                self.pump(lh)
            elif self.converged(lh):
                self.converged_at = self.now
                self.note("converged")
                return
        self.at(self.now + 50, "probe")

    def converged(self, lh: Host) -> bool:
        leader = lh.node
        end = leader.log.end_offset
        if leader.high_watermark != end or leader.high_watermark <= self.marker_offset:
            return False
        for h in self.hosts.values():
            n = h.node
            if n.epoch != leader.epoch or n.leader_id != lh.node_id:
                return False
            if n.high_watermark != end or n.log.end_offset != end or n.applied_offset != end \
                    or len(h.applied) != end or h.pending is not None:
                return False
        return True


def run_seed(seed: int, profile: str = "quick", trace: bool = False) -> Simulation:
    return Simulation(seed, profile, trace=trace).run()
