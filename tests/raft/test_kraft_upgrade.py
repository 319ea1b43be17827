"""Scripted traces of upgrading a static quorum to ``kraft.version`` 1 (KAFKA-16538, Kafka
4.3's ``LeaderState.maybeAppendUpgradedKRaftVersion``) in the pure Raft core.

The leader of a static quorum keeps in memory the voter set an upgrade would write: its own
entry at once, the others' once they send UpdateRaftVoter (``update_voter``). The upgrade
is refused, with Kafka's errors, unless every voter is known with its directory id and
supports level 1; it is one control batch (KRaftVersionRecord + VotersRecord), after which
the quorum is dynamic: same voters, voter changes allowed. Randomized counterpart: the
``upgrade`` profile of tests/raft/sim.py.
"""
from __future__ import annotations

from kbroker.raft import RaftConfig, Role
from kbroker.raft import messages as m
from kbroker.raft.control import KRAFT_VERSION, VOTERS, ZERO_UUID, Voter, decode_voters, snapshot_voters
from kbroker.raft.core import CATCHING_UP

from .harness import Cluster, depose_and_heal, elect, identity

CFG = RaftConfig(pre_vote=True)


def static_cluster(observers=()) -> Cluster:
    c = Cluster([1, 2, 3], observers=observers, config=CFG, identities=True)
    elect(c, 1)
    c.settle(tick_ms=50)
    assert c.nodes[1].high_watermark > c.nodes[1].epoch_start_offset
    return c


def told(c: Cluster, *ids: int) -> None:
    """Voters ``ids`` tell the leader about themselves (what UpdateRaftVoter carries)."""
    leader = c.nodes[c.leaders()[0]]
    for i in ids:
        assert leader.update_voter(c.nodes[i].local_voter()) == (m.NONE, -1)


def control_types(node) -> list[int]:
    return [e.control_type for e in node.log.entries(node.log.start_offset, node.log.end_offset) if e.control]


def test_the_leader_knows_only_itself_until_the_voters_tell_it():
    c = static_cluster()
    leader = c.nodes[1]
    assert leader.kraft_version == 0 and not leader.dynamic
    infos = leader.upgrade_voters
    assert infos[1] == Voter(1, identity(1)[0], identity(1)[1], 0, 1)
    assert infos[2] == Voter(2, ZERO_UUID, (), 0, 0) and infos[3] == Voter(3, ZERO_UUID, (), 0, 0)
    assert c.nodes[2].upgrade_voters is None                      # a follower keeps nothing
    r = leader.upgrade_kraft_version(leader.epoch, 1)
    assert (r.error_code, r.message, r.offset) == (
        m.INVALID_UPDATE_VERSION, "Invalid upgrade of kraft.version to KRAFT_VERSION_1 because not all "
                                  "of the voters support it", -1)
    told(c, 2)
    assert leader.upgrade_kraft_version(leader.epoch, 1).error_code == m.INVALID_UPDATE_VERSION
    told(c, 3)
    end = leader.log.end_offset
    assert leader.upgrade_kraft_version(leader.epoch, 1, validate_only=True).error_code == m.NONE
    assert leader.log.end_offset == end and leader.kraft_version == 0     # validate-only writes nothing


def test_upgrade_writes_one_control_batch_and_every_replica_becomes_dynamic():
    c = static_cluster(observers=[4])
    told(c, 2, 3)
    leader = c.nodes[1]
    r = leader.upgrade_kraft_version(leader.epoch, 1)
    assert r.error_code == m.NONE and r.offset == leader.log.end_offset - 1
    kv, voters = leader.log.entries(r.offset - 1, r.offset + 1)
    assert (kv.control_type, voters.control_type) == (KRAFT_VERSION, VOTERS)
    assert {v: (i.directory_id, i.endpoints) for v, i in decode_voters(voters.payload).items()} == \
        {i: identity(i) for i in (1, 2, 3)}
    c.settle(tick_ms=50)
    assert leader.high_watermark > r.offset
    for i, n in c.nodes.items():
        assert n.kraft_version == 1 and n.voters == {1, 2, 3}, i
        assert control_types(n)[-2:] == [KRAFT_VERSION, VOTERS]
    # a second request for the same level changes nothing (Kafka: a no-op)
    end = leader.log.end_offset
    assert leader.upgrade_kraft_version(leader.epoch, 1).error_code == m.NONE
    assert leader.log.end_offset == end
    # now a dynamic quorum: the observer can be added, and a voter removed
    assert leader.add_voter(Voter(4, identity(4)[0], identity(4)[1]))[0] == m.NONE
    c.settle(tick_ms=50)
    assert c.nodes[4].is_voter and all(n.voters == {1, 2, 3, 4} for n in c.nodes.values())
    assert leader.remove_voter(3, identity(3)[0])[0] == m.NONE
    c.settle(tick_ms=50)
    assert all(n.voters == {1, 2, 4} for n in c.nodes.values())


