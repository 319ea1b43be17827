"""A deterministic driver for the pure GroupManager: a fake clock in milliseconds, slots
that record replies, and an in-memory ``__consumer_offsets`` (appended records, with an
optional injected append failure). No trio, no sleeping.

The fake clock has the broker's two readings: ``now`` (wall) and ``mono`` (monotonic, what
the timers run on). :meth:`Harness.advance` moves both; :meth:`Harness.step_wall` steps
only the wall clock, as NTP or a resumed VM does."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from kbroker.group.manager import GroupConfig, GroupManager, JoinRequest, Result
from kbroker.wire.error_codes import ErrorCode as E


class Slot:
    """A parked request: the manager hands its reply to ``set`` via the harness."""
    _ids = itertools.count()

    def __init__(self, label=""):
        self.label = label or f"slot{next(self._ids)}"
        self.replies = []

    @property
    def done(self):
        return bool(self.replies)

    @property
    def value(self):
        assert len(self.replies) == 1, f"{self.label}: replies {self.replies}"
        return self.replies[0]

    def __repr__(self):
        return f"Slot({self.label})"


def consumer_meta(topics, userdata=b""):
    """ConsumerProtocolSubscription v0 bytes."""
    out = bytearray(b"\x00\x00") + len(topics).to_bytes(4, "big")
    for t in topics:
        b = t.encode()
        out += len(b).to_bytes(2, "big") + b
    out += len(userdata).to_bytes(4, "big") + userdata
    return bytes(out)


def advance_clocks(h, ms: int) -> None:
    """Let ``ms`` pass on ``h``'s clocks (``now``, ``mono``), firing ``h.mgr``'s timers at
    their exact (monotonic) deadlines with the wall-clock time of that moment."""
    target = h.mono + ms
    for _ in range(100_000):
        d = h.mgr.next_deadline()
        if d is None or d > target:
            break
        step = max(d - h.mono, 0)
        h.now, h.mono = h.now + step, h.mono + step
        h.drive(h.mgr.fire_due(h.now, h.mono))
    else:
        raise AssertionError(f"a timer due at {d} never fires (monotonic clock {h.mono})")
    h.now, h.mono = h.now + (target - h.mono), target


@dataclass
class Harness:
    config: GroupConfig = field(default_factory=lambda: GroupConfig(initial_rebalance_delay_ms=3000))
    now: int = 0                                     # wall clock
    mono: int | None = None                          # monotonic clock (default: = now)
    log: list = field(default_factory=list)          # appended CoordinatorRecords
    fail_next_append: int = 0                        # error code for the next append
    loaded: bool = True

    def __post_init__(self):
        if self.mono is None:
            self.mono = self.now
        ids = itertools.count(1)
        self.mgr = GroupManager(self.config, member_id_factory=lambda p: f"{p}-{next(ids)}")
        if self.loaded:
            for p in range(self.config.num_partitions):
                self.mgr.begin_load(p)
                self.drive(self.mgr.complete_load(p, self.now, self.mono))

    # ------------------------------------------------------------- plumbing
    def drive(self, res: Result):
        response = res.response
        while True:
            for slot, reply in res.replies:
                slot.replies.append(reply)
            if not res.records:
                return response
            err = self.fail_next_append
            self.fail_next_append = 0
            if not err:
                self.log.extend(res.records)
            res = self.mgr.after_append(res, err, self.now, self.mono)
            if res.response is not None:
                response = res.response

    def advance(self, ms: int):
        """Let ``ms`` pass (both clocks move), firing timers at their exact deadlines."""
        advance_clocks(self, ms)

    def step_wall(self, ms: int):
        """Step the wall clock alone by ``ms`` (negative: back); no time passes."""
        self.now += ms

    def advance_until(self, cond, limit_ms=10**7):
        """Jump from deadline to deadline until ``cond()`` holds."""
        end = self.mono + limit_ms
        while not cond():
            d = self.mgr.next_deadline()
            assert d is not None and d <= end, "condition never met"
            self.advance(max(d - self.mono, 0))

    def advance_to(self, t: int):
        """Advance until the wall clock reads ``t``."""
        self.advance(t - self.now)

    # ------------------------------------------------------------- events
    def join(self, group="g", member_id="", *, protocols=(("range", b"m"),), ptype="consumer",
             session=10000, rebalance=30000, instance=None, version=9, client="c"):
        slot = Slot(f"join:{member_id or client}")
        req = JoinRequest(group_id=group, member_id=member_id, protocol_type=ptype,
                          protocols=list(protocols), session_timeout_ms=session,
                          rebalance_timeout_ms=rebalance, group_instance_id=instance,
                          client_id=client, client_host="/127.0.0.1", api_version=version)
        self.drive(self.mgr.join_group(req, slot, self.now, self.mono))
        return slot

    def join_new(self, group="g", **kw):
        """KIP-394 two-step join; returns the parked slot of the second JoinGroup."""
        first = self.join(group, **kw)
        assert first.value.error == E.MEMBER_ID_REQUIRED, first.value
        return self.join(group, first.value.member_id, **kw)

    def sync(self, group, member_id, generation, assignments=(), *, instance=None,
             ptype=None, pname=None):
        slot = Slot(f"sync:{member_id}")
        self.drive(self.mgr.sync_group(group, member_id, generation, instance, ptype, pname,
                                       list(assignments), slot, self.now, self.mono))
        return slot

    def heartbeat(self, group, member_id, generation, instance=None):
        return self.drive(self.mgr.heartbeat(group, member_id, generation, instance, self.now,
                                             self.mono))

    def leave(self, group, *members):
        return self.drive(self.mgr.leave_group(
            group, [(m, None) if isinstance(m, str) else m for m in members], self.now,
            self.mono))

    def commit(self, group, offsets, member_id="", generation=-1, instance=None, version=9,
               retention=-1):
        topics = {}
        for (t, p), o in offsets.items():
            off, meta = o if isinstance(o, tuple) else (o, "")
            topics.setdefault(t, []).append((p, off, -1, meta))
        return self.drive(self.mgr.commit_offsets(group, member_id, generation, instance,
                                                  list(topics.items()), self.now,
                                                  retention_ms=retention, api_version=version,
                                                  mono_ms=self.mono))

    def fetch(self, group, topics=None, require_stable=False):
        err, res = self.mgr.fetch_offsets(group, topics, require_stable)
        assert err == 0, err
        return {(t, p[0]): (p[1], p[3], p[4]) for t, ps in res for p in ps}

    def group(self, gid="g"):
        return self.mgr.groups.get(gid)

    def state(self, gid="g"):
        g = self.group(gid)
        return None if g is None else g.state.value

    # ------------------------------------------------------------- scenarios
    def stable_group(self, n=2, group="g", **kw):
        """n members through a full rebalance to Stable; returns (member ids, generation)."""
        slots = [self.join_new(group, client=f"c{i}", **kw) for i in range(n)]
        self.advance_until(lambda: all(s.done for s in slots))
        replies = [s.value for s in slots]
        assert all(r.error == 0 for r in replies), replies
        gen = replies[0].generation_id
        leader = replies[0].leader
        ids = [r.member_id for r in replies]
        syncs = []
        for mid in ids:
            if mid != leader:
                syncs.append(self.sync(group, mid, gen))
        syncs.append(self.sync(group, leader, gen, [(m, f"assign-{m}".encode()) for m in ids]))
        assert all(s.value.error == 0 for s in syncs), [s.value for s in syncs]
        assert self.state(group) == "Stable"
        return ids, gen
