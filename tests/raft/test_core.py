"""Scripted traces of the Raft core: one readable scenario per rule.

Each test drives a ``Cluster`` (tests/raft/harness.py) by hand: which node's clock moves, which
messages arrive. The randomized counterpart is tests/raft/test_sim.py.
"""
from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from kbroker.raft import (Entry, NotLeader, OffsetAndEpoch, QuorumState, RaftConfig, RaftLog, RaftNode,
                          Role, Snapshot, StorageView)
from kbroker.raft import messages as m
from kbroker.raft.log import FetchValidation

from .harness import Cluster, elect
from .sim import Disk


def E(offset: int, epoch: int, payload: bytes | str = b"") -> Entry:
    if isinstance(payload, str):
        payload = payload.encode()
    return Entry(offset, epoch, payload or f"r{offset}".encode())


def disk(epoch: int, entries: list[Entry], voted: int = -1, leader: int = -1) -> Disk:
    return Disk(quorum_state=QuorumState(leader_id=leader, leader_epoch=epoch, voted_id=voted),
                entries=list(entries))


def payloads(node: RaftNode) -> list[bytes]:
    return [e.payload for e in node.log.entries(node.log.start_offset, node.log.end_offset)]


# ----------------------------------------------------------------------------- elections

def test_single_voter_elects_itself_and_commits_alone():
    c = Cluster([1])
    c.tick(2000)
    n = c.nodes[1]
    assert (n.role, n.epoch) == (Role.LEADER, 1)
    assert n.log.entry(0).control, "a new leader starts its epoch with a LeaderChange control record"
    assert n.propose([b"a", b"b"]) == 2
    c.flush()
    assert n.high_watermark == 3
    assert c.applied[1][1:] == [b"a", b"b"]


def test_election_then_replication_by_fetching():
    c = Cluster([1, 2, 3])
    elect(c, 1)
    assert [c.nodes[i].role for i in (2, 3)] == [Role.FOLLOWER, Role.FOLLOWER]
    assert {c.nodes[i].leader_id for i in (2, 3)} == {1}
    assert all(d.quorum_state == QuorumState(leader_id=1 if i != 1 else 1, leader_epoch=1, voted_id=1)
               for i, d in c.disks.items())
    off = c.nodes[1].propose([b"x", b"y"])
    assert c.nodes[2].propose([b"z"]) == NotLeader(leader_id=1, leader_epoch=1)
    c.settle()
    for i in (1, 2, 3):
        assert c.nodes[i].high_watermark == off + 1
        assert c.applied[i][-2:] == [b"x", b"y"]


def test_vote_is_persisted_in_the_same_ready_as_the_reply():
    c = Cluster([1, 2, 3])
    n3 = c.nodes[3]
    n3.step(1, m.VoteRequest(candidate_epoch=1, candidate_id=1, last_offset_epoch=0, last_offset=0,
                             correlation_id=7))
    rd = n3.ready()
    assert rd.persist_state == QuorumState(leader_id=-1, leader_epoch=1, voted_id=1)
    [(dest, resp)] = rd.messages
    assert dest == 1 and resp.vote_granted and resp.leader_epoch == 1
    with pytest.raises(RuntimeError):
        n3.ready()  # one Ready at a time: advance first


def test_vote_granted_at_most_once_per_epoch_even_across_a_restart():
    c = Cluster([1, 2, 3])
    ask = lambda cand, corr: m.VoteRequest(candidate_epoch=1, candidate_id=cand, last_offset_epoch=0,
                                           last_offset=0, correlation_id=corr)
    c.nodes[3].step(1, ask(1, 1))
    c.flush(3)
    c.nodes[3].step(2, ask(2, 2))
    c.flush(3)
    c.crash(3)
    c.start(3)                      # comes back from disk
    c.nodes[3].step(2, ask(2, 3))
    c.nodes[3].step(1, ask(1, 4))   # the same candidate again: still yes
    c.flush(3)
    answers = [(dst, msg.vote_granted) for src, dst, msg in c.net if src == 3]
    assert answers == [(1, True), (2, False), (2, False), (1, True)]


