"""A hand-driven cluster for scripted Raft traces: the test decides which messages arrive.

Each node has a ``Disk`` (from ``sim``) and follows the driver contract literally: ``flush``
takes a ``Ready``, persists it, queues its messages in ``net`` and applies committed records.
Nothing is delivered until the test calls ``deliver``/``settle``.
"""
from __future__ import annotations

import random

from kbroker.raft import RaftConfig, RaftNode, Ready, Role
from kbroker.raft import messages as m

from .sim import Disk


class Cluster:
    def __init__(self, voters, observers=(), config: RaftConfig | None = None, disks=None, seed: int = 0,
                 dynamic: bool = False, identities: bool = False):
        """``dynamic``: a KIP-853 quorum, ``voters`` formatted with the 0-0 voters snapshot,
        ``observers`` joining through them as bootstrap servers. ``identities``: every node
        has a directory id and a controller endpoint (``identity``), as a formatted node."""
        self.voters = list(voters)
        self.dynamic = dynamic
        self.identities = identities
        self.config = config or RaftConfig(pre_vote=False)
        self.seed = seed
        self.disks: dict[int, Disk] = {i: Disk() for i in self.voters + list(observers)}
        if dynamic:
            from .sim import initial_snapshot
            for i in self.voters:
                self.disks[i].snapshot = initial_snapshot(self.voters, identity if identities else None)
        self.directory_ids: dict[int, str] = {}    # a node's directory id when not identity()'s
        self.disks.update(disks or {})
        self.nodes: dict[int, RaftNode] = {}
        self.applied: dict[int, list] = {}
        self.readies: dict[int, list[Ready]] = {i: [] for i in self.disks}
        self.net: list[tuple[int, int, object]] = []
        self.cut: set[int] = set()       # isolated nodes: everything to/from them is dropped
        self.lives = {i: 0 for i in self.disks}
        for i in self.disks:
            self.start(i)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self, i: int) -> RaftNode:
        self.lives[i] += 1
        directory_id, endpoints = identity(i) if self.identities else (None, ())
        directory_id = self.directory_ids.get(i, directory_id)
        n = RaftNode(i, () if self.dynamic else self.voters, self.disks[i].view(), self.config,
                     random.Random(f"{self.seed}-{i}-{self.lives[i]}"),
                     bootstrap_ids=self.voters if self.dynamic else (), directory_id=directory_id,
                     endpoints=endpoints)
        self.nodes[i] = n
        self.applied[i] = []
        return n

    def crash(self, i: int) -> None:
        """Lose everything not flushed; messages already queued stay in flight."""
        del self.nodes[i]

    # --- driving ------------------------------------------------------------------------

    def flush(self, *ids: int) -> None:
        for i in ids or list(self.nodes):
            n = self.nodes.get(i)
            while n is not None and n.has_ready():
                rd = n.ready()
                self.readies[i].append(rd)
                self.disks[i].apply(rd)
                for dest, msg in rd.messages:
                    self.net.append((i, dest, msg))
                if rd.apply_snapshot is not None:
                    self.applied[i] = [("snapshot", rd.apply_snapshot.snapshot_id)]
                self.applied[i].extend(e.payload for e in rd.committed)
                n.advance(rd)

    def tick(self, ms: int, *ids: int) -> None:
        for i in ids or list(self.nodes):
            self.nodes[i].tick(ms)
        self.flush()

    def deliver(self, pred=lambda src, dst, msg: True) -> int:
        """Deliver (in order) every queued message matching ``pred``; returns how many."""
        batch = [x for x in self.net if pred(*x)]
        self.net = [x for x in self.net if not pred(*x)]
        count = 0
        for src, dst, msg in batch:
            if src in self.cut or dst in self.cut or dst not in self.nodes:
                continue
            self.nodes[dst].step(src, msg)
            self.flush(dst)
            count += 1
        return count

    def settle(self, rounds: int = 200, tick_ms: int = 0) -> None:
        """Deliver until the network is quiet (leaders' parked fetches are long polls, so
        a quiet network is the normal steady state)."""
        for _ in range(rounds):
            self.flush()
            if not self.net:
                if not tick_ms:
                    return
                self.tick(tick_ms)
                continue
            self.deliver()

    # --- queries ------------------------------------------------------------------------

    def leaders(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.role is Role.LEADER]

    def sent(self, kind, src=None) -> list:
        return [msg for s, _, msg in self.net if isinstance(msg, kind) and (src is None or s == src)]


def identity(node_id: int) -> tuple[str, tuple]:
    """A node's metadata log directory id (Kafka's base64 form) and controller endpoint."""
    import base64
    import uuid
    raw = uuid.UUID(int=(0xD1 << 120) | node_id).bytes
    return (base64.urlsafe_b64encode(raw).rstrip(b"=").decode(),
            (("CONTROLLER", f"node-{node_id}", 9093),))


def elect(cluster: Cluster, who: int) -> None:
    """Make ``who`` time out first and win (with pre-vote, via its pre-vote round)."""
    cfg = cluster.config
    n = cluster.nodes[who]
    n.tick(cfg.election_timeout_ms * 2)
    if n.role is Role.FOLLOWER:
        n.tick(cfg.fetch_timeout_ms)
    cluster.flush()
    cluster.settle()
    assert n.role is Role.LEADER, n.statistics()


def depose_and_heal(cluster: Cluster, leader: int) -> int:
    """Cut ``leader`` off with what it has not replicated yet (messages in flight are lost),
    let the others elect a leader of their own, then heal: the new leader's id."""
    cluster.flush()
    cluster.net.clear()
    cluster.cut.clear()
    cluster.cut.add(leader)
    for _ in range(40):
        cluster.settle(tick_ms=100)
    [new] = cluster.leaders()
    assert new != leader
    cluster.cut.clear()
    for _ in range(40):
        cluster.settle(tick_ms=100)
    return new


def is_vote_response(granted: bool | None = None):
    def pred(src, dst, msg):
        return isinstance(msg, m.VoteResponse) and (granted is None or msg.vote_granted == granted)
    return pred
