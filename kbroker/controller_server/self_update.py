"""UpdateRaftVoter (key 82) sent by a voter about itself after it starts (KIP-853).

A voter of a dynamic quorum whose controller listener (or supported ``kraft.version``
range) differs from what the latest ``VotersRecord`` holds for its (id, directory id) asks
the leader to record the new endpoints, as Kafka 4.x's followers do once they follow a
leader: a node restarted on another host or port is then described with its new
endpoint by ``kafka-metadata-quorum describe --status/--replication``. Rules: only a
voter in the latest set with its own directory id, only while the entry differs, at most
one attempt per ``fetch timeout``; a follower sends the request to the leader (which
answers once the record is committed, and the new set reaches the follower by fetching),
a leader that restarted into leadership applies the same change to itself."""
from __future__ import annotations

import logging

import trio

from kbroker.raft.control import Voter, uuid_from_kafka
from kbroker.raft.state import Role
from kbroker.wire import messages

log = logging.getLogger("kbroker.raft")

UPDATE_RAFT_VOTER = 82


def desired_voter(quorum, current: Voter) -> Voter | None:
    """This node's entry as it should be (None: no controller listener to announce)."""
    from kbroker.storage import controller_listener
    lst = controller_listener(quorum.config)
    if lst is None:
        return None
    return Voter(current.voter_id, current.directory_id, ((lst[0], lst[1], lst[2]),), 0, 1)


def pending_update(quorum) -> Voter | None:
    """The Voter to send, or None when the recorded entry is already right."""
    node = quorum.driver.node
    if not node.dynamic or node.role not in (Role.FOLLOWER, Role.LEADER) or not node.is_voter:
        return None
    current = (node.voter_infos or {}).get(node.node_id)
    if current is None or node.directory_id is None or current.directory_id != node.directory_id:
        return None
    want = desired_voter(quorum, current)
    if want is None or want == current:
        return None
    return want


def request_for(quorum, voter: Voter):
    R = messages.UpdateRaftVoterRequest
    return R(cluster_id=quorum.cluster_id, current_leader_epoch=quorum.driver.node.epoch,
             voter_id=voter.voter_id, voter_directory_id=uuid_from_kafka(voter.directory_id),
             listeners=[R.Listener(name=n, host=h, port=p) for n, h, p in voter.endpoints],
             k_raft_version_feature=R.KRaftVersionFeature(min_supported_version=voter.kraft_min,
                                                          max_supported_version=voter.kraft_max))


async def run(quorum, period_s: float) -> None:
    """Forever: send UpdateRaftVoter to the leader while this voter's entry is stale."""
    while True:
        await trio.sleep(period_s)
        try:
            want = pending_update(quorum)
            if want is not None and quorum.driver.is_leader:
                code = await quorum.driver.change_voters("update_voter", want, timeout=10.0)
                log.info("voter %d (leader): endpoints %s recorded, error %d", want.voter_id,
                         list(want.endpoints), code)
                continue
            leader = quorum.leader_id
            addr = quorum.controller_endpoint(leader) if want is not None and leader >= 0 else None
            if addr is None:
                continue
            resp = await quorum.rpc.call_addr(addr, UPDATE_RAFT_VOTER, 0, request_for(quorum, want), 10.0)
            if resp is not None and resp.error_code:
                log.info("UpdateRaftVoter to leader %d answered error %d", leader, resp.error_code)
            elif resp is not None:
                log.info("voter %d: endpoints recorded as %s", want.voter_id, list(want.endpoints))
        except (OSError, ValueError) as exc:   # a bad config or an unreachable leader: next round
            log.debug("UpdateRaftVoter not sent: %r", exc)
