"""Scripted traces of KIP-853 voter changes in the pure Raft core (the randomized
counterpart: the ``dynamic`` profile of tests/raft/sim.py).

The rules, as Kafka 4.3's leader applies them to AddRaftVoter/RemoveRaftVoter/UpdateRaftVoter:
only the leader changes the set, only with ``kraft.version`` 1, only once it has committed
a record of its own epoch, one change at a time, and a new voter only once it fetches and
has caught up; a leader that removes itself leads until the change commits, then resigns.
"""
from __future__ import annotations

from kbroker.raft import RaftConfig, Role
from kbroker.raft import messages as m
from kbroker.raft.control import KRAFT_VERSION, LEADER_CHANGE, VOTERS, Voter
from kbroker.raft.core import CATCHING_UP

from .harness import Cluster, depose_and_heal, elect

CFG = RaftConfig(pre_vote=True)


def grown_cluster() -> Cluster:
    """Node 1 formatted --standalone, 2 and 3 joining as observers."""
    c = Cluster([1], observers=[2, 3], config=CFG, dynamic=True)
    c.settle(tick_ms=50)
    assert c.leaders() == [1] and c.nodes[1].voters == {1}
    return c


def add(c: Cluster, vid: int) -> tuple[int, int]:
    res = c.nodes[c.leaders()[0]].add_voter(Voter(vid))
    c.settle(tick_ms=50)
    return res


def test_a_standalone_voter_grows_to_three_and_everyone_agrees():
    c = grown_cluster()
    assert c.nodes[2].role is Role.FOLLOWER and not c.nodes[2].is_voter   # observers fetch
    assert add(c, 2)[0] == m.NONE
    assert add(c, 3)[0] == m.NONE
    for n in c.nodes.values():
        assert n.voters == {1, 2, 3} and n.is_voter
        assert n.high_watermark == c.nodes[1].log.end_offset
    # the change records are control records of type 6 in every log; the first leader also
    # wrote the set it had only from the 0-0 checkpoint (with kraft.version), as Kafka does
    kinds = [e.control_type for e in c.nodes[3].log.entries(0, c.nodes[3].log.end_offset) if e.control]
    assert kinds == [LEADER_CHANGE, KRAFT_VERSION, VOTERS, VOTERS, VOTERS]


def test_change_rules_and_their_errors():
    c = grown_cluster()
    leader = c.nodes[1]
    assert c.nodes[2].add_voter(Voter(3)) == (m.NOT_LEADER_OR_FOLLOWER, -1)
    assert leader.add_voter(Voter(1)) == (m.DUPLICATE_VOTER, -1)
    assert leader.remove_voter(7) == (m.VOTER_NOT_FOUND, -1)
    assert leader.remove_voter(1, "AAAAAAAAAAAAAAAAAAAAAQ") == (m.VOTER_NOT_FOUND, -1)  # wrong directory
    assert leader.remove_voter(1) == (m.INVALID_REQUEST, -1)                           # the last voter
    assert leader.add_voter(Voter(9)) == (CATCHING_UP, -1)        # not fetching: not caught up
    err, _ = leader.add_voter(Voter(2))
    assert err == m.NONE
    # one change at a time: the first is not committed until node 2 fetched it
    assert leader.add_voter(Voter(3)) == (m.REQUEST_TIMED_OUT, -1)
    c.settle(tick_ms=50)
    assert leader.add_voter(Voter(3))[0] == m.NONE


def test_static_quorum_refuses_changes():
    c = Cluster([1, 2, 3], config=CFG)
    elect(c, 1)
    assert c.nodes[1].add_voter(Voter(4)) == (m.UNSUPPORTED_VERSION, -1)
    assert c.nodes[1].remove_voter(3) == (m.UNSUPPORTED_VERSION, -1)


def test_the_leader_removes_itself_then_resigns_and_the_rest_elect():
    c = grown_cluster()
    add(c, 2)
    add(c, 3)
    err, off = c.nodes[1].remove_voter(1)
    assert err == m.NONE
    for _ in range(60):
        c.settle(tick_ms=100)
    [new] = c.leaders()
    assert new in (2, 3)
    for n in c.nodes.values():
        assert n.voters == {2, 3}
    assert not c.nodes[1].is_voter and c.nodes[1].stats["resignations"] >= 1
    assert c.nodes[1].role is Role.FOLLOWER and c.nodes[1].leader_id == new   # an observer now
    assert c.nodes[new].propose([b"after"]) >= off


def test_an_uncommitted_change_is_undone_by_truncation():
    c = Cluster([1, 2, 3], observers=[4], config=CFG, dynamic=True)
    elect(c, 1)
    c.settle(tick_ms=50)
    c.cut.update({2, 3})               # the leader is alone: its change cannot commit
    err, off = c.nodes[1].add_voter(Voter(4))
    assert err == m.NONE and c.nodes[1].voters == {1, 2, 3, 4}
    new = depose_and_heal(c, 1)
    assert new in (2, 3)
    assert c.nodes[1].voters == {1, 2, 3}, "node 1 dropped its uncommitted VotersRecord"
    assert c.nodes[1].log.end_offset == c.nodes[new].log.end_offset


