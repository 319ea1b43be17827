"""What a controller tells the quorum's leader about itself (KIP-853), beside the Raft driver.

Three requests, as Kafka 4.3's ``KafkaRaftClient`` sends them from a follower, each at most
once per ``controller.quorum.fetch.timeout.ms`` (Kafka's update-voter period):

- **UpdateRaftVoter to every new leader of a static quorum** (``kraft.version`` 0): a voter
  that follows a leader it has not told yet sends its directory id, its controller endpoint
  and the ``kraft.version`` range it supports (0-1). The leader keeps them in memory only
  (``RaftNode.update_voter``): they are what an upgrade to ``kraft.version`` 1 writes
  (``kafka-features upgrade --feature kraft.version=1``, KAFKA-16538). Done for this leader
  once it answers NONE (or UNSUPPORTED_VERSION, as Kafka).
- **UpdateRaftVoter when a dynamic quorum's entry is stale**: a voter whose controller
  listener (or supported range) differs from what the latest ``VotersRecord`` holds for its
  (id, directory id) asks the leader to record the new one (a node restarted on another host
  or port is then described with its new endpoint). A leader that restarted into leadership
  applies the same change to itself.
- **Auto-join** (``controller.quorum.auto.join.enable``, Kafka's ``QuorumConfig.autoJoin``):
  a controller that fetches as an observer of a dynamic quorum adds itself with
  AddRaftVoter (``AckWhenCommitted`` false, as Kafka); if its id is in the voter set with
  another directory id (a controller whose disk was replaced), it first removes that entry
  with RemoveRaftVoter.

Failures (no leader known, an unreachable leader, an error answer) are retried next round.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import trio

from kbroker.raft.control import ZERO_UUID, Voter, uuid_from_kafka
from kbroker.raft.state import Role
from kbroker.wire import messages

log = logging.getLogger("kbroker.raft")

ADD_RAFT_VOTER, REMOVE_RAFT_VOTER, UPDATE_RAFT_VOTER = 80, 81, 82
UNSUPPORTED_VERSION = 35


def desired_voter(quorum, current: Voter) -> Voter | None:
    """This node's entry as it should be (None: no controller listener to announce)."""
    node = quorum.driver.node
    if not node.endpoints:
        return None
    return Voter(current.voter_id, current.directory_id, node.endpoints, 0, 1)


def pending_update(quorum) -> Voter | None:
    """Dynamic quorum: the Voter to send, or None when the recorded entry is already right."""
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


def static_update_due(quorum, told: tuple[int, int] | None) -> Voter | None:
    """Static quorum: this voter's entry for the leader it follows, unless already told."""
    node = quorum.driver.node
    if (node.dynamic or node.role is not Role.FOLLOWER or not node.is_voter or not node.endpoints
            or node.directory_id in (None, ZERO_UUID) or told == (node.epoch, node.leader_id)):
        return None
    return node.local_voter()


def auto_join_step(quorum) -> tuple[str, object] | None:
    """Auto-join: ``("remove", old Voter)`` or ``("add", this node's Voter)`` to ask the
    leader for, or None."""
    node = quorum.driver.node
    if (not quorum.config.get("controller.quorum.auto.join.enable") or not node.dynamic
            or node.role is not Role.FOLLOWER or node.is_voter or not node.endpoints
            or node.directory_id in (None, ZERO_UUID)):
        return None
    old = (node.voter_infos or {}).get(node.node_id)
    if old is not None:
        return "remove", old
    return "add", node.local_voter()


def request_for(quorum, voter: Voter):
    R = messages.UpdateRaftVoterRequest
    return R(cluster_id=quorum.cluster_id, current_leader_epoch=quorum.driver.node.epoch,
             voter_id=voter.voter_id, voter_directory_id=uuid_from_kafka(voter.directory_id),
             listeners=[R.Listener(name=n, host=h, port=p) for n, h, p in voter.endpoints],
             k_raft_version_feature=R.KRaftVersionFeature(min_supported_version=voter.kraft_min,
                                                          max_supported_version=voter.kraft_max))


def add_request(quorum, voter: Voter):
    R = messages.AddRaftVoterRequest
    return R(cluster_id=quorum.cluster_id, timeout_ms=quorum.driver.config.request_timeout_ms,
             voter_id=voter.voter_id, voter_directory_id=uuid_from_kafka(voter.directory_id),
             listeners=[R.Listener(name=n, host=h, port=p) for n, h, p in voter.endpoints],
             ack_when_committed=False)


def remove_request(quorum, voter: Voter):
    R = messages.RemoveRaftVoterRequest
    return R(cluster_id=quorum.cluster_id, voter_id=voter.voter_id,
             voter_directory_id=uuid_from_kafka(voter.directory_id))


@dataclass
class _State:
    """What the static-leader notice last told (kept between calls)."""
    told: tuple[int, int] | None = None    # (epoch, leader) of the static leader told last


async def _to_leader(quorum, api_key: int, version: int, body):
    leader = quorum.leader_id
    addr = quorum.controller_endpoint(leader) if leader >= 0 and leader != quorum.node_id else None
    if addr is None:
        return None
    return await quorum.rpc.call_addr(addr, api_key, version, body, 10.0)


async def run_round(quorum, state: _State) -> None:
    driver = quorum.driver
    voter = static_update_due(quorum, state.told)
    if voter is not None:
        epoch_leader = (driver.node.epoch, driver.node.leader_id)
        resp = await _to_leader(quorum, UPDATE_RAFT_VOTER, 0, request_for(quorum, voter))
        if resp is not None and resp.error_code in (0, UNSUPPORTED_VERSION):
            state.told = epoch_leader
            log.info("voter %d: told leader %d (epoch %d) its directory id and endpoints",
                     voter.voter_id, epoch_leader[1], epoch_leader[0])
        elif resp is not None:
            log.debug("UpdateRaftVoter to leader %d answered error %d", epoch_leader[1], resp.error_code)
        return
    want = pending_update(quorum)
    if want is not None:
        if driver.is_leader:
            code = await driver.change_voters("update_voter", want, timeout=10.0)
            log.info("voter %d (leader): endpoints %s recorded, error %d", want.voter_id,
                     list(want.endpoints), code)
            return
        resp = await _to_leader(quorum, UPDATE_RAFT_VOTER, 0, request_for(quorum, want))
        if resp is not None and resp.error_code:
            log.info("UpdateRaftVoter to leader %d answered error %d", quorum.leader_id, resp.error_code)
        elif resp is not None:
            log.info("voter %d: endpoints recorded as %s", want.voter_id, list(want.endpoints))
        return
    step = auto_join_step(quorum)
    if step is not None:
        kind, voter = step
        if kind == "remove":
            resp = await _to_leader(quorum, REMOVE_RAFT_VOTER, 0, remove_request(quorum, voter))
        else:
            resp = await _to_leader(quorum, ADD_RAFT_VOTER, 1, add_request(quorum, voter))
        if resp is not None:
            log.info("auto-join: %s voter %d (directory %s): error %d", kind, voter.voter_id,
                     voter.directory_id, resp.error_code)


async def run(quorum, period_s: float) -> None:
    """Forever, one round per ``period_s``."""
    state = _State()
    while True:
        await trio.sleep(period_s)
        try:
            await run_round(quorum, state)
        except (OSError, ValueError) as exc:   # a bad config or an unreachable leader: next round
            log.debug("self update not sent: %r", exc)