def test_crash_before_persisting_loses_the_vote_and_its_reply_together():
    c = Cluster([1, 2, 3])
    c.nodes[3].step(1, m.VoteRequest(candidate_epoch=1, candidate_id=1, last_offset_epoch=0, last_offset=0))
    c.nodes[3].ready()              # taken, but the driver dies before persisting it
    c.crash(3)
    c.start(3)
    assert c.disks[3].quorum_state == QuorumState()
    c.nodes[3].step(2, m.VoteRequest(candidate_epoch=1, candidate_id=2, last_offset_epoch=0, last_offset=0))
    c.flush(3)
    assert [msg.vote_granted for _, _, msg in c.net] == [True]  # nobody ever heard the first vote


def test_vote_refused_to_a_candidate_with_a_less_complete_log():
    c = Cluster([1, 2, 3], disks={3: disk(2, [E(0, 1), E(1, 2)])})
    n3 = c.nodes[3]
    # shorter log in the same last epoch
    n3.step(1, m.VoteRequest(candidate_epoch=3, candidate_id=1, last_offset_epoch=2, last_offset=1))
    # longer log but an older last epoch: epochs compare first
    n3.step(2, m.VoteRequest(candidate_epoch=4, candidate_id=2, last_offset_epoch=1, last_offset=9))
    c.flush(3)
    assert [msg.vote_granted for _, _, msg in c.net] == [False, False]
    assert n3.epoch == 4 and n3.voted_id == -1


def test_follower_that_stops_hearing_from_the_leader_starts_an_election():
    c = Cluster([1, 2, 3])
    elect(c, 1)
    n2 = c.nodes[2]
    n2.tick(c.config.fetch_timeout_ms - 1)
    assert n2.role is Role.FOLLOWER
    n2.tick(1)
    assert (n2.role, n2.epoch, n2.voted_id) == (Role.CANDIDATE, 2, 2)


def test_restarted_leader_resigns_and_hands_over():
    c = Cluster([1, 2, 3])
    elect(c, 1)
    c.crash(1)
    n1 = c.start(1)
    assert (n1.role, n1.epoch) == (Role.RESIGNED, 1), "volatile leader state is gone: never lead again in epoch 1"
    assert n1.propose([b"x"]) == NotLeader(leader_id=1, leader_epoch=1)
    c.flush(1)
    ends = c.sent(m.EndQuorumEpochRequest, src=1)
    assert sorted(r.leader_epoch for r in ends) == [1, 1]
    c.settle(tick_ms=50)
    assert len(c.leaders()) == 1 and c.nodes[c.leaders()[0]].epoch >= 2


# ----------------------------------------------------------------------------- high watermark

def test_high_watermark_only_advances_over_the_leaders_own_epoch():
    """Raft's figure 8: a record of an older epoch that reaches a majority is not committed by
    counting replicas; it becomes committed only together with a record of the leader's epoch."""
    c = Cluster([1, 2, 3], config=RaftConfig(pre_vote=False, fetch_max_bytes=1),
                disks={1: disk(3, [E(0, 1, "a"), E(1, 1, "b")]),
                       2: disk(3, [E(0, 1, "a")]),
                       3: disk(3, [E(0, 1, "a")])})
    c.cut.add(3)
    leader = c.nodes[1]
    leader.tick(2000)
    c.flush()
    c.cut.discard(3)
    c.deliver()                      # VoteRequests (3 grants: its log is shorter)
    c.deliver()                      # VoteResponses
    assert (leader.role, leader.epoch) == (Role.LEADER, 4)
    c.cut.add(3)                     # from now on only node 2 replicates
    is_fetch_traffic = lambda s, d, msg: isinstance(msg, (m.BeginQuorumEpochRequest, m.FetchRequest, m.FetchResponse)) and 3 not in (s, d)
    c.deliver(is_fetch_traffic)      # BeginQuorumEpoch -> 2 follows, fetches offset 1
    c.deliver(is_fetch_traffic)      # leader answers with "b" (one record per fetch)
    c.deliver(is_fetch_traffic)      # 2 appended "b", fetches offset 2
    assert c.nodes[2].log.end_offset == 2
    c.deliver(is_fetch_traffic)      # leader learns 2 holds "b": a majority has it...
    assert leader.high_watermark == 0, "...but b is from epoch 1, not the leader's epoch 4"
    c.deliver(is_fetch_traffic)      # 2 gets the LeaderChange record of epoch 4
    c.deliver(is_fetch_traffic)      # and reports it
    assert leader.high_watermark == 3
    c.deliver(is_fetch_traffic)
    assert c.nodes[2].high_watermark == 3
    assert c.applied[2] == [b"a", b"b", leader.log.entry(2).payload]