def test_a_removed_voter_with_a_stale_high_watermark_asks_pre_votes_first():
    """Soak seeds 1482/2780: node 3's log holds the change to {1} (it was removed) but its
    high watermark still sits in {1, 2, 3}, so it may campaign (it could hold the only
    winning log). Its latest set has one voter that is not itself: it must still ask for
    pre-votes (KIP-996) and never bump the epoch alone — earlier it went straight to
    candidate, and every Vote it sent raised an observer's epoch above the real leader's."""
    import random

    from kbroker.raft import RaftNode
    from kbroker.raft.control import voters_value
    from kbroker.raft.messages import Entry
    from kbroker.raft.state import StorageView

    from .sim import initial_snapshot

    entries = [Entry(0, 1, voters_value([Voter(1), Voter(2)]), control=True, control_type=VOTERS),
               Entry(1, 1, voters_value([Voter(1)]), control=True, control_type=VOTERS)]
    node = RaftNode(3, (), StorageView(snapshot=initial_snapshot([1, 2, 3]), entries=entries),
                    CFG, random.Random(7))
    assert node.voters == {1} and not node.is_voter
    epoch = node.epoch
    for _ in range(20):
        node.tick(500)
        assert node.role is not Role.CANDIDATE and node.epoch == epoch
        if node.has_ready():
            rd = node.ready()
            for dest, msg in rd.messages:
                if isinstance(msg, m.VoteRequest):
                    assert msg.pre_vote and dest == 1
            node.advance(rd)
    assert node.stats["pre_vote_rounds"] >= 1 and node.stats["elections_started"] == 0


def test_the_leader_knows_each_observers_directory_id():
    """KIP-853: replicas name their metadata log dir in Fetch (v17 ``ReplicaDirectoryId``);
    the leader reports it per observer (DescribeQuorum v2) and treats another directory
    behind the same id as a new replica that starts from nothing."""
    c = grown_cluster()
    c.nodes[2].directory_id = "AAAAAAAAAAAAAAAAAAAAAg"
    for _ in range(10):
        c.settle(tick_ms=100)
    leader = c.nodes[1]
    assert leader.replica_directory_ids().get(2) == "AAAAAAAAAAAAAAAAAAAAAg"
    assert 3 not in leader.replica_directory_ids()      # node 3 sends none
    assert leader.replica_states()[1][2][0] > 0
    leader.step(2, m.FetchRequest(replica_id=2, current_leader_epoch=leader.epoch, fetch_offset=0,
                                  last_fetched_epoch=0, directory_id="AAAAAAAAAAAAAAAAAAAAAw"))
    assert leader.replica_directory_ids()[2] == "AAAAAAAAAAAAAAAAAAAAAw"
    assert leader.replica_states()[1][2][0] == 0


def test_a_reformatted_voter_is_not_the_voter_that_was_added():
    """KIP-853's replica keys: node 3 comes back with an empty disk and a new directory id.
    It is no voter (it fetches as an observer and never campaigns), the leader does not count
    its fetches for the high watermark, and it refuses a vote meant for the old disk (Kafka's
    INVALID_VOTER_KEY) — an empty log would grant any candidate a vote and could elect one
    without committed records. Removing the old entry and adding the new one repairs it."""
    from kbroker.raft.control import decode_voters

    from .harness import identity
    c = Cluster([1, 2, 3], config=CFG, dynamic=True, identities=True)
    elect(c, 1)
    c.settle(tick_ms=50)
    assert c.nodes[1].propose([b"x"]) > 0
    c.settle(tick_ms=50)
    old_dir, new_dir = identity(3)[0], identity(33)[0]
    seat_before = c.nodes[1].replica_states()[0][3]      # (end offset, last fetch) of voter 3
    c.crash(3)
    from .sim import Disk
    c.disks[3] = Disk()
    c.directory_ids[3] = new_dir
    node3 = c.start(3)
    c.settle(tick_ms=50)
    assert node3.voters == {1, 2, 3} and not node3.is_voter and node3.role is Role.FOLLOWER
    leader = c.nodes[1]
    assert leader.replica_directory_ids()[3] == new_dir           # known as an observer
    voters, observers = leader.replica_states()
    assert voters[3] == seat_before                               # the voter entry is not fed by it
    assert observers[3][0] == leader.log.durable_end              # the new disk caught up as an observer
    # a vote meant for the old disk is refused
    node3.step(2, m.VoteRequest(candidate_epoch=node3.epoch + 1, candidate_id=2, last_offset_epoch=0,
                                last_offset=0, voter_id=3, voter_directory_id=old_dir))
    rd = node3.ready()
    node3.advance(rd)
    [answer] = [msg for _, msg in rd.messages if isinstance(msg, m.VoteResponse)]
    assert (answer.vote_granted, answer.error_code) == (False, m.INVALID_VOTER_KEY)
    c.net.clear()
    c.settle(tick_ms=50)
    # the operator's (or auto-join's) repair: remove (3, old), add (3, new)
    leader = c.nodes[c.leaders()[0]]
    assert leader.remove_voter(3, old_dir)[0] == m.NONE
    c.settle(tick_ms=50)
    assert leader.add_voter(Voter(3, new_dir, identity(3)[1]))[0] == m.NONE
    c.settle(tick_ms=50)
    assert node3.is_voter and node3.voter_infos[3].directory_id == new_dir
    assert decode_voters(leader.log.entry(leader.log.end_offset - 1).payload)[3].directory_id == new_dir
