"""AddRaftVoter (key 80, v0–v1), RemoveRaftVoter (81, v0) and UpdateRaftVoter (82, v0):
KIP-853 voter changes of a dynamic metadata quorum, on the controller listener.

Only the Raft leader changes the voter set (``RaftDriver.change_voters`` → the pure core's
``add_voter``/``remove_voter``/``update_voter``), with Kafka 4.3's rules and errors:
NOT_LEADER_OR_FOLLOWER elsewhere, UNSUPPORTED_VERSION for a static quorum (``kraft.version``
0), REQUEST_TIMED_OUT while the leader has not committed its epoch's first record or an
earlier change is uncommitted (or the new voter does not catch up within ``TimeoutMs``),
DUPLICATE_VOTER / VOTER_NOT_FOUND for the voter key, INVALID_REQUEST when the new voter's
listeners lack the quorum's controller listener. AddRaftVoter answers once the
``VotersRecord`` is committed (v1 ``AckWhenCommitted=false``: once it is written). Used by
``kafka-metadata-quorum add-controller``/``remove-controller`` and ``kbroker cluster quorum``.
ACLs as Kafka's ControllerApis: ALTER on the cluster for Add/Remove, CLUSTER_ACTION for Update.
Not implemented: the leader's ApiVersions check of the new voter's ``kraft.version`` range.
"""
from __future__ import annotations

from kbroker.authz.acls import ALTER, CLUSTER_ACTION
from kbroker.raft.control import Voter, uuid_to_kafka
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

_MESSAGES = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "This node is not the leader of the metadata quorum.",
    ErrorCode.UNSUPPORTED_VERSION: "The cluster does not support changing voters: kraft.version is 0 "
                                   "(a static quorum of controller.quorum.voters).",
    ErrorCode.REQUEST_TIMED_OUT: "The leader has not committed its epoch yet, another voter change is "
                                 "pending, or the new voter has not caught up.",
    ErrorCode.DUPLICATE_VOTER: "The voter is already in the voter set.",
    ErrorCode.VOTER_NOT_FOUND: "The voter is not in the voter set.",
    ErrorCode.INVALID_REQUEST: "The request is not valid for this voter set.",
}


def _answer(cls, code: int, **extra):
    return cls(throttle_time_ms=0, error_code=code,
               error_message=_MESSAGES.get(code) if code else None, **extra)


def _cluster_mismatch(quorum, request) -> bool:
    cid = getattr(request, "cluster_id", None)
    return cid is not None and cid != quorum.cluster_id


def _voter(request, with_kraft: bool = False) -> Voter:
    eps = tuple((l.name, l.host, l.port) for l in request.listeners or ())
    lo, hi = 0, 1
    if with_kraft and request.k_raft_version_feature is not None:
        lo = request.k_raft_version_feature.min_supported_version
        hi = request.k_raft_version_feature.max_supported_version
    return Voter(request.voter_id, uuid_to_kafka(request.voter_directory_id), eps, lo, hi)


async def add_voter(quorum, request, version: int):
    R = messages.AddRaftVoterResponse
    if _cluster_mismatch(quorum, request):
        return _answer(R, ErrorCode.INCONSISTENT_CLUSTER_ID)
    if not quorum.driver.is_leader:
        return _answer(R, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    voter = _voter(request)
    if quorum.dynamic and not any(n.upper() == quorum.controller_listener_name for n, _, _ in voter.endpoints):
        return R(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                 error_message=f"The new voter has no {quorum.controller_listener_name} listener.")
    ack = getattr(request, "ack_when_committed", True) if version >= 1 else True
    code = await quorum.driver.change_voters("add_voter", voter, timeout=max(request.timeout_ms, 0) / 1000,
                                             ack_when_committed=ack)
    return _answer(R, code)


async def remove_voter(quorum, request, version: int):
    R = messages.RemoveRaftVoterResponse
    if _cluster_mismatch(quorum, request):
        return _answer(R, ErrorCode.INCONSISTENT_CLUSTER_ID)
    if not quorum.driver.is_leader:
        return _answer(R, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    code = await quorum.driver.change_voters("remove_voter", request.voter_id,
                                             uuid_to_kafka(request.voter_directory_id),
                                             timeout=quorum.driver.config.request_timeout_ms / 1000 * 5)
    return _answer(R, code)


async def update_voter(quorum, request, version: int):
    R = messages.UpdateRaftVoterResponse
    node = quorum.driver.node
    leader = R.CurrentLeader(leader_id=quorum.leader_id, leader_epoch=node.epoch, host="", port=-1)
    addr = quorum.controller_endpoint(quorum.leader_id) if quorum.leader_id >= 0 else None
    if addr is not None:
        leader.host, leader.port = addr
    if _cluster_mismatch(quorum, request):
        return R(throttle_time_ms=0, error_code=ErrorCode.INCONSISTENT_CLUSTER_ID, current_leader=leader)
    if not quorum.driver.is_leader:
        return R(throttle_time_ms=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, current_leader=leader)
    if request.current_leader_epoch != node.epoch:
        code = ErrorCode.FENCED_LEADER_EPOCH if request.current_leader_epoch < node.epoch \
            else ErrorCode.UNKNOWN_LEADER_EPOCH
        return R(throttle_time_ms=0, error_code=code, current_leader=leader)
    code = await quorum.driver.change_voters("update_voter", _voter(request, with_kraft=True),
                                             timeout=quorum.driver.config.request_timeout_ms / 1000 * 5)
    return R(throttle_time_ms=0, error_code=code, current_leader=leader)


@controller_api(80, versions=(0, 1), cluster_operation=ALTER)
async def handle_add(ctx, request):
    return await add_voter(ctx.broker.quorum, request, ctx.version)


@controller_api(81, versions=(0, 0), cluster_operation=ALTER)
async def handle_remove(ctx, request):
    return await remove_voter(ctx.broker.quorum, request, ctx.version)


@controller_api(82, versions=(0, 0), cluster_operation=CLUSTER_ACTION)
async def handle_update(ctx, request):
    return await update_voter(ctx.broker.quorum, request, ctx.version)