def test_high_watermark_never_decreases_when_a_new_leader_starts():
    c = Cluster([1, 2, 3])
    elect(c, 1)
    c.nodes[1].propose([b"x"] * 5)
    c.settle()
    hw = c.nodes[2].high_watermark
    c.crash(1)
    elect(c, 2)
    assert c.nodes[2].high_watermark >= hw


# ----------------------------------------------------------------------------- divergence

def test_follower_truncates_on_diverging_epoch_and_converges():
    c = Cluster([1, 2, 3], disks={
        1: disk(3, [E(0, 1, "a"), E(1, 1, "b"), E(2, 3, "c")]),
        2: disk(3, [E(0, 1, "a"), E(1, 1, "b"), E(2, 2, "x"), E(3, 2, "y")]),
        3: disk(3, [E(0, 1, "a"), E(1, 1, "b"), E(2, 3, "c")])})
    elect(c, 1)
    n2 = c.nodes[2]
    assert any(rd.truncate_to == 2 for rd in c.readies[2]), "x, y of epoch 2 never reached a majority"
    assert payloads(n2) == payloads(c.nodes[1])
    assert [e.payload for e in c.disks[2].entries] == payloads(c.nodes[1])
    assert n2.high_watermark == c.nodes[1].high_watermark == 4


def test_leader_answers_fetches_with_diverging_epoch_or_snapshot():
    log = RaftLog(Snapshot(OffsetAndEpoch(3, 1), b"img"), [E(3, 1), E(4, 1), E(5, 4), E(6, 4), E(7, 6)])
    assert log.validate_fetch(8, 6) == (FetchValidation.VALID, None)
    assert log.validate_fetch(6, 4) == (FetchValidation.VALID, None)
    assert log.validate_fetch(6, 5) == (FetchValidation.DIVERGING, OffsetAndEpoch(7, 4))
    assert log.validate_fetch(9, 6) == (FetchValidation.DIVERGING, OffsetAndEpoch(8, 6))
    assert log.validate_fetch(6, 2) == (FetchValidation.DIVERGING, OffsetAndEpoch(5, 1))
    assert log.validate_fetch(2, 1) == (FetchValidation.SNAPSHOT, OffsetAndEpoch(3, 1))
    assert log.validate_fetch(3, 0) == (FetchValidation.SNAPSHOT, OffsetAndEpoch(3, 1))
    assert log.validate_fetch(3, 1) == (FetchValidation.VALID, None)
    follower = RaftLog(None, [E(0, 1), E(1, 1), E(2, 1), E(3, 1), E(4, 1), E(5, 2), E(6, 2)])
    assert follower.truncation_point(OffsetAndEpoch(5, 1)) == 5
    assert follower.truncation_point(OffsetAndEpoch(7, 4)) == 7
    follower.truncate_to(5)
    assert (follower.end_offset, follower.last_epoch) == (5, 1)


# ----------------------------------------------------------------------------- check quorum

def test_leader_stays_while_a_majority_fetches():
    c = Cluster([1, 2, 3])
    elect(c, 1)
    c.settle(rounds=200, tick_ms=100)   # 20 s of steady fetching
    assert c.leaders() == [1] and c.nodes[1].epoch == 1


def test_leader_resigns_when_a_majority_stops_fetching():
    c = Cluster([1, 2, 3])
    elect(c, 1)
    leader = c.nodes[1]
    c.net.clear()                       # the followers' fetches never arrive again
    leader.tick(c.config.check_quorum_timeout_ms - 1)
    assert leader.role is Role.LEADER
    leader.tick(1)
    assert leader.role is Role.RESIGNED
    c.flush(1)
    [end] = c.sent(m.EndQuorumEpochRequest, src=1)[:1]
    assert end.leader_epoch == 1 and set(end.preferred_successors) == {2, 3}
    c.settle(tick_ms=50)
    [new] = c.leaders()
    assert new in (2, 3) and c.nodes[new].epoch == 2


# ----------------------------------------------------------------------------- pre-vote

def _isolate_and_rejoin(pre_vote: bool) -> Cluster:
    c = Cluster([1, 2, 3], config=RaftConfig(pre_vote=pre_vote))
    elect(c, 1)
    c.cut.add(3)
    c.settle(rounds=40, tick_ms=100)   # 1 and 2 carry on; 3 hears nothing for 4 s
    c.cut.discard(3)
    c.settle(rounds=40, tick_ms=100)   # 3 is back: its next (pre-)vote round reaches everyone
    return c