def test_refusals_as_kafka_answers_them():
    c = static_cluster()
    leader, follower = c.nodes[1], c.nodes[2]
    # only the leader, in its own epoch
    assert follower.upgrade_kraft_version(follower.epoch, 1).error_code == m.NOT_LEADER_OR_FOLLOWER
    assert leader.upgrade_kraft_version(leader.epoch - 1, 1).error_code == m.NOT_LEADER_OR_FOLLOWER
    assert leader.upgrade_kraft_version(leader.epoch + 1, 1).error_code == m.INVALID_UPDATE_VERSION
    assert leader.upgrade_kraft_version(leader.epoch, 0).error_code == m.NONE      # no change
    # UpdateRaftVoter at a static leader: the finalized level 0 must be in the range, the id known
    assert leader.update_voter(Voter(2, identity(2)[0], identity(2)[1], 1, 1)) == (m.INVALID_REQUEST, -1)
    assert leader.update_voter(Voter(7, identity(7)[0], identity(7)[1])) == (m.VOTER_NOT_FOUND, -1)
    assert follower.update_voter(follower.local_voter()) == (m.NOT_LEADER_OR_FOLLOWER, -1)
    # a voter that says it supports only level 0 blocks the upgrade
    assert leader.update_voter(Voter(2, identity(2)[0], identity(2)[1], 0, 0)) == (m.NONE, -1)
    told(c, 3)
    assert leader.upgrade_kraft_version(leader.epoch, 1).error_code == m.INVALID_UPDATE_VERSION
    told(c, 2)
    # voter changes need kraft.version 1
    assert leader.add_voter(Voter(4)) == (m.UNSUPPORTED_VERSION, -1)
    assert leader.remove_voter(3) == (m.UNSUPPORTED_VERSION, -1)
    # after the upgrade is requested, UpdateRaftVoter waits for the new set to commit
    assert leader.upgrade_kraft_version(leader.epoch, 1).offset > 0
    assert leader.update_voter(c.nodes[2].local_voter()) == (m.REQUEST_TIMED_OUT, -1)
    c.settle(tick_ms=50)
    assert leader.update_voter(c.nodes[2].local_voter()) == (m.NONE, -1)          # same entry


def test_a_voter_without_a_directory_id_blocks_the_upgrade():
    """Kafka throws IllegalStateException ("Directory id must be known ...") and answers
    UNKNOWN_SERVER_ERROR; here the leader itself has no metadata directory id."""
    c = Cluster([1, 2, 3], config=CFG, identities=True)
    c.nodes[1].directory_id = None
    elect(c, 1)
    c.settle(tick_ms=50)
    told(c, 2, 3)
    r = c.nodes[1].upgrade_kraft_version(c.nodes[1].epoch, 1)
    assert (r.error_code, r.offset) == (m.UNKNOWN_SERVER_ERROR, -1)
    assert "Directory id must be known" in r.message


def test_a_new_leader_starts_from_nothing():
    """The voters' entries live in the leader's memory only: after an election the new
    leader knows only itself until the others tell it again."""
    c = static_cluster()
    told(c, 2, 3)
    c.nodes[1].resign()
    c.flush()
    for _ in range(40):
        c.settle(tick_ms=100)
        if c.leaders() and c.leaders()[0] != 1:
            break
    [new] = c.leaders()
    c.settle(tick_ms=50)
    leader = c.nodes[new]
    assert [i for i, v in leader.upgrade_voters.items() if v.directory_id != ZERO_UUID] == [new]
    assert leader.upgrade_kraft_version(leader.epoch, 1).error_code == m.INVALID_UPDATE_VERSION


