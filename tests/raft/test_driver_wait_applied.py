"""``RaftDriver.wait_applied``: a record proposed by a leader that lost its leadership before
the record committed is reported as not committed, even once this node has applied the new
leader's records past that offset (the quorum controller answers AlterPartition from it: a
wrong "committed" made a partition leader believe in an ISR the metadata never had)."""
from __future__ import annotations

import trio

from kbroker.raft import RaftConfig, Role
from kbroker.raft.driver import RaftDriver

from .harness import Cluster


def _waiter(node) -> RaftDriver:
    """The driver's wait over a hand-driven node (only ``node`` and the applied event)."""
    d = RaftDriver.__new__(RaftDriver)
    d.node = node
    d._applied_event = trio.Event()
    return d


def _elect(c: Cluster) -> int:
    for _ in range(100):
        c.settle(rounds=50, tick_ms=50)
        live = [i for i in c.leaders() if i not in c.cut]
        if live:
            return live[0]
    raise AssertionError("no leader")


def test_a_truncated_proposal_is_not_reported_committed():
    c = Cluster([1, 2, 3], config=RaftConfig(pre_vote=False))
    old = _elect(c)
    committed_offset = c.nodes[old].propose([b"committed"])
    committed_epoch = c.nodes[old].epoch
    c.settle()
    assert c.nodes[old].applied_offset > committed_offset

    c.cut.add(old)                             # the leader is partitioned away...
    epoch = c.nodes[old].epoch
    lost = c.nodes[old].propose([b"lost"])     # ...with a record only it holds
    c.flush()
    new = None
    for _ in range(200):
        c.tick(50, *[i for i in c.nodes if i != old])
        c.deliver()
        leaders = [i for i in c.leaders() if i != old]
        if leaders and c.nodes[leaders[0]].epoch > epoch:
            new = leaders[0]
            break
    assert new is not None, "the others elect a new leader"
    c.nodes[new].propose([b"replacement-1", b"replacement-2"])
    c.settle()
    c.cut.discard(old)                         # the old leader comes back, truncates, follows
    for _ in range(50):
        c.settle(rounds=50, tick_ms=50)
        if c.nodes[old].role is Role.FOLLOWER and c.nodes[old].applied_offset > lost:
            break
    node = c.nodes[old]
    assert node.role is Role.FOLLOWER and node.applied_offset > lost
    assert node.log.entry(lost).epoch != epoch, "the old leader's record was replaced"

    assert trio.run(_waiter(node).wait_applied, lost, epoch) is False
    # a record that did commit in the old epoch still counts once leadership moved on
    assert trio.run(_waiter(node).wait_applied, committed_offset, committed_epoch) is True