def test_pre_vote_keeps_a_rejoining_node_from_disrupting_the_leader():
    c = _isolate_and_rejoin(pre_vote=True)
    assert c.nodes[1].role is Role.LEADER and c.nodes[1].epoch == 1
    assert c.nodes[3].epoch == 1, "a prospective never bumps the epoch"
    assert (c.nodes[3].role, c.nodes[3].leader_id) == (Role.FOLLOWER, 1)
    assert c.nodes[3].stats["pre_vote_rounds"] >= 1


def test_without_pre_vote_the_rejoining_node_forces_a_new_epoch():
    c = _isolate_and_rejoin(pre_vote=False)
    assert c.nodes[1].role is not Role.LEADER
    assert c.nodes[1].epoch > 1


def test_pre_vote_is_granted_when_the_leader_is_gone():
    c = Cluster([1, 2, 3], config=RaftConfig(pre_vote=True))
    elect(c, 1)
    c.crash(1)
    c.net.clear()
    c.settle(rounds=100, tick_ms=100)
    [new] = c.leaders()
    assert new in (2, 3) and c.nodes[new].epoch >= 2   # lock-step ticks may split the first vote


# ----------------------------------------------------------------------------- snapshots

def test_far_behind_follower_catches_up_from_a_chunked_snapshot():
    cfg = RaftConfig(pre_vote=False, snapshot_chunk_bytes=64, fetch_max_bytes=100, request_timeout_ms=1000)
    c = Cluster([1, 2, 3], config=cfg)
    elect(c, 1)
    leader = c.nodes[1]
    c.cut.add(3)
    for i in range(20):
        leader.propose([f"record-{i}".encode()])
        c.settle()
    image = b"IMAGE" * 50
    snap = leader.create_snapshot(leader.applied_offset, image)
    c.flush()
    assert c.disks[1].snapshot == snap and c.disks[1].start == snap.snapshot_id.end_offset
    leader.propose([b"after-snapshot"])
    c.settle()
    c.cut.discard(3)
    c.nodes[3].tick(cfg.request_timeout_ms)      # its lost fetch times out; it asks again
    c.settle()
    n3 = c.nodes[3]
    assert n3.stats["snapshots_installed"] == 1
    assert c.disks[3].snapshot.data == image and c.disks[3].snapshot.snapshot_id == snap.snapshot_id
    assert c.applied[3][0] == ("snapshot", snap.snapshot_id)
    assert c.applied[3][-1] == b"after-snapshot"
    assert n3.log.start_offset == snap.snapshot_id.end_offset
    assert n3.high_watermark == leader.high_watermark == leader.log.end_offset
    assert any(rd.reset_log_to == snap.snapshot_id.end_offset for rd in c.readies[3])


def test_snapshot_must_not_pass_what_was_applied():
    c = Cluster([1])
    c.tick(2000)
    n = c.nodes[1]
    n.propose([b"a"])
    with pytest.raises(ValueError):
        n.create_snapshot(n.log.end_offset, b"too early")   # not yet committed and applied
    c.flush()
    snap = n.create_snapshot(n.applied_offset, b"ok")
    assert snap.snapshot_id == OffsetAndEpoch(2, 1)


def test_should_snapshot_hint_after_max_record_bytes():
    c = Cluster([1], config=RaftConfig(max_record_bytes_between_snapshots=200))
    c.tick(2000)
    n = c.nodes[1]
    n.propose([bytes(100), bytes(100)])
    c.flush()
    assert any(rd.should_snapshot for rd in c.readies[1])
    n.create_snapshot(n.applied_offset, b"img")
    n.propose([b"x"])
    c.flush()
    assert not c.readies[1][-1].should_snapshot


# ----------------------------------------------------------------------------- observers

def test_observer_finds_the_leader_and_never_campaigns():
    c = Cluster([1, 2, 3], observers=[4])
    elect(c, 1)
    c.nodes[1].propose([b"for-brokers"])
    c.tick(10, 4)
    c.settle()
    n4 = c.nodes[4]
    assert (n4.role, n4.leader_id) == (Role.FOLLOWER, 1)
    assert c.applied[4][-1] == b"for-brokers"
    c.crash(1)
    c.net.clear()
    n4.tick(60_000)
    assert n4.role is Role.UNATTACHED and n4.stats["elections_started"] == 0


# ----------------------------------------------------------------------------- hygiene