def test_an_uncommitted_upgrade_is_undone_by_truncation():
    c = static_cluster()
    told(c, 2, 3)
    c.cut.update({2, 3})               # the leader alone: its upgrade cannot commit
    r = c.nodes[1].upgrade_kraft_version(c.nodes[1].epoch, 1)
    assert r.error_code == m.NONE and c.nodes[1].dynamic
    new = depose_and_heal(c, 1)
    assert new in (2, 3)
    old = c.nodes[1]
    assert old.kraft_version == 0 and not old.dynamic, "node 1 dropped its uncommitted upgrade"
    assert KRAFT_VERSION not in control_types(old)
    assert old.log.end_offset == c.nodes[new].log.end_offset
    # the voters are static again: changes are refused until an upgrade commits
    assert c.nodes[new].add_voter(Voter(4))[0] in (m.UNSUPPORTED_VERSION, m.REQUEST_TIMED_OUT)


def test_a_restarted_replica_reads_the_upgrade_back_and_snapshots_carry_it():
    c = static_cluster()
    told(c, 2, 3)
    c.nodes[1].upgrade_kraft_version(c.nodes[1].epoch, 1)
    c.nodes[1].propose([b"after"])
    c.settle(tick_ms=50)
    n3 = c.nodes[3]
    snap = n3.create_snapshot(n3.applied_offset, b"image")
    assert set(snapshot_voters(snap.data)) == {1, 2, 3}
    c.flush()
    c.crash(3)
    restarted = c.start(3)
    assert restarted.kraft_version == 1 and restarted.voter_infos[3].directory_id == identity(3)[0]
    assert restarted.log.start_offset == snap.snapshot_id.end_offset     # the voters came from the snapshot
    c.settle(tick_ms=50)
    assert restarted.role is Role.FOLLOWER and restarted.leader_id == 1


def test_an_observer_is_not_caught_up_before_the_upgrade_commits():
    """The upgrade's VotersRecord is a voter change like any other: a second change waits."""
    c = static_cluster(observers=[4])
    told(c, 2, 3)
    leader = c.nodes[1]
    leader.upgrade_kraft_version(leader.epoch, 1)
    assert leader.add_voter(Voter(4)) == (m.REQUEST_TIMED_OUT, -1)
    c.settle(tick_ms=50)
    assert leader.add_voter(Voter(9)) == (CATCHING_UP, -1)


def test_the_upgrade_batch_is_replicated_and_committed_whole():
    """Kafka writes KRaftVersionRecord + VotersRecord as one control batch, so no replica ever
    holds (and no high watermark ever covers) one without the other: a leader's read never
    ends between them however small the fetch, and a follower drops a lone first half
    (soak seed 2873: a committed kraft.version 1 without its voter set)."""
    c = Cluster([1, 2, 3], config=RaftConfig(pre_vote=True, fetch_max_bytes=1), identities=True)
    elect(c, 1)
    c.settle(tick_ms=50)
    told(c, 2, 3)
    leader = c.nodes[1]
    r = leader.upgrade_kraft_version(leader.epoch, 1)
    kv = r.offset - 1
    assert [e.offset for e in leader.log.read(kv, leader.log.end_offset, 1)] == [kv, r.offset]
    assert leader.log.read(kv, r.offset, 1 << 20) == ()          # the partner not readable: nothing
    follower = c.nodes[2]
    c.settle(tick_ms=50)
    ends = {e for rd in c.readies[2] for e in [rd.log_end_offset]}
    assert kv + 1 not in ends, "a follower's log ended between the two records"
    assert follower.kraft_version == 1 and leader.high_watermark > r.offset
    # a response carrying only the first half (from a leader that split it) is not applied
    lone = c.nodes[3]
    before = lone.log.end_offset
    assert lone._inflight is not None and lone._inflight[1] == 1     # its long poll at the leader
    from kbroker.raft.messages import Entry
    lone.step(1, m.FetchResponse(error_code=m.NONE, high_watermark=leader.high_watermark,
                                 log_start_offset=0, current_leader=m.LeaderIdAndEpoch(1, leader.epoch),
                                 records=(Entry(before, leader.epoch, leader.log.entry(kv).payload, True,
                                                KRAFT_VERSION),), correlation_id=lone._inflight[0]))
    assert lone._inflight is None or lone._inflight[0] != 0            # the answer was taken
    assert lone.log.end_offset == before