def test_core_modules_import_no_io_clock_or_global_randomness():
    banned = {"trio", "socket", "time", "random", "os", "asyncio"}
    # the driver side (trio loop, disk, network) is the only place allowed to do I/O
    io_modules = {"driver.py", "storage.py", "transport.py"}
    for path in Path(__file__).resolve().parents[2].joinpath("kbroker", "raft").glob("*.py"):
        if path.name in io_modules:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                node.body = []      # type-only imports never execute
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in banned, f"{path.name} imports {name}"


def test_node_requires_an_injected_random_instance():
    with pytest.raises(ValueError):
        RaftNode(1, [1], StorageView(), RaftConfig(), None)
    a = RaftNode(1, [1, 2, 3], StorageView(), RaftConfig(), random.Random(5))
    b = RaftNode(1, [1, 2, 3], StorageView(), RaftConfig(), random.Random(5))
    assert a.time_until_next_timer() == b.time_until_next_timer()


def test_statistics_report_sizes_and_counts():
    c = Cluster([1, 2, 3])
    elect(c, 1)
    s = c.nodes[1].statistics()
    for key in ("role", "epoch", "leader_id", "high_watermark", "log_start_offset", "log_end_offset",
                "follower_lag", "elections_started", "messages_in", "messages_out"):
        assert key in s
    assert s["role"] == "leader" and s["follower_lag"] == {2: 0, 3: 0}


def test_restart_after_a_torn_snapshot_install_starts_from_the_snapshot():
    """Crash after the fetched snapshot was written but before the old log was reset: the old
    records do not continue the snapshot, so the node drops them and tells the driver."""
    snap = Snapshot(OffsetAndEpoch(3, 5), b"img")
    old_log = [E(0, 1), E(1, 1), E(2, 1), E(3, 2), E(4, 2)]
    n = RaftNode(1, [1, 2, 3], StorageView(QuorumState(leader_epoch=5), snap, old_log), RaftConfig(),
                 random.Random(0))
    assert (n.log.start_offset, n.log.end_offset, n.log.last_epoch) == (3, 3, 5)
    rd = n.ready()
    assert rd.reset_log_to == 3 and rd.apply_snapshot == snap


def test_restart_with_the_whole_old_log_below_a_torn_snapshot_install_resets_it():
    """The same crash when every old record lies below the snapshot's end (dynamic soak seed
    2437): the stored log ends at 2, the snapshot at 5; appending at 5 would leave a gap, so
    the driver is told to reset the log first."""
    snap = Snapshot(OffsetAndEpoch(5, 5), b"img")
    n = RaftNode(1, [1, 2, 3], StorageView(QuorumState(leader_epoch=5), snap, [E(0, 1), E(1, 1)]),
                 RaftConfig(), random.Random(0))
    assert (n.log.start_offset, n.log.end_offset) == (5, 5)
    assert n.ready().reset_log_to == 5
    # a stored log that ends right at the snapshot continues it: nothing to reset
    n = RaftNode(1, [1, 2, 3], StorageView(QuorumState(leader_epoch=5), Snapshot(OffsetAndEpoch(2, 1), b"img"),
                                           [E(0, 1), E(1, 1)]), RaftConfig(), random.Random(0))
    assert n.ready().reset_log_to is None


def test_a_fetch_naming_an_older_high_watermark_is_answered_at_once():
    """KIP-1166 (Fetch v18): a caught-up fetcher is long-polled only when the high watermark
    it names is the leader's; one that names an older one (its previous answer was lost) gets
    the new one at once. Without the field the leader goes by what it last sent."""
    c = Cluster([1, 2, 3])
    elect(c, 1)
    c.settle()
    leader = c.nodes[1]
    end, hw = leader.log.end_offset, leader.high_watermark
    assert end == hw

    def fetch(high_watermark):
        leader.step(2, m.FetchRequest(replica_id=2, current_leader_epoch=leader.epoch, fetch_offset=end,
                                      last_fetched_epoch=leader.epoch, max_wait_ms=500, correlation_id=77,
                                      high_watermark=high_watermark))
        rd = leader.ready()
        leader.advance(rd)
        return [msg for dest, msg in rd.messages if dest == 2 and isinstance(msg, m.FetchResponse)]
    [answer] = fetch(hw - 1)
    assert answer.high_watermark == hw and answer.records == ()
    assert fetch(hw) == []                 # up to date: parked until data or the deadline
    assert fetch(None) == []               # no field: the leader sent it this high watermark
